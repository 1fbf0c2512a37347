/* test_index_torture.c — multi-process torture of the radix index.
 *
 * The parent is the single writer. At full speed it stores, removes
 * (tagged and untagged) and clears chains in an index far too small for
 * them (512 nodes, 128 overflow records for 16 families × 8 chains × 16
 * blocks), so eviction, pruning, retirement and reclamation (which poisons
 * nodes) run all the time. NREADERS forked readers run
 * statebus_index_match() and statebus_index_path() continuously on the same
 * chains and check every result against the chains' checksummed shape:
 *
 * - hashes encode (family, chain, position) plus a checksum, and block
 *   0..3 of a chain are its family's shared prefix;
 * - each chain has a fixed owner set S(c) (a bit pattern of workers); the
 *   writer only ever stores chain c for workers in S(c) — so an owner
 *   outside S(c) past the shared prefix means a node read after it was
 *   reclaimed and reused, or a torn owner word;
 * - generations are fixed (must match), tiers ⊆ T(worker), ranks and depths
 *   within bounds, no (worker, rank) twice.
 *
 * The writer also checks the index's structural invariants (I2, I3, I5 of
 * index.c) periodically with white-box access.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "statebus/sb-int.h"
#include "torture.h"

#define NREADERS 2
#define NWORKERS 6
#define NRANKS 2
#define FAMILIES 16
#define CHAINS 8
#define LEN 16
#define PREFIX 4

static uint32_t check24(uint64_t x)
{
	x *= UINT64_C(0x9e3779b97f4a7c15);
	return (uint32_t)(x >> 40);
}

/* Block i of chain (f, c): the family prefix for i < PREFIX. */
static int64_t hash_of(uint32_t f, uint32_t c, uint32_t i)
{
	uint64_t id = i < PREFIX ? ((uint64_t)f << 16 | 0xff00u | i)
				 : ((uint64_t)f << 16 | (uint64_t)c << 8 | i);
	return (int64_t)(id << 24 | check24(id));
}

static void chain(uint32_t f, uint32_t c, int64_t *h)
{
	for (uint32_t i = 0; i < LEN; i++)
		h[i] = hash_of(f, c, i);
}

/* Owner set of a chain: a fixed non-empty pattern of workers. */
static uint32_t owners_of(uint32_t f, uint32_t c)
{
	uint32_t s = (check24((uint64_t)f * 131 + c) >> 3) & ((1u << NWORKERS) - 1);
	return s ? s : 1u << (c % NWORKERS);
}

static uint32_t family_owners(uint32_t f)
{
	uint32_t s = 0;
	for (uint32_t c = 0; c < CHAINS; c++)
		s |= owners_of(f, c);
	return s;
}

/* Tiers a worker may hold: even workers device only, odd device + host. */
static uint32_t tiers_of(uint32_t w)
{
	return (w & 1) ? (STATEBUS_TIER_DEVICE | STATEBUS_TIER_HOST) : STATEBUS_TIER_DEVICE;
}

struct report {
	uint64_t matches, entries, deepest;
	char msg[200];
};

static bool check_entries(const struct statebus_index_match *m, int k, uint32_t f, uint32_t c,
			  const uint32_t *gens, bool path, uint32_t blocks, char *msg, size_t cap)
{
	for (int i = 0; i < k; i++) {
		uint32_t w = m[i].worker;
		if (w >= NWORKERS || m[i].rank >= NRANKS || m[i].worker_gen != gens[w] ||
		    m[i].depth == 0 || m[i].depth > LEN || (path && m[i].depth != blocks) ||
		    m[i].tiers == 0 || (m[i].tiers & ~tiers_of(w)) != 0) {
			snprintf(msg, cap, "bad entry w%u r%u g%u d%u t%u (chain %u/%u)", w, m[i].rank,
				 m[i].worker_gen, m[i].depth, m[i].tiers, f, c);
			return false;
		}
		uint32_t allowed = m[i].depth > PREFIX ? owners_of(f, c) : family_owners(f);
		if ((allowed & (1u << w)) == 0) {
			snprintf(msg, cap, "owner w%u at depth %u of chain %u/%u outside its set %#x", w,
				 m[i].depth, f, c, allowed);
			return false;
		}
		for (int j = 0; j < i; j++)
			if (m[j].worker == w && m[j].rank == m[i].rank) {
				snprintf(msg, cap, "duplicate owner w%u r%u", w, m[i].rank);
				return false;
			}
	}
	return true;
}

static void __attribute__((noreturn)) reader_main(const char *path, uint64_t end, const uint32_t *gens, int fd)
{
	struct report rep = {0};
	struct statebus_region *r = NULL;
	int rc = 1;
	if (!torture_attach(path, &r)) {
		snprintf(rep.msg, sizeof(rep.msg), "attach/claim failed");
		goto out;
	}
	uint32_t x = (uint32_t)getpid();
	while (sy_mono_ns() < end) {
		x = x * 1103515245u + 12345u;
		uint32_t f = (x >> 8) % FAMILIES, c = (x >> 16) % CHAINS;
		int64_t h[LEN];
		chain(f, c, h);
		struct statebus_index_match m[NWORKERS * NRANKS];
		int k = statebus_index_match(r, h, LEN, m, NWORKERS * NRANKS);
		if (k < 0 || !check_entries(m, k, f, c, gens, false, 0, rep.msg, sizeof(rep.msg))) {
			if (k < 0)
				snprintf(rep.msg, sizeof(rep.msg), "match rc %d", k);
			goto out;
		}
		for (int i = 0; i < k; i++)
			if (m[i].depth > rep.deepest)
				rep.deepest = m[i].depth;
		rep.entries += (uint64_t)k;
		uint32_t blocks = 0;
		k = statebus_index_path(r, h, LEN, &blocks, m, NWORKERS * NRANKS);
		if (k < 0 || blocks > LEN ||
		    !check_entries(m, k, f, c, gens, true, blocks, rep.msg, sizeof(rep.msg))) {
			if (k < 0 || blocks > LEN)
				snprintf(rep.msg, sizeof(rep.msg), "path rc %d blocks %u", k, blocks);
			goto out;
		}
		rep.matches++;
	}
	rc = 0;
out:
	torture_report(fd, &rep, sizeof(rep), rc);
}

/* White-box structural check (writer lock held, no writer running). */
static void check_invariants(struct statebus_region *r)
{
	const struct statebus_hdr *hd = r->hdr;
	const struct sb_index_node *nodes = (const struct sb_index_node *)sb_table(r, SB_T_INODES);
	uint32_t live = 0, hw = hd->index.node_hw;
	uint32_t *children = calloc(hw + 1, sizeof(uint32_t));
	uint32_t *pos = calloc(hw + 1, sizeof(uint32_t));
	for (uint32_t i = 1; i <= hw; i++) {
		if (nodes[i].flags & SB_INODE_LIVE) {
			live++;
			ck_assert_uint_le(nodes[i].parent, hw);
			if (nodes[i].parent)
				children[nodes[i].parent]++;
		}
	}
	ck_assert_uint_eq(live, hd->index.nodes); /* I5 (live part) */
	uint32_t n = 0;
	for (uint32_t i = hd->index.lru_head; i != 0; i = nodes[i].lru_next) {
		ck_assert_uint_le(++n, live);
		pos[i] = n;
	}
	ck_assert_uint_eq(n, live);
	for (uint32_t i = 1; i <= hw; i++) {
		if ((nodes[i].flags & SB_INODE_LIVE) == 0)
			continue;
		ck_assert_uint_eq(children[i], nodes[i].nchildren);                 /* I2 */
		if (nodes[i].parent)
			ck_assert_uint_lt(pos[i], pos[nodes[i].parent]);             /* I3 */
		ck_assert_uint_eq(nodes[i].seq & 1u, 0);
	}
	free(children);
	free(pos);
}

START_TEST(test_forked_readers_match_while_writer_stores_removes_evicts)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = {.max_workers = NWORKERS, .max_dp_ranks = NRANKS, .max_procs = 16,
				    .index_nodes = 512, .index_overflow = 128};
	struct statebus_region *w = sbt_create(path, &p);
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	uint32_t gens[NWORKERS];
	for (uint32_t i = 0; i < NWORKERS; i++) {
		char id[32];
		snprintf(id, sizeof(id), "http://w%u:1", i);
		struct statebus_worker wk = sbt_worker(id, NRANKS);
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
			reader_main(path, end, gens, wfd);
	}
	uint64_t ops = 0, blocks = 0;
	uint32_t x = 7;
	while (sy_mono_ns() < end + 50000000u) {
		x = x * 1103515245u + 12345u;
		uint32_t f = (x >> 8) % FAMILIES, c = (x >> 12) % CHAINS, rk = (x >> 20) & 1;
		uint32_t set = owners_of(f, c), wi = (x >> 24) % NWORKERS;
		while ((set & (1u << wi)) == 0)
			wi = (wi + 1) % NWORKERS;
		int64_t h[LEN];
		chain(f, c, h);
		uint32_t op = (x >> 28) & 15, len = 1 + (x >> 4) % LEN;
		int rc;
		if (op < 9) { /* store a prefix, whole or as parent + tail */
			uint32_t t = (op & 1) ? tiers_of(wi) : STATEBUS_TIER_DEVICE;
			if (len > 2 && (op & 2))
				rc = statebus_index_store(w, wi, rk, true, h[len / 2 - 1], &h[len / 2],
							  len - len / 2, t, ops);
			else
				rc = statebus_index_store(w, wi, rk, false, 0, h, len, t, ops);
			ck_assert_msg(rc == SY_OK || rc == SY_ENOSPC, "store rc %d", rc);
			blocks += len;
		} else if (op < 12) { /* tagged remove of a suffix */
			rc = statebus_index_remove(w, wi, rk, &h[len - 1], LEN - len + 1,
						   STATEBUS_TIER_DEVICE);
			ck_assert_int_eq(rc, SY_OK);
		} else if (op < 15) { /* untagged remove */
			rc = statebus_index_remove(w, wi, rk, &h[len - 1], 1, STATEBUS_TIER_ALL);
			ck_assert_int_eq(rc, SY_OK);
		} else if ((x & 0xff) == 0) {
			ck_assert_int_eq(statebus_index_clear_rank(w, wi, rk), SY_OK);
		}
		if ((++ops & 4095) == 0)
			check_invariants(w);
	}
	check_invariants(w);
	uint64_t total = 0, entries = 0, deepest = 0;
	for (int i = 0; i < NREADERS; i++) {
		struct report rep = {0};
		torture_collect(i, pids[i], fds[i], &rep, sizeof(rep), rep.msg);
		ck_assert_uint_gt(rep.matches, 0);
		total += rep.matches;
		entries += rep.entries;
		if (rep.deepest > deepest)
			deepest = rep.deepest;
	}
	struct statebus_index_stats s;
	statebus_index_stats(w, &s);
	fprintf(stderr, "index torture: %u s, %d readers, %llu matches (%llu owner entries, "
		"deepest %llu); writer %llu ops, %llu blocks stored, %llu evictions, %llu pruned, "
		"%llu dropped, nodes %u/%u, overflow %u/%u\n", secs, NREADERS,
		(unsigned long long)total, (unsigned long long)entries, (unsigned long long)deepest,
		(unsigned long long)ops, (unsigned long long)blocks, (unsigned long long)s.evictions,
		(unsigned long long)s.pruned, (unsigned long long)s.dropped, s.nodes, s.nodes_capacity,
		s.overflow_used, s.overflow_capacity);
	ck_assert_uint_gt(s.evictions, 1000);
	ck_assert_uint_gt(entries, 0);
	sbt_destroy(w, path);
}
END_TEST

int main(void)
{
	return torture_run("index_torture", test_forked_readers_match_while_writer_stores_removes_evicts);
}
