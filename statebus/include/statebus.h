/* statebus.h — libstatebus: the shared-memory state plane (DESIGN.md §3).
 *
 * One region per host (default /dev/shm/switchyard) shared by one
 * switchyard-statebus (single writer of workers, load and index tables) and
 * N switchyard-router processes (lock-free readers, each writing only its
 * own in-flight row). Tools (syctl) attach through the same API.
 *
 * Conventions
 * - Errors are values: 0 (SY_OK) or a negative sy_err (common/errors.h).
 *   Functions taking `char *err, size_t errcap` also write a one-line
 *   human message there on failure (NUL-terminated when errcap > 0).
 * - Times are CLOCK_MONOTONIC nanoseconds (sy_mono_ns()) unless named wall.
 * - Slots are indices into fixed tables; a worker is named by (slot,
 *   generation) so that a reused slot is never mistaken for the old worker.
 * - Offsets are bytes from the region start; statebus_ptr() turns one into
 *   a pointer after a bounds check. A pointer into the region obtained inside
 *   a read bracket must not be used after statebus_read_leave().
 * - Writer functions (marked [writer]) require statebus_writer_lock() held
 *   by the calling handle; they BUG_ON otherwise. Writers across processes
 *   serialise on an OFD write lock on byte 0 of the region file (released by
 *   the kernel if the writer dies); threads of one process sharing a handle
 *   must serialise themselves (the statebus has one writer thread).
 * - Reader functions never block and never write shared memory except the
 *   caller's own proc slot and in-flight row.
 */
#ifndef SY_STATEBUS_H
#define SY_STATEBUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>
#include <urcu/system.h>

#include "common/errors.h"
#include "statebus-t.h"

/* ======================================================================== */
/* Region (region.c)                                                        */

/* Fills `p` with the defaults (STATEBUS_DEFAULT_*). */
void statebus_params_default(struct statebus_params *p);

/* Opens the region at `path` (≤ 255 bytes).
 * With STATEBUS_CREATE, a missing file is created exclusively (O_EXCL,
 * mode 0640, chgrp'd to params->group when given) and, like an
 * uninitialised one, initialised from `params` (NULL or zero fields =
 * defaults) under an exclusive flock, the magic being published last; an
 * existing region is attached and its capacities ignored (params->group is
 * still applied to a file the caller owns). With STATEBUS_ATTACH_ONLY the
 * file must exist and be initialised; STATEBUS_READ_ONLY attaches read-only.
 * Ownership (DESIGN §9 "Region ownership"): no symlink is followed at the
 * path, nor a symlinked directory on the way unless root owns the link; an
 * existing file must be a regular file with one link, not writable by
 * group or other, and owned by the effective uid — read-only: by the
 * caller, root or in one of the caller's groups, or any owner when the
 * caller is root. Otherwise SY_EPERM with a message naming the fix
 * (`syctl destroy`, chown, chmod); a refused file is never written.
 * Attaching validates magic, layout version, the
 * total size against the file size and every table's offset and size.
 * The region is mapped MAP_SHARED; it survives the exit of every process.
 * On success *out is a new handle (close with statebus_region_close()).
 * Errors: SY_EINVAL (bad arguments/params), SY_ERANGE (params over limits),
 * SY_EPERM (refused file or directory, or no permission to open it),
 * SY_ENOENT (absent, attach-only; or params->group does not exist), SY_EBUSY (exists but uninitialised,
 * attach-only), SY_EMALFORMED (corrupt header), SY_EVERSION (other layout
 * version: "region <path> has layout version X, this build knows Y; run
 * `syctl destroy`"), SY_EIO (system call failed), SY_ENOMEM. */
int statebus_region_open(const char *path, const struct statebus_params *params,
			 int flags, struct statebus_region **out, char *err, size_t errcap);

/* Releases the caller's proc slot (if claimed) and writer lock (if held),
 * unmaps and frees the handle. The region stays. NULL is a no-op. */
void statebus_region_close(struct statebus_region *r);

/* Unlinks the region file at `path` (syctl destroy). Processes that have it
 * mapped keep their mapping until they close it.
 * Errors: SY_ENOENT, SY_EIO. */
int statebus_region_destroy(const char *path);

/* Consistent-enough copy of the header fields (counters and epochs are read
 * individually, atomically). */
void statebus_region_info(const struct statebus_region *r, struct statebus_header_info *out);

/* Index incarnation: bumped whenever the index is emptied
 * (statebus_index_reset: a starting statebus whose surviving index fails
 * statebus_index_check, or the repair after a writer died mid-update).
 * Readers that cache index-derived state compare it.
 * statebus_region_bump_incarnation() returns the new value. */
uint64_t statebus_region_incarnation(const struct statebus_region *r);
uint64_t statebus_region_bump_incarnation(struct statebus_region *r); /* [writer] */

/* Streams incarnation: the index incarnation under which the statebus
 * wrote the cursors of the streams table (0 = none). A starting statebus
 * resumes streams from their cursors only while it equals the index
 * incarnation (the index those cursors describe is still there), and sets
 * it once it has decided. */
uint64_t statebus_streams_incarnation(const struct statebus_region *r);
void statebus_streams_set_incarnation(struct statebus_region *r, uint64_t inc); /* [writer] */

/* Overrides, for this handle only, the load freshness window (ns) used by
 * statebus_load_view() (default: the region's, 5 s). */
void statebus_region_set_fresh_ns(struct statebus_region *r, uint64_t fresh_ns);

/* Bounds-checked offset → pointer: returns base + off when [off, off+size)
 * lies inside the region, NULL otherwise (also for off == 0). */
void *statebus_ptr(const struct statebus_region *r, uint64_t off, uint64_t size);

/* Writer lock: OFD write lock on byte 0 of the region file. `wait` blocks
 * until acquired, else returns SY_EBUSY when another process holds it.
 * On acquisition, records left mid-write (odd seqlock) by a killed writer
 * are repaired: their contents are cleared and the seqlock made even.
 * Errors: SY_EBUSY, SY_EPERM (read-only handle), SY_EIO. */
int statebus_writer_lock(struct statebus_region *r, bool wait);
void statebus_writer_unlock(struct statebus_region *r);

/* Statebus liveness fields of the header (DESIGN §5 "Workers").
 * announce: records this process (pid, start time) and a first heartbeat;
 * heartbeat: refreshes the heartbeat time; withdraw: clears the pid (clean
 * exit). daemon_live: true when an announced pid is alive with the same
 * start time and the heartbeat is at most max_age_ns old at now_ns. */
void statebus_daemon_announce(struct statebus_region *r, uint64_t now_ns);
void statebus_daemon_heartbeat(struct statebus_region *r, uint64_t now_ns);
void statebus_daemon_withdraw(struct statebus_region *r);
bool statebus_daemon_live(const struct statebus_region *r, uint64_t now_ns, uint64_t max_age_ns);

/* Whether the statebus builds the radix index (statebus.index): set by the
 * statebus before it announces itself, kept after it exits (the index it
 * left is as it was); STATEBUS_INDEX_MODE_UNKNOWN until a statebus set it.
 * Routers skip predictions (statebus_predict_push) while it is OFF. */
void statebus_index_mode_set(struct statebus_region *r, enum statebus_index_mode mode);
enum statebus_index_mode statebus_index_mode(const struct statebus_region *r);

/* Counters block (STATEBUS_COUNTERS_MAX words). add is atomic from any
 * process; idx out of range is ignored / reads 0. */
void statebus_counter_add(struct statebus_region *r, unsigned idx, uint64_t delta);
uint64_t statebus_counter_get(const struct statebus_region *r, unsigned idx);

/* ======================================================================== */
/* Process slots and epochs (epoch.c)                                       */

/* Claims a free proc slot for this process and binds it to handle `r`
 * (pid, start time from /proc/self/stat field 22, role, idle epoch). The
 * slot index also names the process's in-flight row. One slot per handle.
 * Errors: SY_EEXIST (handle already has a slot; *slot set to it),
 * SY_ENOSPC (every slot taken — try statebus_procs_reap()), SY_EPERM
 * (read-only handle), SY_EIO. */
int statebus_proc_claim(struct statebus_region *r, enum statebus_proc_role role, uint32_t *slot);

/* Releases the handle's slot: zeroes its in-flight row, then frees it.
 * No-op without a slot. Must not be inside a read bracket. */
void statebus_proc_release(struct statebus_region *r);

/* The handle's slot, or -1. */
static inline int32_t statebus_proc_self(const struct statebus_region *r) { return r->self_slot; }

/* Copy of proc slot `slot`. Errors: SY_EINVAL (out of range). */
int statebus_proc_read(const struct statebus_region *r, uint32_t slot, struct statebus_proc_info *out);

/* Reaps slots whose process is gone (pid absent, or alive with another start
 * time): zeroes their in-flight row and epoch, then frees the slot, so a
 * crashed reader never blocks reclamation. [writer] (serialised reapers
 * never race each other). Returns the number of slots reaped (≥ 0). */
int statebus_procs_reap(struct statebus_region *r);

/* Slow path of statebus_read_enter() for a handle without a slot. */
void statebus_read_enter_unclaimed_(struct statebus_region *r);

/* Reader bracket. Enter publishes the current global epoch in the caller's
 * slot followed by a full barrier; leave publishes STATEBUS_EPOCH_IDLE with
 * release order. Index entries retired while a bracket is open are not
 * reclaimed until it closes. Brackets nest (only the outermost publishes).
 * Requires a claimed slot (BUG otherwise). Never blocks, never fails. */
static inline void statebus_read_enter(struct statebus_region *r)
{
	if (r->read_depth++ != 0)
		return;
	if (caa_unlikely(r->self_epoch == NULL)) {
		statebus_read_enter_unclaimed_(r);
		return;
	}
	/* xchg is a store with a full barrier: the epoch is visible before any
	 * read of the tables below (Dekker with the writer's retire/scan). */
	(void)uatomic_xchg(r->self_epoch, CMM_LOAD_SHARED(*r->global_epoch));
}

static inline void statebus_read_leave(struct statebus_region *r)
{
	if (--r->read_depth != 0)
		return;
	/* Release: every read of the bracket completes before idle shows. */
	__atomic_store_n(r->self_epoch, STATEBUS_EPOCH_IDLE, __ATOMIC_RELEASE);
}

/* ======================================================================== */
/* Workers (workers.c)                                                      */

/* Normalises a worker URL into its stable ID (DESIGN §3): lower-case scheme
 * and host, no trailing '/' — the same rule as sy_url_normalize() (common/url.h),
 * which it calls. Errors: SY_EINVAL (not an http(s) URL, reason as there), SY_ERANGE
 * (does not fit in cap bytes incl. NUL). */
int statebus_worker_id_normalise(const char *url, char *out, size_t cap);

/* Worker slots in this region (max_workers). */
uint32_t statebus_workers_capacity(const struct statebus_region *r);

/* Adds worker `w` (id must be non-empty and NUL-terminated; state and
 * generation are ignored; dp_size 0 is taken as 1) in a free slot whose
 * generation is bumped; the slot's load records are cleared. [writer]
 * *slot and *gen receive the slot and generation (also on SY_EEXIST, naming the
 * existing worker with that ID). Errors: SY_EINVAL (bad id/dp_size > max),
 * SY_EEXIST, SY_ENOSPC (table full). */
int statebus_worker_add(struct statebus_region *r, const struct statebus_worker *w,
			uint32_t *slot, uint32_t *gen);

/* Replaces the facts of worker (slot, gen) with those of `w` (id, state and
 * generation ignored). [writer] Errors: SY_EINVAL (range, dp_size),
 * SY_ENOENT (free slot or other generation). */
int statebus_worker_update(struct statebus_region *r, uint32_t slot, uint32_t gen,
			   const struct statebus_worker *w);

/* Health result of worker (slot, gen). [writer] Errors: as _update. */
int statebus_worker_set_health(struct statebus_region *r, uint32_t slot, uint32_t gen,
			       bool healthy, uint64_t checked_ns, uint32_t failures);

/* Marks worker (slot, gen) REMOVING (listed, no longer valid for picks).
 * [writer] Errors: as _update. */
int statebus_worker_mark_removing(struct statebus_region *r, uint32_t slot, uint32_t gen);

/* Frees the slot of worker (slot, gen) and clears its load records.
 * [writer] Errors: as _update. */
int statebus_worker_remove(struct statebus_region *r, uint32_t slot, uint32_t gen);

/* Consistent snapshot of slot `slot` (seqlock, bounded retries).
 * Errors: SY_EINVAL (range), SY_ENOENT (free slot; out->state FREE and
 * out->generation valid), SY_ESTALE (torn past the retry bound: out zeroed). */
int statebus_worker_read(const struct statebus_region *r, uint32_t slot, struct statebus_worker *out);

/* statebus_worker_read's consistent snapshot of slot `slot`, only the
 * head fields, with the same checks and errors (SY_ENOENT: state FREE and
 * generation valid; SY_ESTALE: out zeroed). */
int statebus_worker_head_read(const struct statebus_region *r, uint32_t slot,
			      struct statebus_worker_head *out);

/* Finds the worker with ID `id` (exact match on the normalised ID).
 * Errors: SY_ENOENT. */
int statebus_worker_find(const struct statebus_region *r, const char *id,
			 uint32_t *slot, uint32_t *gen);

/* True when slot `slot` holds an ACTIVE worker of generation `gen` (a pick
 * is validated with it before dispatch). */
bool statebus_worker_valid(const struct statebus_region *r, uint32_t slot, uint32_t gen);

/* ======================================================================== */
/* Load (load.c)                                                            */

/* Stores rank `rank`'s report for worker (slot, gen) in its 64-byte
 * seqlock record (odd → write → even). Copies flags, counts, throughput and
 * recv_mono_ns from `rep`; sets worker_gen = gen and dispatches_at_recv =
 * Σ in-flight dispatch counters of the worker now. [writer]
 * Errors: SY_EINVAL (slot/rank out of range, rank ≥ dp_size),
 * SY_ENOENT (free slot or other generation). */
int statebus_load_write(struct statebus_region *r, uint32_t slot, uint32_t gen, uint32_t rank,
			const struct statebus_load_report *rep);

/* Copies rank `rank`'s record of worker slot `slot`.
 * Errors: SY_EINVAL (range), SY_ENOENT (no report), SY_ESTALE (mid-write
 * past the retry bound: reads as unknown; out zeroed). */
int statebus_load_read_rank(const struct statebus_region *r, uint32_t slot, uint32_t rank,
			    struct statebus_load_report *out);

/* Aggregated view of worker slot `slot` at `now_ns` (sglang-wire.md §13):
 * fresh only if every expected rank (dp_size of the worker record) has a
 * report of the worker's current generation received within the freshness
 * window. Basic view = sums; captured_at = oldest rank's receive time;
 * native view only if V3 on every rank with max_total > 0 and
 * max_running > 0. Returns SY_OK with status FRESH; SY_ESTALE with status
 * UNKNOWN and a reason (missing, stale, torn); SY_ENOENT (free slot, reason
 * NO_WORKER); SY_EINVAL (range). Unknown views carry zero sums, which must
 * not be read as idle. */
int statebus_load_view(const struct statebus_region *r, uint32_t slot, uint64_t now_ns,
		       struct statebus_load_view *out);

/* Clears every rank record of worker slot `slot` (reads then SY_ENOENT).
 * [writer] Errors: SY_EINVAL. */
int statebus_load_clear_worker(struct statebus_region *r, uint32_t slot);

/* DP ranks per worker in this region (max_dp_ranks). */
uint32_t statebus_load_max_ranks(const struct statebus_region *r);

/* ======================================================================== */
/* KV-event streams (streams.c)                                             */

/* Stores the state of stream (worker slot, rank) in its seqlock record
 * (the caller keeps the authoritative copy; this publishes it). [writer]
 * Errors: SY_EINVAL (slot or rank out of range). */
int statebus_stream_write(struct statebus_region *r, uint32_t slot, uint32_t rank,
			  const struct statebus_stream *s);

/* Consistent copy of stream (slot, rank). Errors: SY_EINVAL (range),
 * SY_ENOENT (never written since the slot was cleared: worker_gen 0),
 * SY_ESTALE (mid-write past the retry bound; out zeroed). */
int statebus_stream_read(const struct statebus_region *r, uint32_t slot, uint32_t rank,
			 struct statebus_stream *out);

/* Clears every stream record of worker slot `slot` (worker removed, or a
 * restarting statebus). [writer] Errors: SY_EINVAL. */
int statebus_streams_clear_worker(struct statebus_region *r, uint32_t slot);

/* ======================================================================== */
/* In-flight rows (inflight.c)                                              */

/* The caller's process (proc slot `proc`, normally statebus_proc_self())
 * dispatches to / finishes with worker slot `worker`: atomic add on its own
 * row only (in_flight ±1; acquire also bumps the dispatch counter and stamps
 * last_dispatch_ns = now_ns). Never blocks. Errors: SY_EINVAL (range);
 * release of a zero count is SY_ERANGE and leaves it at zero. */
int statebus_inflight_acquire(struct statebus_region *r, uint32_t proc, uint32_t worker,
			      uint64_t now_ns);
int statebus_inflight_release(struct statebus_region *r, uint32_t proc, uint32_t worker);

/* Sums the process rows for worker slot `worker`: in-flight requests and
 * dispatch counter. Only the rows of slots ever claimed are read (the
 * header's high-water mark; the rest are zero), so the cost follows the
 * processes that ran, not max_procs. Either pointer may be NULL. Errors:
 * SY_EINVAL. */
int statebus_inflight_sum(const struct statebus_region *r, uint32_t worker,
			  int64_t *in_flight, uint64_t *dispatches);

/* Copy of one cell (proc, worker). Errors: SY_EINVAL. */
int statebus_inflight_read(const struct statebus_region *r, uint32_t proc, uint32_t worker,
			   struct statebus_inflight_info *out);

/* Zeroes every cell of row `proc` (reap, release) or column `worker`
 * (worker removal by the writer). Errors: SY_EINVAL. */
int statebus_inflight_zero_row(struct statebus_region *r, uint32_t proc);
int statebus_inflight_zero_worker(struct statebus_region *r, uint32_t worker);

/* ======================================================================== */
/* Health (health.c): passive health, stalls, circuit breakers              */
/*
 * One record per worker slot that every router process reads at pick time
 * and changes with single-word atomics (no lock, never blocks). The
 * statebus keeps owning the workers table and its `healthy` bit (active
 * probes); a router writes only the words below, with the rules of
 * health.c: a router marks down / stalled, the active prober (statebus, or
 * the router master without a statebus) clears a mark after a probe sent
 * after it succeeded; bytes from the worker clear a stall. Calls naming a
 * (slot, gen) that is not the record's current generation do nothing.
 */

/* Copy of slot `slot`'s record (words read one by one). SY_EINVAL. */
int statebus_health_read(const struct statebus_region *r, uint32_t slot, struct statebus_health *out);

/* Candidate filter of a pick at `now_ns`: down, stalled, breaker open or
 * probe out, or usable (OK, or PROBE: only as the breaker's half-open
 * probe). `cb_cool_down_ns` 0 = breakers off (their state is ignored). */
enum statebus_pick_health statebus_health_pick(const struct statebus_region *r, uint32_t slot,
					       uint32_t gen, uint64_t now_ns,
					       uint64_t cb_cool_down_ns);

/* Marks worker (slot, gen) passively down at now_ns for `reason`. Returns
 * true when this call set the mark (false: already down, or not that
 * generation). */
bool statebus_health_mark_down(struct statebus_region *r, uint32_t slot, uint32_t gen,
			       enum statebus_down_reason reason, uint64_t now_ns);

/* Marks worker (slot, gen) stalled at now_ns; true when this call set it. */
bool statebus_health_mark_stalled(struct statebus_region *r, uint32_t slot, uint32_t gen,
				  uint64_t now_ns);

/* A response byte from worker (slot, gen) arrived at now_ns: stores
 * last_byte_ns (at most every 1 ms) and clears a stall. */
void statebus_health_progress(struct statebus_region *r, uint32_t slot, uint32_t gen,
			      uint64_t now_ns);

/* An active probe of (slot, gen) sent at `sent_ns` succeeded at now_ns:
 * clears a down mark / stall set before sent_ns. Returns the
 * STATEBUS_HEALTH_CLEARED_* bits of what it cleared. [prober] */
unsigned statebus_health_probe_ok(struct statebus_region *r, uint32_t slot, uint32_t gen,
				  uint64_t sent_ns, uint64_t now_ns);

/* Takes the half-open probe of (slot, gen)'s breaker at now_ns: true when
 * the breaker is closed or this caller got the probe (then the request
 * must report), false when another process took it first. */
bool statebus_breaker_take_probe(struct statebus_region *r, uint32_t slot, uint32_t gen,
				 uint64_t now_ns, uint64_t cb_cool_down_ns);

/* Hands back the probe taken at `probe_ns` by a request that ended without
 * a result (cancelled): the next pick may probe at once. */
void statebus_breaker_release_probe(struct statebus_region *r, uint32_t slot, uint32_t gen,
				    uint64_t probe_ns);

/* Feeds one attempt's result to (slot, gen)'s breaker (reference/
 * policy-defaults.md §9): `threshold` consecutive failures open it
 * (0 = breakers off: nothing happens); failures while open are ignored; a
 * half-open failure re-opens it; a success closes it; backpressure (429,
 * 503) never opens it, keeps the streak and closes a half-open one. */
void statebus_breaker_report(struct statebus_region *r, uint32_t slot, uint32_t gen,
			     uint32_t threshold, enum statebus_cb_result res, uint64_t now_ns);

/* ======================================================================== */
/* Radix index (index.c) — SGLang HashTree, sglang-wire.md §7, §8, §11      */
/*
 * One node per (block hash, position in a chain) in a fixed pool; children
 * found by (parent, hash); a reverse map hash → every node carrying it
 * (BlockRemoved carries no parent). Each node carries owner entries
 * (worker slot + generation, DP rank, STATEBUS_TIER_* bits). Writers are the
 * statebus's single writer thread ([writer]: statebus_writer_lock() held);
 * readers are lock-free and never write the index.
 */

/* [writer] BlockStored: chain hashes[0..n) (n ≤ STATEBUS_INDEX_CHAIN_MAX)
 * stored by (worker slot, DP rank) in `tiers` (non-zero STATEBUS_TIER_*
 * bits, OR-ed into an existing ownership). The worker's generation is read
 * from the workers table: an ownership left by an older generation of the
 * slot is replaced, never inherited. Parent (sglang-wire.md §11 "Tree
 * shape"): !has_parent → the chain starts at the root; one node carries
 * `parent` → attach under it; several → prefer one (worker, rank) owns, then
 * one the worker owns in any rank, then the most recently stored; none →
 * attach at the root and keep `parent` as the first node's breadcrumb
 * (counted). A predicted ownership of the same (worker, generation, rank)
 * is confirmed: it becomes the stored tier (predicted bit and entry
 * dropped, counted as confirmed). now_ns (CLOCK_MONOTONIC) stamps the nodes; the path and its
 * ancestors become most recently used. When the pool is full the leaves
 * used least recently are evicted (counted); a block that still finds no
 * room ends the chain there (counted as dropped).
 * Returns SY_OK, or SY_ENOSPC when part of the chain was dropped (the
 * stored prefix stays). Errors: SY_EINVAL (worker/rank out of range, tiers
 * 0 or > STATEBUS_TIER_ALL, n > cap, hashes NULL with n > 0), SY_ENOENT
 * (worker slot free). */
int statebus_index_store(struct statebus_region *r, uint32_t worker, uint32_t rank,
			 bool has_parent, int64_t parent, const int64_t *hashes, size_t n,
			 uint32_t tiers, uint64_t now_ns);

/* [writer] BlockRemoved: clears `tiers` (STATEBUS_TIER_ALL for an untagged
 * or unknown medium) and any predicted ownership of (worker, rank) — any
 * generation — on every node
 * carrying each of hashes[0..n); an ownership left with no tier is
 * dropped; a node left ownerless and childless is unlinked (retired), and
 * so are its ancestors that become ownerless and childless.
 * Returns SY_OK (unknown hashes are ignored). Errors: SY_EINVAL. */
int statebus_index_remove(struct statebus_region *r, uint32_t worker, uint32_t rank,
			  const int64_t *hashes, size_t n, uint32_t tiers);

/* [writer] AllBlocksCleared, PublisherReset, engine restart (seq 0): drops
 * every ownership of (worker, rank), predicted ones included, and prunes.
 * O(index_nodes).
 * Errors: SY_EINVAL. */
int statebus_index_clear_rank(struct statebus_region *r, uint32_t worker, uint32_t rank);

/* [writer] Worker removed (or its slot about to be reused): drops every
 * ownership of the slot, all ranks and generations, and prunes.
 * O(index_nodes). Errors: SY_EINVAL. */
int statebus_index_clear_worker(struct statebus_region *r, uint32_t worker);

/* [writer] Empties the index (statebus start with an index that cannot be
 * kept: it is rebuilt from the engines' streams) and bumps the index
 * incarnation (do not bump it again).
 * Every node is retired; readers inside a bracket keep reading the old
 * nodes until they leave. Also run by statebus_writer_lock() when a writer
 * died in the middle of an index update. Returns SY_OK. */
int statebus_index_reset(struct statebus_region *r);

/* [writer] Checks the index a previous writer left (statebus start-up,
 * before keeping it): no update left unfinished (the `busy` word), pool
 * counts in range, every bucket chain bounded and holding live nodes of
 * its own hash once, live nodes = reachable nodes with live parents and
 * exact child and owner counts, overflow records owned by one node or
 * free, the LRU list complete and ordered children before parents, the
 * retire FIFO and the free lists exact, the predicted-entry pool
 * consistent. O(nodes handed out + buckets); allocates working memory
 * (≈ 10 bytes per node) and frees it. Reads only. Returns SY_OK, or
 * SY_EMALFORMED with the first problem in err (then empty the index with
 * statebus_index_reset), SY_ENOMEM. */
int statebus_index_check(struct statebus_region *r, char *err, size_t cap);

/* Reader: for each (worker slot, rank) owning a contiguous prefix of
 * hashes[0..n) from the root (any tier, predicted included; current slot
 * generation only), its depth in blocks (≥ 1) and, in predicted_depth, how
 * many of those blocks lie past its longest engine-confirmed prefix, with
 * the last prediction time of the deepest predicted-only one (predicted_ns,
 * a best-effort read of the writer's entry pool) and the worker's cache
 * signal (both only when predicted_depth > 0); in order of first appearance. Writes at most
 * `cap` entries (owners beyond cap at the first block are not followed).
 * Brackets itself (nests inside an open bracket); needs a claimed proc slot.
 * Returns the number of entries written (≥ 0), or SY_EINVAL (NULL with
 * n/cap > 0). A node under update past the seqlock retry bound ends the walk
 * there (depths stay as found: a shorter match, never a torn one).
 * Matched tokens = input_tokens × min(depth, n) / n (sglang-wire.md §11). */
int statebus_index_match(struct statebus_region *r, const int64_t *hashes, size_t n,
			 struct statebus_index_match *out, size_t cap);

/* [writer] Predicted ownership (DESIGN.md §9): records chain hashes[0..n)
 * from the root as predicted for (worker slot, generation, DP rank) at
 * now_ns (CLOCK_MONOTONIC), creating missing nodes. A block the ownership
 * already holds in an engine-reported tier stays as it is; a predicted one
 * is refreshed (its expiry restarts). The chain is cut to the worker's
 * capacity_blocks (statebus_predict_set_worker); past it the oldest
 * predictions of the worker are evicted (counted). Entries of another
 * generation of the slot are dropped first. Predictions end by
 * confirmation (statebus_index_store), BlockRemoved, clears, node
 * eviction, statebus_predict_sweep() (TTL, worker gone) or reset.
 * Returns SY_OK; SY_ENOSPC when the chain was cut (node or entry pool
 * exhausted: the prefix stays, counted); SY_ESTALE (slot not ACTIVE or of
 * another generation); SY_EINVAL (ranges, n > STATEBUS_INDEX_CHAIN_MAX). */
int statebus_index_predict(struct statebus_region *r, uint32_t worker, uint32_t gen, uint32_t rank,
			   const int64_t *hashes, size_t n, uint64_t now_ns);

/* Reader: SGLang's match_prefix — walks hashes[0..n) from the root as far as
 * nodes exist (owned or not); *blocks receives that path length and `out`
 * the owners (current generations) of its last node, depth = *blocks.
 * Returns the entries written (≥ 0, ≤ cap) or SY_EINVAL. */
int statebus_index_path(struct statebus_region *r, const int64_t *hashes, size_t n,
			uint32_t *blocks, struct statebus_index_match *out, size_t cap);

/* Occupancy and counters (no bracket needed). */
void statebus_index_stats(const struct statebus_region *r, struct statebus_index_stats *out);

/* Reader (brackets itself): scans the node pool and totals ownerships per
 * (worker, rank, generation), sorted by worker slot then rank; only
 * `worker` when worker ≥ 0, else all. O(index_nodes); for tools (syctl
 * index). Returns the number of distinct owners found (may exceed cap;
 * min(cap, result) entries written) or SY_EINVAL. */
int statebus_index_owner_stats(struct statebus_region *r, int64_t worker,
			       struct statebus_index_owner_stats *out, size_t cap);

/* ======================================================================== */
/* Predictions (predict.c) — DESIGN.md §9 "Predicted ownership"             */
/*
 * Routers hand each dispatch's block-hash chain to the statebus through a
 * ring in the region owned by their proc slot (single producer: the slot's
 * process; single consumer: the statebus). Pushing never blocks and never
 * makes a syscall; a full ring drops the prediction (counted). The statebus
 * drains the rings from its loop and applies them with
 * statebus_index_predict(). docs/statebus.md gives the measured latency.
 */

/* 32-bit tag of a model name (`len` bytes, FNV-1a; never 0), carried by a
 * prediction so a worker serving another model drops it. */
uint32_t statebus_predict_model_tag(const char *model, size_t len);

/* Producer: queues prediction `p` with chain hashes[0..n) (SGLang
 * block-hash chain of the prompt, i64 ids as in the index) in the ring of
 * proc slot `proc` (the caller's own: statebus_proc_self()). Chains over
 * STATEBUS_PREDICT_CHAIN_MAX are truncated (counted). Only the slot's
 * process may push; one thread at a time. Never blocks.
 * Returns SY_OK (n == 0: nothing queued); SY_ENOSPC (ring full: dropped,
 * counted); SY_EINVAL (proc out of range, p NULL, worker/rank > 0xffff,
 * hashes NULL with n > 0). */
int statebus_predict_push(struct statebus_region *r, uint32_t proc,
			  const struct statebus_prediction *p, const int64_t *hashes, size_t n);

/* Producer: the position of proc slot `proc`'s ring after its last push
 * (free-running word count; 0 for a bad slot). */
uint64_t statebus_predict_ring_pos(const struct statebus_region *r, uint32_t proc);

/* True once the statebus has consumed proc's ring up to `pos` (a value of
 * statebus_predict_ring_pos): every prediction pushed before it is applied
 * to the index (or dropped, counted). Lets a router bridge the drain delay
 * with what it pushed itself. */
bool statebus_predict_applied(const struct statebus_region *r, uint32_t proc, uint64_t pos);

/* [writer] Consumer: drains at most max_records predictions from every
 * ring and applies each (statebus_index_predict at now_ns) after checking
 * it against the workers table: slot ACTIVE with the record's generation,
 * rank < dp_size, model tag matching (else counted stale). Ring positions
 * or records that do not validate are skipped to the ring's tail (counted
 * malformed). Returns the number of predictions drained (≥ 0). */
int statebus_predict_drain(struct statebus_region *r, uint64_t now_ns, uint32_t max_records);

/* [writer] Expiry: drops every predicted entry last predicted ttl_ns or
 * more before now_ns, and every entry of a worker slot that is free or
 * of another generation. O(dropped + max_workers). Returns the number
 * dropped (≥ 0). */
int statebus_predict_sweep(struct statebus_region *r, uint64_t now_ns, uint64_t ttl_ns);

/* [writer] Per worker slot: how its cache state is known (enum
 * statebus_cache_signal, shown by tools) and the most predicted blocks it
 * keeps (capacity_blocks: its KV capacity in blocks, 0 = only the pool
 * bound); lowering it evicts the oldest predictions now. Kept across
 * index resets; set again when the slot is reused.
 * Errors: SY_EINVAL (worker or cache_signal out of range). */
int statebus_predict_set_worker(struct statebus_region *r, uint32_t worker, uint32_t cache_signal,
				uint64_t capacity_blocks);

/* Copy of worker slot `worker`'s prediction state (fields read one by
 * one). Errors: SY_EINVAL. */
int statebus_predict_worker_read(const struct statebus_region *r, uint32_t worker,
				 struct statebus_predict_worker *out);

/* Region-wide prediction counters (no bracket needed). */
void statebus_predict_stats(const struct statebus_region *r, struct statebus_predict_stats *out);

/* ======================================================================== */
/* Affinity store (affinity.c) — DESIGN.md §3, §9                           */
/*
 * Session and sticky bindings shared by every router process of the host:
 * scope digest → worker (slot, generation), with an idle TTL. Multi-writer:
 * routers bind and rebind, the statebus (or the router master) sweeps;
 * every function is safe from any process without the writer lock and
 * never blocks except statebus_affinity_bind(), which may wait up to 200 ms
 * for a stripe lock held by a live process. The region handle is const
 * because the handle is not changed; the shared table is. Times are
 * CLOCK_MONOTONIC ns.
 */

/* Scope digest of a binding: XXH3-128 of the SGLang binding key string
 * "{session|sticky}:{stage}:{len(model)}:{model}{len(bucket)}:{bucket}{key}"
 * (stage = 0 plain, 1 prefill, 2 decode; reference/policy-defaults.md §4.3).
 * Strings are byte spans (no NUL needed). Errors: SY_EINVAL. */
int statebus_affinity_key_make(enum statebus_affinity_kind kind, uint32_t stage,
			       const char *model, size_t model_len, const char *bucket,
			       size_t bucket_len, const char *key, size_t key_len,
			       struct statebus_affinity_key *out);

/* Finds the binding of `key`. On SY_OK *out names the worker and the exact
 * entry state (for rebind); the entry's last use becomes now_ns (at most
 * every 50 ms; now_ns 0 = do not touch). The caller decides whether the
 * worker is still usable (statebus_worker_valid, group membership): an
 * invalid one is replaced with statebus_affinity_rebind().
 * Errors: SY_ENOENT (unbound), SY_EINVAL. */
int statebus_affinity_lookup(const struct statebus_region *r,
			     const struct statebus_affinity_key *key, uint64_t now_ns,
			     struct statebus_affinity_binding *out);

/* First assignment: binds `key` to worker (slot, gen) with idle TTL ttl_ms
 * unless a binding exists. SY_OK: ours (*out). SY_EEXIST: another process
 * (or an earlier call) won; *out is the winner, which the caller must
 * re-check (valid? a candidate? admitted?). Never creates two bindings for
 * one key (see affinity.c). Errors: SY_EINVAL (worker out of range, ttl 0,
 * bad kind), SY_ENOSPC (no free entry within the probe window), SY_EBUSY
 * (the key's stripe lock stayed held by a live process for 200 ms). */
int statebus_affinity_bind(const struct statebus_region *r,
			   const struct statebus_affinity_key *key, enum statebus_affinity_kind kind,
			   uint32_t worker, uint32_t worker_gen, uint32_t ttl_ms, uint64_t now_ns,
			   struct statebus_affinity_binding *out);

/* Replaces binding `old` (as returned for `key`) by worker (slot, gen) —
 * only if the entry still holds exactly `old` (CAS). SY_OK: replaced (*out).
 * SY_EEXIST: someone rebound it first; *out is the winner (re-check it,
 * bounded retries). SY_ENOENT: it expired or was reused meanwhile (bind
 * afresh). SY_EINVAL: bad arguments. */
int statebus_affinity_rebind(const struct statebus_region *r,
			     const struct statebus_affinity_key *key,
			     const struct statebus_affinity_binding *old, uint32_t worker,
			     uint32_t worker_gen, uint64_t now_ns,
			     struct statebus_affinity_binding *out);

/* Removes binding `b` of `key` (tombstone) if the entry still holds it.
 * Errors: SY_ENOENT (already gone or replaced), SY_EBUSY (changed during
 * the call), SY_EINVAL. */
int statebus_affinity_unbind(const struct statebus_region *r,
			     const struct statebus_affinity_key *key,
			     const struct statebus_affinity_binding *b);

/* Sweep (statebus daemon every statebus.affinity_sweep_interval_secs, 60 s
 * by default; the router master when no statebus runs): tombstones every
 * binding idle longer than its TTL at now_ns, every binding whose worker
 * (slot, generation) is no longer valid, and claims left by dead processes.
 * O(capacity). Fills *res when not NULL; returns the number tombstoned
 * (≥ 0) or SY_EINVAL. Safe alongside routers and another sweeper. */
int statebus_affinity_sweep(const struct statebus_region *r, uint64_t now_ns,
			    struct statebus_affinity_sweep_result *res);

/* Copy of entry `index` (< params.affinity_entries) for tools. Errors:
 * SY_EINVAL, SY_ESTALE (changing too fast to copy). */
int statebus_affinity_read(const struct statebus_region *r, uint32_t index,
			   struct statebus_affinity_info *out);

/* Occupancy (scans the table: O(capacity)) and counters. */
void statebus_affinity_stats(const struct statebus_region *r, struct statebus_affinity_stats *out);

/* ------------------------------------------------------------------------ */
/* Rotation cursors (cursors.c)                                             */
/*
 * One shared counter per engine group (key: a non-zero 64-bit digest of the
 * group's identity, chosen by the caller), so that round-robin rotation is
 * one sequence for every router process of the host. Entries are claimed
 * once and never released; the table holds STATEBUS_CURSORS of them.
 */

/* Finds or claims the cursor of `key` (≠ 0): *idx. Errors: SY_EINVAL,
 * SY_EPERM (read-only attach), SY_ENOSPC (no free entry within
 * STATEBUS_CURSOR_PROBES; counted as switchyard_rotation_cursors_full_total):
 * the caller rotates on a process-local cursor. Lock-free. */
int statebus_cursor_find(const struct statebus_region *r, uint64_t key, uint32_t *idx);

/* Advances cursor `idx` (found for `key`) by one with an atomic add and
 * returns its previous value in *value. SY_ENOENT when the entry does not
 * hold `key` (find it again); SY_EINVAL. Lock-free, never blocks. */
int statebus_cursor_next(const struct statebus_region *r, uint32_t idx, uint64_t key,
			 uint64_t *value);

/* Copy of entry `idx` for tools and tests (key 0 = free). SY_EINVAL. */
int statebus_cursor_read(const struct statebus_region *r, uint32_t idx, uint64_t *key,
			 uint64_t *value);

/* Entries of the cursor table (0 for NULL). */
uint32_t statebus_cursors_capacity(const struct statebus_region *r);

#endif
