/* test_req_alloc.c — request-lifetime objects from a free list
 * (router/http/req_alloc.c): zeroed on every allocation, disposed once
 * when their pool is cleared, kept for reuse up to the list's bound
 * (nothing kept under AddressSanitizer). */
#include <check.h>
#include <string.h>

#include "router/http/req_alloc.h"
#include "tests/unit/sy_check.h"

struct obj {
	char bytes[1900];
	int *disposed;
};

static void obj_dispose(void *p)
{
	struct obj *o = p;
	(*o->disposed)++;
}

START_TEST(test_zeroed_disposed_once_and_reused)
{
	struct rt_req_list list = {.size = sizeof(struct obj), .max = 1};
	h2o_mem_pool_t pool;
	int disposed = 0;
	h2o_mem_init_pool(&pool);
	struct obj *a = rt_req_alloc(&pool, &list, obj_dispose);
	struct obj *b = rt_req_alloc(&pool, &list, obj_dispose);
	ck_assert_ptr_ne(a, b);
	for (size_t i = 0; i < sizeof(a->bytes); i++)
		ck_assert_int_eq(a->bytes[i], 0);
	memset(a->bytes, 'x', sizeof(a->bytes));
	memset(b->bytes, 'y', sizeof(b->bytes));
	a->disposed = b->disposed = &disposed;
	h2o_mem_clear_pool(&pool);
	ck_assert_int_eq(disposed, 2);
#if defined(__SANITIZE_ADDRESS__)
	ck_assert_uint_eq(list.n, 0);
#else
	ck_assert_uint_eq(list.n, 1); /* one kept (max 1), the other freed */
#endif
	struct obj *c = rt_req_alloc(&pool, &list, NULL);
	ck_assert_uint_eq(list.n, 0);
	for (size_t i = 0; i < sizeof(c->bytes); i++)
		ck_assert_int_eq(c->bytes[i], 0);
	ck_assert_ptr_null(c->disposed);
	h2o_mem_clear_pool(&pool); /* no dispose callback: only returned */
	ck_assert_int_eq(disposed, 2);
	rt_req_alloc_drain(&list);
	ck_assert_uint_eq(list.n, 0);
	ck_assert_ptr_null(list.free);
}
END_TEST

START_TEST(test_max_zero_keeps_nothing)
{
	struct rt_req_list list = {.size = 64, .max = 0};
	h2o_mem_pool_t pool;
	h2o_mem_init_pool(&pool);
	for (int i = 0; i < 3; i++)
		(void)rt_req_alloc(&pool, &list, NULL);
	h2o_mem_clear_pool(&pool);
	ck_assert_uint_eq(list.n, 0);
	ck_assert_ptr_null(list.free);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("req_alloc");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_zeroed_disposed_once_and_reused);
	tcase_add_test(tc, test_max_zero_keeps_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
