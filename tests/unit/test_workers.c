/* test_workers.c — workers table: add/find/update/remove, generations on
 * reuse, table full, ID normalisation, and a writer killed mid-update. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

START_TEST(test_add_find_read_roundtrip_and_duplicate_is_eexist)
{
	char path[64];
	struct statebus_region *r = sbt_create_small(path, sizeof(path));
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://10.0.0.1:30001", 2);
	w.role = STATEBUS_WORKER_PREFILL;
	w.bootstrap_port = 8998;
	w.kv_block_size = 16;
	w.kv_port_base = 5557;
	snprintf(w.kv_endpoint_host, sizeof(w.kv_endpoint_host), "10.0.0.1");
	snprintf(w.kv_topic, sizeof(w.kv_topic), "kv");
	uint32_t slot, gen, s2, g2;
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
	ck_assert_int_eq(statebus_worker_add(r, &w, &s2, &g2), SY_EEXIST);
	ck_assert_uint_eq(s2, slot);
	ck_assert_uint_eq(g2, gen);
	struct statebus_worker out;
	ck_assert_int_eq(statebus_worker_read(r, slot, &out), SY_OK);
	ck_assert_str_eq(out.id, "http://10.0.0.1:30001");
	ck_assert_uint_eq(out.state, STATEBUS_WORKER_ACTIVE);
	ck_assert_uint_eq(out.role, STATEBUS_WORKER_PREFILL);
	ck_assert_uint_eq(out.bootstrap_port, 8998);
	ck_assert_uint_eq(out.dp_size, 2);
	ck_assert_str_eq(out.kv_topic, "kv");
	struct statebus_worker_head head;
	ck_assert_int_eq(statebus_worker_head_read(r, slot, &head), SY_OK);
	ck_assert_uint_eq(head.state, STATEBUS_WORKER_ACTIVE);
	ck_assert_uint_eq(head.generation, gen);
	ck_assert_uint_eq(head.dp_size, 2);
	ck_assert_int_eq(statebus_worker_head_read(r, 99, &head), SY_EINVAL);
	ck_assert_int_eq(statebus_worker_find(r, "http://10.0.0.1:30001", &s2, &g2), SY_OK);
	ck_assert_uint_eq(s2, slot);
	ck_assert_int_eq(statebus_worker_find(r, "http://nope:1", &s2, &g2), SY_ENOENT);
	ck_assert_int_eq(statebus_worker_set_health(r, slot, gen, false, 42, 3), SY_OK);
	ck_assert_int_eq(statebus_worker_read(r, slot, &out), SY_OK);
	ck_assert_uint_eq(out.healthy, 0);
	ck_assert_uint_eq(out.health_failures, 3);
	w.kv_rejected = STATEBUS_KV_BLOCK_SIZE_MISMATCH;
	ck_assert_int_eq(statebus_worker_update(r, slot, gen, &w), SY_OK);
	ck_assert_int_eq(statebus_worker_read(r, slot, &out), SY_OK);
	ck_assert_uint_eq(out.kv_rejected, STATEBUS_KV_BLOCK_SIZE_MISMATCH);
	ck_assert_int_eq(statebus_worker_update(r, slot, gen + 1, &w), SY_ENOENT);
	w.dp_size = 5; /* > max_dp_ranks 4 */
	ck_assert_int_eq(statebus_worker_update(r, slot, gen, &w), SY_EINVAL);
	ck_assert_int_eq(statebus_worker_read(r, 99, &out), SY_EINVAL);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_reused_slot_gets_new_generation_and_old_pick_is_invalid)
{
	char path[64];
	struct statebus_region *r = sbt_create_small(path, sizeof(path));
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://a:1", 1);
	uint32_t slot, gen, s2, g2;
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
	ck_assert(statebus_worker_valid(r, slot, gen));
	ck_assert_int_eq(statebus_worker_mark_removing(r, slot, gen), SY_OK);
	ck_assert(!statebus_worker_valid(r, slot, gen));
	ck_assert_int_eq(statebus_worker_remove(r, slot, gen), SY_OK);
	struct statebus_worker out;
	ck_assert_int_eq(statebus_worker_read(r, slot, &out), SY_ENOENT);
	struct statebus_worker_head head;
	ck_assert_int_eq(statebus_worker_head_read(r, slot, &head), SY_ENOENT);
	ck_assert_uint_eq(head.state, STATEBUS_WORKER_FREE);
	ck_assert_uint_eq(head.generation, out.generation);
	ck_assert_int_eq(statebus_worker_add(r, &w, &s2, &g2), SY_OK); /* same ID again */
	ck_assert_uint_eq(s2, slot);
	ck_assert_uint_ne(g2, gen);
	ck_assert(!statebus_worker_valid(r, slot, gen));
	ck_assert(statebus_worker_valid(r, s2, g2));
	ck_assert_int_eq(statebus_worker_remove(r, slot, gen), SY_ENOENT);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_workers_table_full_is_enospc)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small(); /* 8 workers */
	struct statebus_region *r = sbt_create(path, &p);
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	uint32_t slot, gen;
	for (int i = 0; i < 8; i++) {
		char id[32];
		snprintf(id, sizeof(id), "http://w%d:1", i);
		struct statebus_worker w = sbt_worker(id, 1);
		ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
	}
	struct statebus_worker w = sbt_worker("http://one-too-many:1", 1);
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_ENOSPC);
	struct statebus_worker bad = sbt_worker("", 1);
	ck_assert_int_eq(statebus_worker_add(r, &bad, &slot, &gen), SY_EINVAL);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_id_normalise_lowers_scheme_and_host_and_drops_trailing_slash)
{
	char out[64];
	ck_assert_int_eq(statebus_worker_id_normalise("HTTP://Host.Example:30001/", out, sizeof(out)), SY_OK);
	ck_assert_str_eq(out, "http://host.example:30001");
	ck_assert_int_eq(statebus_worker_id_normalise("http://H:1/Path/", out, sizeof(out)), SY_OK);
	ck_assert_str_eq(out, "http://h:1/Path");
	ck_assert_int_eq(statebus_worker_id_normalise("no-scheme", out, sizeof(out)), SY_EINVAL);
	ck_assert_int_eq(statebus_worker_id_normalise("http://long-host:1", out, 8), SY_ERANGE);
}
END_TEST

/* A writer process that dies between odd and even leaves a record that
 * readers report as SY_ESTALE, never valid; the next writer frees it. */
START_TEST(test_writer_killed_mid_update_leaves_no_valid_worker)
{
	char path[64];
	struct statebus_region *r = sbt_create_small(path, sizeof(path));
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	struct statebus_worker w = sbt_worker("http://a:1", 1);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(r, &w, &slot, &gen), SY_OK);
	statebus_writer_unlock(r);
	pid_t pid = fork();
	if (pid == 0) {
		struct statebus_region *c = NULL;
		if (statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &c, NULL, 0) != SY_OK ||
		    statebus_writer_lock(c, true) != SY_OK)
			_exit(1);
		struct sb_worker_rec *rec = sb_worker_at(c, slot);
		(void)sb_seq_write_begin(&rec->seq);
		memcpy(rec->w.id, "http://half-written", 19);
		raise(SIGKILL);
		_exit(2);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	struct statebus_worker out;
	ck_assert_int_eq(statebus_worker_read(r, slot, &out), SY_ESTALE);
	ck_assert_str_eq(out.id, "");
	struct statebus_worker_head head = {.state = 9};
	ck_assert_int_eq(statebus_worker_head_read(r, slot, &head), SY_ESTALE);
	ck_assert_uint_eq(head.state, 0);
	ck_assert_uint_eq(head.generation, 0);
	ck_assert(!statebus_worker_valid(r, slot, gen));
	uint32_t s2, g2;
	ck_assert_int_eq(statebus_worker_find(r, "http://a:1", &s2, &g2), SY_ENOENT);
	/* the next writer repairs: slot freed under a new generation */
	ck_assert_int_eq(statebus_writer_lock(r, true), SY_OK);
	ck_assert_int_eq(statebus_worker_read(r, slot, &out), SY_ENOENT);
	ck_assert(!statebus_worker_valid(r, slot, gen));
	ck_assert_int_eq(statebus_worker_add(r, &w, &s2, &g2), SY_OK);
	ck_assert_uint_gt(g2, gen + 1);
	sbt_destroy(r, path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workers");
	TCase *tc = tcase_create("workers");
	tcase_add_test(tc, test_add_find_read_roundtrip_and_duplicate_is_eexist);
	tcase_add_test(tc, test_reused_slot_gets_new_generation_and_old_pick_is_invalid);
	tcase_add_test(tc, test_workers_table_full_is_enospc);
	tcase_add_test(tc, test_id_normalise_lowers_scheme_and_host_and_drops_trailing_slash);
	tcase_add_test(tc, test_writer_killed_mid_update_leaves_no_valid_worker);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
