/* test_torture.c — multi-process torture of the state plane.
 *
 * The parent is the single writer: at full speed it rewrites checksummed
 * load records and worker records, and replaces the arena blocks named by
 * the root words (alloc → fill with a checksummed pattern → publish →
 * retire the old one → reclaim, which poisons blocks before freeing them).
 * NREADERS forked readers attach, claim a slot and, for the configured
 * duration (meson option torture_seconds → SY_TORTURE_SECONDS), open a read
 * bracket, verify every block they obtain from a root, read every load and
 * worker record, then verify the same blocks again before leaving: a block
 * reclaimed under them would show poison or another serial. Any torn
 * record or damaged block makes the child exit non-zero with a message on
 * its pipe; on success it reports how much it read.
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
#define NROOTS 4
#define BLOCK 256

static const uint64_t GOLD = UINT64_C(0x9e3779b97f4a7c15);

static void block_fill(uint8_t *b, uint64_t serial)
{
	uint64_t h = serial * GOLD;
	memcpy(b, &serial, 8);
	memcpy(b + 8, &h, 8);
	for (unsigned j = 16; j < BLOCK; j++)
		b[j] = (uint8_t)(serial + j);
}

/* Returns the block's serial, or 0 when the block is damaged. */
static uint64_t block_check(const volatile uint8_t *vb)
{
	uint8_t b[BLOCK];
	for (unsigned j = 0; j < BLOCK; j++)
		b[j] = vb[j];
	uint64_t serial, h;
	memcpy(&serial, b, 8);
	memcpy(&h, b + 8, 8);
	if (serial == 0 || h != serial * GOLD)
		return 0;
	for (unsigned j = 16; j < BLOCK; j++)
		if (b[j] != (uint8_t)(serial + j))
			return 0;
	return serial;
}

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
	uint64_t brackets, blocks, loads, workers;
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
		const volatile uint8_t *blk[NROOTS];
		uint64_t serial[NROOTS];
		statebus_read_enter(r);
		for (unsigned i = 0; i < NROOTS; i++) {
			uint64_t off = statebus_root_get(r, i);
			blk[i] = statebus_ptr(r, off, BLOCK);
			if (blk[i] == NULL || (serial[i] = block_check(blk[i])) == 0) {
				snprintf(rep.msg, sizeof(rep.msg), "root %u: bad block at %llu", i,
					 (unsigned long long)off);
				goto out;
			}
			rep.blocks++;
		}
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
		/* Blocks obtained in this bracket are still intact: not reclaimed. */
		for (unsigned i = 0; i < NROOTS; i++) {
			if (block_check(blk[i]) != serial[i]) {
				snprintf(rep.msg, sizeof(rep.msg),
					 "use after reclaim: root %u block serial %llu changed", i,
					 (unsigned long long)serial[i]);
				goto out;
			}
		}
		statebus_read_leave(r);
		rep.brackets++;
	}
	rc = 0;
out:
	torture_report(fd, &rep, sizeof(rep), rc);
}

START_TEST(test_forked_readers_never_see_torn_records_or_reclaimed_blocks)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = {.max_workers = NWORKERS, .max_dp_ranks = NRANKS, .max_procs = 16,
				    .arena_block_size = BLOCK, .arena_block_count = 256};
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
	uint64_t serial = 1, cur[NROOTS];
	for (unsigned i = 0; i < NROOTS; i++) {
		ck_assert_int_eq(statebus_arena_alloc(w, &cur[i]), SY_OK);
		block_fill(statebus_ptr(w, cur[i], BLOCK), serial++);
		statebus_root_set(w, i, cur[i]);
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
	uint64_t iters = 0, retired = 0, freed = 0, enospc = 0;
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
		unsigned ri = x % NROOTS;
		uint64_t off;
		int rc = statebus_arena_alloc(w, &off);
		if (rc == SY_ENOSPC) {
			enospc++;
			freed += (uint64_t)statebus_reclaim(w);
			rc = statebus_arena_alloc(w, &off);
		}
		if (rc == SY_OK) {
			block_fill(statebus_ptr(w, off, BLOCK), serial++);
			statebus_root_set(w, ri, off);          /* publish new */
			ck_assert_int_eq(statebus_retire(w, cur[ri]), SY_OK); /* unpublished old */
			cur[ri] = off;
			retired++;
		}
		freed += (uint64_t)statebus_reclaim(w);
		x++;
		iters++;
	}
	uint64_t total_brackets = 0;
	for (int i = 0; i < NREADERS; i++) {
		struct report rep = {0};
		torture_collect(i, pids[i], fds[i], &rep, sizeof(rep), rep.msg);
		ck_assert_uint_gt(rep.brackets, 0);
		ck_assert_uint_gt(rep.blocks, 0);
		ck_assert_uint_gt(rep.loads, 0);
		ck_assert_uint_gt(rep.workers, 0);
		total_brackets += rep.brackets;
	}
	fprintf(stderr, "torture: %u s, %d readers, %llu brackets; writer %llu iterations, "
		"%llu retired, %llu reclaimed, %llu arena-full retries\n", secs, NREADERS,
		(unsigned long long)total_brackets, (unsigned long long)iters,
		(unsigned long long)retired, (unsigned long long)freed, (unsigned long long)enospc);
	ck_assert_uint_gt(retired, 1000);
	ck_assert_uint_gt(freed, 1000);
	sbt_destroy(w, path);
}
END_TEST

int main(void)
{
	return torture_run("torture", test_forked_readers_never_see_torn_records_or_reclaimed_blocks);
}
