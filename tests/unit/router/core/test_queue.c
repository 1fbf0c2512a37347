/* test_queue.c — the router queue's order (router/core/queue.h): strict
 * priority between classes, DRR between tenants, FIFO inside a tenant,
 * unpop puts a request back in place, bounded flows. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/core/queue.h"
#include "sy_check.h"

static struct router_queue q;
static struct router_queue_entry ents[2100];

static unsigned idx(struct router_queue_entry *e) { return (unsigned)(e - ents); }

static void push(unsigned i, unsigned cls, const char *tenant, unsigned weight)
{
	memset(&ents[i], 0, sizeof(ents[i]));
	router_queue_push(&q, &ents[i], cls, tenant, strlen(tenant), weight);
}

START_TEST(test_higher_class_pops_first_whatever_the_arrival)
{
	router_queue_init(&q);
	push(0, SY_QCLASS_BULK, "a", 1);
	push(1, SY_QCLASS_BULK, "a", 1);
	push(2, SY_QCLASS_INTERACTIVE, "a", 1);
	push(3, SY_QCLASS_SYSTEM, "b", 1);
	ck_assert_uint_eq(router_queue_depth(&q, SY_QCLASS_BULK), 2);
	unsigned want[] = {3, 2, 0, 1};
	for (unsigned k = 0; k < 4; k++) {
		struct router_queue_entry *e = router_queue_pop(&q);
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(idx(e), want[k]);
		router_queue_finish(&q, e);
	}
	ck_assert_ptr_null(router_queue_pop(&q));
	ck_assert_uint_eq(q.n_flows, 0);
	router_queue_free(&q);
}
END_TEST

START_TEST(test_equal_tenants_alternate_and_keep_fifo)
{
	router_queue_init(&q);
	for (unsigned i = 0; i < 10; i++)
		push(i, SY_QCLASS_DEFAULT, "a", 1); /* a floods first */
	for (unsigned i = 10; i < 15; i++)
		push(i, SY_QCLASS_DEFAULT, "b", 1);
	unsigned got[15];
	for (unsigned k = 0; k < 15; k++) {
		struct router_queue_entry *e = router_queue_pop(&q);
		got[k] = idx(e);
		router_queue_finish(&q, e);
	}
	/* a b a b ... while both wait, then a's rest, each tenant in order */
	unsigned want[] = {0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 6, 7, 8, 9};
	for (unsigned k = 0; k < 15; k++)
		ck_assert_uint_eq(got[k], want[k]);
	router_queue_free(&q);
}
END_TEST

START_TEST(test_weights_share_turns_in_proportion)
{
	router_queue_init(&q);
	for (unsigned i = 0; i < 300; i++)
		push(i, SY_QCLASS_DEFAULT, "heavy", 3);
	for (unsigned i = 300; i < 600; i++)
		push(i, SY_QCLASS_DEFAULT, "light", 1);
	unsigned heavy = 0;
	for (unsigned k = 0; k < 200; k++) {
		struct router_queue_entry *e = router_queue_pop(&q);
		heavy += idx(e) < 300;
		router_queue_finish(&q, e);
	}
	ck_assert_uint_eq(heavy, 150); /* 3 : 1 */
	router_queue_free(&q);
}
END_TEST

/* A pass that could not dispatch puts its entries back: the next pass sees
 * the same order, and the tenant keeps its turn. */
START_TEST(test_unpop_restores_the_order)
{
	router_queue_init(&q);
	push(0, SY_QCLASS_DEFAULT, "a", 1);
	push(1, SY_QCLASS_DEFAULT, "a", 1);
	push(2, SY_QCLASS_DEFAULT, "b", 1);
	struct router_queue_entry *p[3];
	for (unsigned k = 0; k < 3; k++)
		p[k] = router_queue_pop(&q);
	ck_assert_uint_eq(router_queue_depth(&q, 4), 0);
	for (int k = 2; k >= 0; k--)
		router_queue_unpop(&q, p[k]);
	ck_assert_uint_eq(router_queue_depth(&q, 4), 3);
	for (unsigned k = 0; k < 3; k++) {
		struct router_queue_entry *e = router_queue_pop(&q);
		ck_assert_ptr_eq(e, p[k]);
		router_queue_finish(&q, e);
	}
	router_queue_free(&q);
}
END_TEST

START_TEST(test_finish_takes_a_queued_entry_out_anywhere)
{
	router_queue_init(&q);
	push(0, SY_QCLASS_DEFAULT, "a", 1);
	push(1, SY_QCLASS_DEFAULT, "a", 1);
	push(2, SY_QCLASS_DEFAULT, "a", 1);
	router_queue_finish(&q, &ents[1]); /* middle: a timeout */
	router_queue_finish(&q, &ents[1]); /* idempotent */
	ck_assert_uint_eq(router_queue_depth(&q, SY_QCLASS_DEFAULT), 2);
	struct router_queue_entry *e = router_queue_pop(&q);
	ck_assert_uint_eq(idx(e), 0);
	router_queue_finish(&q, e);
	router_queue_finish(&q, &ents[2]);
	ck_assert_ptr_null(router_queue_pop(&q));
	ck_assert_uint_eq(q.n_flows, 0);
	router_queue_free(&q);
}
END_TEST

START_TEST(test_tenant_flood_shares_the_overflow_flow)
{
	router_queue_init(&q);
	char name[16];
	for (unsigned i = 0; i < ROUTER_QUEUE_FLOWS + 50; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		push(i, SY_QCLASS_BULK, name, 1);
	}
	ck_assert_uint_eq(q.n_flows, ROUTER_QUEUE_FLOWS);
	ck_assert_uint_eq(q.cls[SY_QCLASS_BULK].other.n_queued, 50);
	unsigned n = 0;
	struct router_queue_entry *e;
	while ((e = router_queue_pop(&q)) != NULL) {
		router_queue_finish(&q, e);
		n++;
	}
	ck_assert_uint_eq(n, ROUTER_QUEUE_FLOWS + 50);
	ck_assert_uint_eq(q.n_flows, 0);
	router_queue_free(&q);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("queue");
	TCase *tc = tcase_create("queue");
	tcase_add_test(tc, test_higher_class_pops_first_whatever_the_arrival);
	tcase_add_test(tc, test_equal_tenants_alternate_and_keep_fifo);
	tcase_add_test(tc, test_weights_share_turns_in_proportion);
	tcase_add_test(tc, test_unpop_restores_the_order);
	tcase_add_test(tc, test_finish_takes_a_queued_entry_out_anywhere);
	tcase_add_test(tc, test_tenant_flood_shares_the_overflow_flow);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
