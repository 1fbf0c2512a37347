/* epoch.c — process slots, reader epochs and the grace-period primitives of
 * deferred reclamation.
 *
 * The scheme is epoch-based reclamation with its bookkeeping in shared
 * memory (liburcu's grace periods do not cross processes):
 *
 *   global epoch G   one 64-bit word in the header, ≥ 1, only grows.
 *   proc slot s      {pid, start time, role, epoch E_s}; E_s is IDLE (0)
 *                    outside a read bracket, else the G it read at enter.
 *
 *   reader enter:    E_s ← G with a full barrier (xchg), then read tables.
 *   reader leave:    E_s ← IDLE with release order.
 *   writer retire:   the item is first unpublished (no offset to it is
 *                    reachable any more); it is stamped e = G and queued,
 *                    then G ← e + 1 (write barrier before: unpublish first)
 *                    — sb_epoch_stamp().
 *   writer reclaim:  full barrier; m = min(G, every non-idle E_s); every
 *                    queued item with stamp < m is poisoned and freed
 *                    — sb_epoch_safe() gives m.
 *
 * Why it is safe: a reader that could still hold an item stamped e entered
 * before it was unpublished; either it published E_s ≤ e (so m ≤ e and the
 * item stays), or the writer's scan raced its enter — the store-buffer
 * pattern with full barriers on both sides (writer: unpublish; mb; load
 * E_s — reader: store E_s; mb; load offsets) guarantees that if the scan
 * saw IDLE, the reader's loads see the item already unpublished. A reader
 * with E_s > e read G after the increment, hence after the unpublish.
 * Stamps are queued in FIFO order with non-decreasing epochs, so reclaim
 * stops at the first item still protected.
 *
 * Dead readers: a slot's owner is (pid, start time from /proc/<pid>/stat
 * field 22). statebus_procs_reap() (writer) frees slots whose pid is gone,
 * a zombie, or alive with another start time (pid reuse): their epoch and
 * in-flight row are zeroed before the pid is cleared, so a reader killed
 * inside a bracket holds reclamation back only until the next reap.
 * Claiming is a CAS of pid 0 → own pid; the start time is written right
 * after, and the reaper skips a live pid whose start time is still 0.
 *
 * The radix index (index.c) keeps the pools and the retire FIFO; it uses
 * the epochs through sb_epoch_stamp() and sb_epoch_safe().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "sb-int.h"
#include "statebus-queue.h"

int sb_proc_stat(int32_t pid, uint64_t *start_time)
{
	char path[64], buf[1024];
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/stat");
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return SY_ENOENT;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return SY_ENOENT;
	buf[n] = '\0';
	/* Field 2 (comm) may hold spaces and parens: fields resume after the
	 * last ')'. Field 3 is the state, field 22 the start time. */
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return SY_ENOENT;
	p += 2;
	char state = *p;
	if (state == 'Z' || state == 'X' || state == 'x')
		return SY_ENOENT;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return SY_ENOENT;
		p++;
	}
	*start_time = strtoull(p, NULL, 10);
	return SY_OK;
}

/* ---------------------------------------------------------------- slots */

int statebus_proc_claim(struct statebus_region *r, enum statebus_proc_role role, uint32_t *slot)
{
	if (r->self_slot >= 0) {
		if (slot)
			*slot = (uint32_t)r->self_slot;
		return SY_EEXIST;
	}
	if (r->read_only)
		return SY_EPERM;
	uint64_t st = 0;
	if (sb_proc_stat(0, &st) != SY_OK)
		return SY_EIO;
	int32_t pid = (int32_t)getpid();
	for (uint32_t i = 0; i < r->hdr->max_procs; i++) {
		struct sb_proc *p = sb_proc_at(r, i);
		if (CMM_LOAD_SHARED(p->pid) != 0 || uatomic_cmpxchg(&p->pid, 0, pid) != 0)
			continue;
		CMM_STORE_SHARED(p->epoch, STATEBUS_EPOCH_IDLE);
		CMM_STORE_SHARED(p->role, (uint32_t)role);
		CMM_STORE_SHARED(p->claimed_ns, sy_mono_ns());
		statebus_inflight_zero_row(r, i);
	(void)statebus_queue_zero_row(r, i);
		/* Readers of in-flight sums look at the rows below procs_hw. */
		for (uint32_t hw = CMM_LOAD_SHARED(r->hdr->procs_hw); hw < i + 1;) {
			uint32_t seen = uatomic_cmpxchg(&r->hdr->procs_hw, hw, i + 1);
			if (seen == hw)
				break;
			hw = seen;
		}
		cmm_smp_wmb();
		CMM_STORE_SHARED(p->start_time, st);
		r->self_slot = (int32_t)i;
		r->self_epoch = &p->epoch;
		r->read_depth = 0;
		if (slot)
			*slot = i;
		return SY_OK;
	}
	return SY_ENOSPC;
}

static void proc_clear(struct statebus_region *r, uint32_t i)
{
	struct sb_proc *p = sb_proc_at(r, i);
	statebus_inflight_zero_row(r, i);
	(void)statebus_queue_zero_row(r, i);
	CMM_STORE_SHARED(p->epoch, STATEBUS_EPOCH_IDLE);
	CMM_STORE_SHARED(p->start_time, 0);
	CMM_STORE_SHARED(p->role, STATEBUS_PROC_NONE);
	cmm_smp_mb(); /* row and epoch cleared before the slot can be reclaimed */
}

void statebus_proc_release(struct statebus_region *r)
{
	if (r->self_slot < 0)
		return;
	SB_BUG_ON(r->read_depth != 0);
	uint32_t i = (uint32_t)r->self_slot;
	struct sb_proc *p = sb_proc_at(r, i);
	proc_clear(r, i);
	r->self_slot = -1;
	r->self_epoch = NULL;
	(void)uatomic_cmpxchg(&p->pid, (int32_t)getpid(), 0);
}

int statebus_proc_read(const struct statebus_region *r, uint32_t slot, struct statebus_proc_info *out)
{
	if (slot >= r->hdr->max_procs)
		return SY_EINVAL;
	const struct sb_proc *p = sb_proc_at(r, slot);
	out->pid = CMM_LOAD_SHARED(p->pid);
	out->role = CMM_LOAD_SHARED(p->role);
	out->start_time = CMM_LOAD_SHARED(p->start_time);
	out->epoch = CMM_LOAD_SHARED(p->epoch);
	out->claimed_mono_ns = CMM_LOAD_SHARED(p->claimed_ns);
	return SY_OK;
}

int statebus_procs_reap(struct statebus_region *r)
{
	sb_assert_writer(r);
	int reaped = 0;
	for (uint32_t i = 0; i < r->hdr->max_procs; i++) {
		struct sb_proc *p = sb_proc_at(r, i);
		int32_t pid = CMM_LOAD_SHARED(p->pid);
		if (pid == 0)
			continue;
		cmm_smp_rmb();
		uint64_t want = CMM_LOAD_SHARED(p->start_time);
		uint64_t cur = 0;
		bool alive = sb_proc_stat(pid, &cur) == SY_OK;
		if (alive && (want == 0 || cur == want))
			continue; /* owner alive (or still claiming) */
		proc_clear(r, i);
		if (uatomic_cmpxchg(&p->pid, pid, 0) == pid)
			reaped++;
	}
	return reaped;
}

void statebus_read_enter_unclaimed_(struct statebus_region *r)
{
	(void)r;
	SB_BUG_ON(!"statebus_read_enter() without a claimed proc slot");
}

/* ---------------------------------------------------------------- epochs */

uint64_t sb_epoch_stamp(struct statebus_region *r)
{
	sb_assert_writer(r);
	cmm_smp_wmb(); /* the caller's unpublish is visible before the new epoch */
	uint64_t e = CMM_LOAD_SHARED(r->hdr->global_epoch);
	CMM_STORE_SHARED(r->hdr->global_epoch, e + 1);
	return e;
}

uint64_t sb_epoch_safe(struct statebus_region *r)
{
	struct statebus_hdr *h = r->hdr;
	cmm_smp_mb(); /* unpublish and epoch stores before the reader scan */
	uint64_t min = CMM_LOAD_SHARED(h->global_epoch);
	for (uint32_t i = 0; i < h->max_procs; i++) {
		struct sb_proc *p = sb_proc_at(r, i);
		uint64_t e = CMM_LOAD_SHARED(p->epoch);
		if (e != STATEBUS_EPOCH_IDLE && e < min)
			min = e;
	}
	cmm_smp_mb(); /* scan complete before any entry is poisoned */
	return min;
}
