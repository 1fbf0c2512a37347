/* test_torture.c — multi-process torture of the seqlocked tables.
 *
 * The parent is the single writer: at full speed it rewrites load records
 * and worker records whose fields are all derived from one value, so a
 * copy mixing two writes is detectable. NREADERS forked readers attach,
 * claim a slot and, for the configured duration (meson option
 * torture_seconds → SY_TORTURE_SECONDS), read every load and worker record
 * inside a read bracket. Any torn record makes the child exit non-zero with
 * a message on its pipe; on success it reports how much it read. Deferred
 * reclamation under readers is tortured by test_index_torture.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "torture.h"

#define NREADERS 3
#define NWORKERS 4
#define NRANKS 4
static struct statebus_load_report load_for(uint32_t x)
{
	struct statebus_load_report a = {.flags = STATEBUS_LOAD_HAS_V3, .num_running_reqs = x,
		.num_waiting_reqs = x * 3 + 1, .num_tokens = x ^ 0x5a5a5a5au,
		.max_total_num_tokens = ~x, .num_waiting_uncached_tokens = x * 5,
		.num_total_tokens = x + 11, .max_running_requests = x | 1,
		.recv_mono_ns = (uint64_t)x * 7 + 1};
	return a;
}

static bool load_ok(const struct statebus_load_report *o)
{
	uint32_t x = o->num_running_reqs;
	return o->num_waiting_reqs == x * 3 + 1 && o->num_tokens == (x ^ 0x5a5a5a5au) &&
	       o->max_total_num_tokens == ~x && o->num_waiting_uncached_tokens == x * 5 &&
	       o->num_total_tokens == x + 11 && o->max_running_requests == (x | 1) &&
	       o->recv_mono_ns == (uint64_t)x * 7 + 1;
}

static void worker_for(struct statebus_worker *w, uint32_t x)
{
	snprintf(w->model, sizeof(w->model), "model-%u", x);
	w->health_failures = x;
	w->kv_block_size = x * 3 + 1;
	w->kv_port_base = (uint16_t)x;
	w->dp_size = NRANKS;
	snprintf(w->kv_topic, sizeof(w->kv_topic), "topic-%u", x);
}

static bool worker_ok(const struct statebus_worker *w)
{
	char want[64];
	uint32_t x = w->health_failures;
	snprintf(want, sizeof(want), "model-%u", x);
	if (strcmp(w->model, want) != 0 || w->kv_block_size != x * 3 + 1 ||
	    w->kv_port_base != (uint16_t)x || w->dp_size != NRANKS)
		return false;
	snprintf(want, sizeof(want), "topic-%u", x);
	return strcmp(w->kv_topic, want) == 0;
}

struct report {
	uint64_t brackets, loads, workers;
	char msg[200];
};

static void __attribute__((noreturn)) reader_main(const char *path, uint64_t end, int fd)
{
	struct report rep = {0};
	struct statebus_region *r = NULL;
	int rc = 1;
	if (!torture_attach(path, &r)) {
		snprintf(rep.msg, sizeof(rep.msg), "attach/claim failed");
		goto out;
	}
	while (sy_mono_ns() < end) {
		statebus_read_enter(r);
		for (uint32_t w = 0; w < NWORKERS; w++) {
			struct statebus_worker wk;
			int wrc = statebus_worker_read(r, w, &wk);
			if (wrc == SY_OK) {
				if (!worker_ok(&wk)) {
					snprintf(rep.msg, sizeof(rep.msg), "torn worker %u", w);
					goto out;
				}
				rep.workers++;
			} else if (wrc != SY_ESTALE) {
				snprintf(rep.msg, sizeof(rep.msg), "worker %u: rc %d", w, wrc);
				goto out;
			}
			for (uint32_t k = 0; k < NRANKS; k++) {
				struct statebus_load_report lr;
				int lrc = statebus_load_read_rank(r, w, k, &lr);
				if (lrc == SY_OK) {
					if (!load_ok(&lr)) {
						snprintf(rep.msg, sizeof(rep.msg), "torn load %u/%u", w, k);
						goto out;
					}
					rep.loads++;
				} else if (lrc != SY_ESTALE && lrc != SY_ENOENT) {
					snprintf(rep.msg, sizeof(rep.msg), "load rc %d", lrc);
					goto out;
				}
			}
		}
		statebus_read_leave(r);
		rep.brackets++;
	}
	rc = 0;
out:
	torture_report(fd, &rep, sizeof(rep), rc);
}

START_TEST(test_forked_readers_never_see_torn_records)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = {.max_workers = NWORKERS, .max_dp_ranks = NRANKS, .max_procs = 16};
	struct statebus_region *w = sbt_create(path, &p);
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	uint32_t gens[NWORKERS];
	for (uint32_t i = 0; i < NWORKERS; i++) {
		char id[32];
		snprintf(id, sizeof(id), "http://w%u:1", i);
		struct statebus_worker wk = sbt_worker(id, NRANKS);
		worker_for(&wk, 1);
		uint32_t slot;
		ck_assert_int_eq(statebus_worker_add(w, &wk, &slot, &gens[i]), SY_OK);
		ck_assert_uint_eq(slot, i);
	}
	unsigned secs = torture_seconds();
	uint64_t end = sy_mono_ns() + (uint64_t)secs * 1000000000u;
	int fds[NREADERS];
	pid_t pids[NREADERS];
	for (int i = 0; i < NREADERS; i++) {
		int wfd = torture_fork(&pids[i], &fds[i]);
		if (wfd >= 0)
			reader_main(path, end, wfd);
	}
	uint64_t iters = 0;
	uint32_t x = 2;
	while (sy_mono_ns() < end + 50000000u) {
		uint32_t wi = x % NWORKERS;
		struct statebus_load_report lr = load_for(x);
		ck_assert_int_eq(statebus_load_write(w, wi, gens[wi], x % NRANKS, &lr), SY_OK);
		if ((x & 7) == 0) {
			struct statebus_worker wk = sbt_worker("ignored", NRANKS);
			worker_for(&wk, x);
			ck_assert_int_eq(statebus_worker_update(w, wi, gens[wi], &wk), SY_OK);
		}
		x++;
		iters++;
	}
	uint64_t total_brackets = 0;
	for (int i = 0; i < NREADERS; i++) {
		struct report rep = {0};
		torture_collect(i, pids[i], fds[i], &rep, sizeof(rep), rep.msg);
		ck_assert_uint_gt(rep.brackets, 0);
		ck_assert_uint_gt(rep.loads, 0);
		ck_assert_uint_gt(rep.workers, 0);
		total_brackets += rep.brackets;
	}
	fprintf(stderr, "torture: %u s, %d readers, %llu brackets; writer %llu iterations\n", secs,
		NREADERS, (unsigned long long)total_brackets, (unsigned long long)iters);
	ck_assert_uint_gt(iters, 1000);
	sbt_destroy(w, path);
}
END_TEST

int main(void)
{
	return torture_run("torture", test_forked_readers_never_see_torn_records);
}
