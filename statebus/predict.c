/* predict.c — predicted ownership: the prediction rings from routers to the
 * statebus, and the pool of predicted entries behind the index's
 * STATEBUS_TIER_PREDICTED bit (DESIGN.md §9 "Predicted ownership").
 *
 * Channel
 * -------
 * Every proc slot owns one ring of STATEBUS_PREDICT_RING_WORDS words in the
 * region (struct sb_pring). Only the process holding the slot pushes into
 * it, only the statebus writer drains it: single producer, single
 * consumer, no lock, no syscall. A push copies the record and publishes
 * the tail (release); a full ring drops the prediction and counts it, so a
 * dispatch never waits for the statebus. The statebus drains every ring
 * from its loop (statebus_predict_drain), validates each record against
 * the ring bounds and the workers table, and applies it to the index with
 * statebus_index_predict(). A producer killed mid-push published nothing;
 * a ring whose positions or records do not validate is skipped to its
 * tail (counted as malformed).
 *
 * Predicted entries
 * -----------------
 * A predicted ownership (node, worker, rank) has one entry in a fixed pool
 * (sb_pred_entry), found by a chained hash on (node, worker, rank) and
 * linked in its worker's list in last-predicted order (oldest at the
 * head). Invariant P1: an owner word carries STATEBUS_TIER_PREDICTED iff
 * its entry exists (index.c records the entry before setting the bit and
 * releases it whenever the bit is cleared: BlockStored confirms, removes,
 * clears, node unlink). So
 * - expiry (statebus_predict_sweep) pops each worker's list from the head
 *   while the oldest prediction is older than the TTL: O(expired);
 * - capacity: a worker never holds more than capacity_blocks predicted
 *   entries; a new one evicts the oldest (counted);
 * - a worker's entries belong to one generation: the first prediction of
 *   a new generation, or the sweep finding the slot freed or reused, drops
 *   the old ones, so predicted entries never outlive their engine.
 * The pool, buckets and lists are writer-only; readers see predictions
 * only through owner words and the counters.
 */
#include <string.h>

#include "sb-int.h"

#define RING_MASK (STATEBUS_PREDICT_RING_WORDS - 1u)

/* ------------------------------------------------------------ the pool */

static uint32_t pool_cap(const struct statebus_region *r)
{
	return r->hdr->tables[SB_T_PENTRIES].count - 1;
}

static uint32_t *pbucket(const struct statebus_region *r, uint32_t node, uint32_t worker,
			 uint32_t rank)
{
	uint64_t x = (uint64_t)node | (uint64_t)worker << 32 | (uint64_t)rank << 48;
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	uint32_t nb = r->hdr->tables[SB_T_PBUCKETS].count; /* power of two */
	return (uint32_t *)sb_table(r, SB_T_PBUCKETS) + (x & (nb - 1));
}

/* Entry of (node, worker, rank), or 0; *link receives the word pointing at
 * it. Bounded walk. */
static uint32_t pe_find(const struct statebus_region *r, uint32_t node, uint32_t worker,
			uint32_t rank, uint32_t **link)
{
	uint32_t cap = pool_cap(r);
	uint32_t *l = pbucket(r, node, worker, rank);
	for (uint32_t steps = 0; *l != 0 && *l <= cap && steps <= cap; steps++) {
		struct sb_pred_entry *e = sb_pentry_at(r, *l);
		if (e->node == node && e->worker == worker && e->rank == rank) {
			*link = l;
			return *l;
		}
		l = &e->hnext;
	}
	return 0;
}

uint64_t sb_pred_last_ns_read(const struct statebus_region *r, uint32_t node, uint32_t worker,
			      uint32_t rank)
{
	uint32_t cap = pool_cap(r);
	uint32_t i = CMM_LOAD_SHARED(*pbucket(r, node, worker, rank));
	for (uint32_t steps = 0; i != 0 && i <= cap && steps < 64; steps++) {
		const struct sb_pred_entry *e = sb_pentry_at(r, i);
		if (CMM_LOAD_SHARED(e->node) == node && CMM_LOAD_SHARED(e->worker) == worker &&
		    CMM_LOAD_SHARED(e->rank) == rank)
			return CMM_LOAD_SHARED(e->last_ns);
		i = CMM_LOAD_SHARED(e->hnext);
	}
	return 0;
}

static void list_unlink(struct statebus_region *r, struct sb_pred_worker *pw, uint32_t i)
{
	struct sb_pred_entry *e = sb_pentry_at(r, i);
	if (e->prev)
		sb_pentry_at(r, e->prev)->next = e->next;
	else
		pw->head = e->next;
	if (e->next)
		sb_pentry_at(r, e->next)->prev = e->prev;
	else
		pw->tail = e->prev;
	e->prev = e->next = 0;
}

static void list_push_tail(struct statebus_region *r, struct sb_pred_worker *pw, uint32_t i)
{
	struct sb_pred_entry *e = sb_pentry_at(r, i);
	e->prev = pw->tail;
	e->next = 0;
	if (pw->tail)
		sb_pentry_at(r, pw->tail)->next = i;
	else
		pw->head = i;
	pw->tail = i;
}

/* Unlinks entry i (reached through *link) from its bucket and list and
 * frees it. */
static void pe_release(struct statebus_region *r, uint32_t i, uint32_t *link)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_pred_entry *e = sb_pentry_at(r, i);
	struct sb_pred_worker *pw = sb_pworker_at(r, e->worker);
	*link = e->hnext;
	list_unlink(r, pw, i);
	CMM_STORE_SHARED(pw->blocks, pw->blocks - 1);
	memset(e, 0, sizeof(*e));
	e->hnext = h->pe_free;
	h->pe_free = i;
	CMM_STORE_SHARED(h->pe_used, h->pe_used - 1);
}

/* Drops entry i of `worker` and its predicted bit in the index; bumps
 * *counter. */
static void pe_drop(struct statebus_region *r, uint32_t i, uint64_t *counter)
{
	struct sb_pred_entry *e = sb_pentry_at(r, i);
	uint32_t node = e->node, worker = e->worker, rank = e->rank, *link = NULL;
	SB_BUG_ON(pe_find(r, node, worker, rank, &link) != i);
	pe_release(r, i, link);
	CMM_STORE_SHARED(*counter, *counter + 1);
	sb_index_unpredict(r, node, worker, rank);
}

int sb_pred_touch(struct statebus_region *r, uint32_t node, uint32_t worker, uint32_t gen,
		  uint32_t rank, uint64_t now_ns)
{
	struct sb_index_hdr *h = &r->hdr->index;
	struct sb_pred_worker *pw = sb_pworker_at(r, worker);
	uint32_t *link = NULL;
	uint32_t i = pe_find(r, node, worker, rank, &link);
	if (i != 0) {
		struct sb_pred_entry *e = sb_pentry_at(r, i);
		e->gen = gen;
		e->last_ns = now_ns;
		list_unlink(r, pw, i);
		list_push_tail(r, pw, i);
		CMM_STORE_SHARED(pw->predicted, pw->predicted + 1);
		return SY_OK;
	}
	if (h->pe_free != 0 && h->pe_free <= pool_cap(r)) {
		i = h->pe_free;
		h->pe_free = sb_pentry_at(r, i)->hnext;
	} else if (h->pe_hw < pool_cap(r)) {
		i = ++h->pe_hw;
	} else {
		CMM_STORE_SHARED(h->pe_pool_full, h->pe_pool_full + 1);
		return SY_ENOSPC;
	}
	struct sb_pred_entry *e = sb_pentry_at(r, i);
	*e = (struct sb_pred_entry){.node = node, .gen = gen, .worker = (uint16_t)worker,
				    .rank = (uint16_t)rank, .last_ns = now_ns};
	uint32_t *b = pbucket(r, node, worker, rank);
	e->hnext = *b;
	*b = i;
	list_push_tail(r, pw, i);
	CMM_STORE_SHARED(pw->blocks, pw->blocks + 1);
	CMM_STORE_SHARED(pw->predicted, pw->predicted + 1);
	CMM_STORE_SHARED(h->pe_used, h->pe_used + 1);
	while (pw->capacity_blocks != 0 && pw->blocks > pw->capacity_blocks && pw->head != i)
		pe_drop(r, pw->head, &pw->evicted);
	return SY_OK;
}

bool sb_pred_forget(struct statebus_region *r, uint32_t node, uint32_t worker, uint32_t rank,
		    int why)
{
	uint32_t *link = NULL;
	uint32_t i = pe_find(r, node, worker, rank, &link);
	if (i == 0)
		return false;
	struct sb_pred_worker *pw = sb_pworker_at(r, worker);
	pe_release(r, i, link);
	uint64_t *c = why == 1 ? &pw->confirmed : &pw->removed;
	CMM_STORE_SHARED(*c, *c + 1);
	return true;
}

bool sb_pred_room(struct statebus_region *r, uint32_t worker, uint64_t now_ns)
{
	struct sb_index_hdr *h = &r->hdr->index;
	if (h->pe_free != 0 || h->pe_hw < pool_cap(r))
		return true;
	struct sb_pred_worker *pw = sb_pworker_at(r, worker);
	if (pw->head != 0 && sb_pentry_at(r, pw->head)->last_ns < now_ns) {
		pe_drop(r, pw->head, &pw->evicted);
		return true;
	}
	CMM_STORE_SHARED(h->pe_pool_full, h->pe_pool_full + 1);
	return false;
}

static void pw_restart(struct sb_pred_worker *pw, uint32_t gen)
{
	pw->head = pw->tail = 0;
	pw->gen = gen;
	pw->blocks = pw->predicted = pw->confirmed = pw->expired = pw->evicted = pw->removed = 0;
}

void sb_pred_sync_gen(struct statebus_region *r, uint32_t worker, uint32_t gen)
{
	struct sb_pred_worker *pw = sb_pworker_at(r, worker);
	if (pw->gen == gen)
		return;
	uint32_t steps = 0;
	while (pw->head != 0 && steps++ <= pool_cap(r))
		pe_drop(r, pw->head, &pw->removed);
	pw_restart(pw, gen);
}

void sb_pred_reset(struct statebus_region *r)
{
	memset(sb_table(r, SB_T_PBUCKETS), 0, r->hdr->tables[SB_T_PBUCKETS].size);
	memset(sb_table(r, SB_T_PENTRIES), 0, r->hdr->tables[SB_T_PENTRIES].size);
	for (uint32_t w = 0; w < r->hdr->max_workers; w++)
		pw_restart(sb_pworker_at(r, w), 0);
}

int sb_pred_check(const struct statebus_region *r, char *err, size_t cap)
{
	const struct sb_index_hdr *h = &r->hdr->index;
	uint32_t pc = pool_cap(r);
	if (h->pe_hw > pc || h->pe_used > h->pe_hw) {
		sb_errf(err, cap, "predicted entries: %u used of %u handed out, pool %u", h->pe_used,
			h->pe_hw, pc);
		return SY_EMALFORMED;
	}
	uint64_t listed = 0;
	for (uint32_t w = 0; w < r->hdr->max_workers; w++) {
		const struct sb_pred_worker *pw = sb_pworker_at(r, w);
		uint32_t prev = 0, n = 0;
		for (uint32_t i = pw->head; i != 0; i = sb_pentry_at(r, i)->next) {
			const struct sb_pred_entry *e = i <= h->pe_hw ? sb_pentry_at(r, i) : NULL;
			if (e == NULL || ++n > h->pe_used || e->prev != prev || e->worker != w ||
			    e->node == 0 || e->node > r->hdr->index_nodes) {
				sb_errf(err, cap, "predicted entries of worker slot %u: bad list at "
					"entry %u", w, i);
				return SY_EMALFORMED;
			}
			prev = i;
		}
		if (prev != pw->tail || n != pw->blocks) {
			sb_errf(err, cap, "predicted entries of worker slot %u: %u listed, %llu "
				"counted", w, n, (unsigned long long)pw->blocks);
			return SY_EMALFORMED;
		}
		listed += n;
	}
	if (listed != h->pe_used) {
		sb_errf(err, cap, "predicted entries: %llu listed, %u in use",
			(unsigned long long)listed, h->pe_used);
		return SY_EMALFORMED;
	}
	return SY_OK;
}

/* ------------------------------------------------------------- writer */

int statebus_predict_sweep(struct statebus_region *r, uint64_t now_ns, uint64_t ttl_ns)
{
	sb_assert_writer(r);
	int n = 0;
	sb_index_op_begin(r);
	for (uint32_t w = 0; w < r->hdr->max_workers; w++) {
		struct sb_pred_worker *pw = sb_pworker_at(r, w);
		if (pw->head == 0)
			continue;
		const struct sb_worker_rec *wr = sb_worker_at(r, w);
		bool gone = wr->w.state == STATEBUS_WORKER_FREE || wr->w.generation != pw->gen;
		uint32_t steps = 0;
		while (pw->head != 0 && steps++ <= pool_cap(r)) {
			const struct sb_pred_entry *e = sb_pentry_at(r, pw->head);
			if (!gone && (e->last_ns > now_ns || now_ns - e->last_ns < ttl_ns))
				break;
			pe_drop(r, pw->head, gone ? &pw->removed : &pw->expired);
			n++;
		}
	}
	sb_index_op_end(r);
	return n;
}

int statebus_predict_set_worker(struct statebus_region *r, uint32_t worker, uint32_t cache_signal,
				uint64_t capacity_blocks)
{
	sb_assert_writer(r);
	if (worker >= r->hdr->max_workers || cache_signal > STATEBUS_CACHE_SIGNAL_PREDICTED)
		return SY_EINVAL;
	struct sb_pred_worker *pw = sb_pworker_at(r, worker);
	CMM_STORE_SHARED(pw->cache_signal, cache_signal);
	CMM_STORE_SHARED(pw->capacity_blocks, capacity_blocks);
	if (capacity_blocks != 0 && pw->blocks > capacity_blocks) {
		sb_index_op_begin(r);
		while (pw->head != 0 && pw->blocks > capacity_blocks)
			pe_drop(r, pw->head, &pw->evicted);
		sb_index_op_end(r);
	}
	return SY_OK;
}

int statebus_predict_drain(struct statebus_region *r, uint64_t now_ns, uint32_t max_records)
{
	sb_assert_writer(r);
	struct sb_predict_hdr *ph = &r->hdr->predict;
	int64_t buf[STATEBUS_PREDICT_CHAIN_MAX];
	uint32_t done = 0;
	for (uint32_t p = 0; p < r->hdr->max_procs && done < max_records; p++) {
		struct sb_pring *q = sb_pring_at(r, p);
		uint64_t head = CMM_LOAD_SHARED(q->cons.head);
		uint64_t tail = __atomic_load_n(&q->prod.tail, __ATOMIC_ACQUIRE);
		if (tail == head)
			continue;
		if (tail - head > STATEBUS_PREDICT_RING_WORDS) {
			CMM_STORE_SHARED(ph->malformed, ph->malformed + 1);
			__atomic_store_n(&q->cons.head, tail, __ATOMIC_RELEASE);
			continue;
		}
		while (head != tail && done < max_records) {
			uint64_t avail = tail - head;
			uint64_t w0 = avail >= STATEBUS_PREDICT_HDR_WORDS ? q->words[head & RING_MASK] : 0;
			uint32_t n = (uint32_t)(w0 >> 16) & 0xffffu;
			if ((w0 & 0xffffu) != SB_PRED_MAGIC || n > STATEBUS_PREDICT_CHAIN_MAX ||
			    STATEBUS_PREDICT_HDR_WORDS + n > avail) {
				CMM_STORE_SHARED(ph->malformed, ph->malformed + 1);
				head = tail;
				break;
			}
			uint64_t w1 = q->words[(head + 1) & RING_MASK];
			uint64_t ts = q->words[(head + 2) & RING_MASK];
			for (uint32_t k = 0; k < n; k++)
				buf[k] = (int64_t)q->words[(head + STATEBUS_PREDICT_HDR_WORDS + k) & RING_MASK];
			head += STATEBUS_PREDICT_HDR_WORDS + n;
			done++;
			CMM_STORE_SHARED(ph->drained, ph->drained + 1);
			uint64_t lag = ts <= now_ns ? now_ns - ts : 0;
			CMM_STORE_SHARED(ph->lag_ns_sum, ph->lag_ns_sum + lag);
			if (lag > ph->lag_ns_max)
				CMM_STORE_SHARED(ph->lag_ns_max, lag);
			uint32_t worker = (uint32_t)(w0 >> 32) & 0xffffu, rank = (uint32_t)(w0 >> 48);
			uint32_t gen = (uint32_t)w1, tag = (uint32_t)(w1 >> 32);
			bool ok = worker < r->hdr->max_workers;
			if (ok) {
				const struct sb_worker_rec *wr = sb_worker_at(r, worker);
				uint32_t dp = wr->w.dp_size ? wr->w.dp_size : 1;
				ok = rank < dp &&
				     (tag == 0 || wr->w.model[0] == 0 ||
				      tag == statebus_predict_model_tag(
						     wr->w.model, strnlen(wr->w.model, sizeof(wr->w.model))));
			}
			int rc = ok ? statebus_index_predict(r, worker, gen, rank, buf, n, now_ns)
				    : SY_ESTALE;
			if (rc == SY_OK || rc == SY_ENOSPC)
				CMM_STORE_SHARED(ph->applied, ph->applied + 1);
			else
				CMM_STORE_SHARED(ph->stale, ph->stale + 1);
		}
		__atomic_store_n(&q->cons.head, head, __ATOMIC_RELEASE);
	}
	return (int)done;
}

/* ------------------------------------------------------------- anyone */

uint32_t statebus_predict_model_tag(const char *model, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)model[i];
		h *= 16777619u;
	}
	return h != 0 ? h : 1;
}

int statebus_predict_push(struct statebus_region *r, uint32_t proc,
			  const struct statebus_prediction *p, const int64_t *hashes, size_t n)
{
	if (p == NULL || proc >= r->hdr->max_procs || (n > 0 && hashes == NULL) ||
	    p->worker > 0xffffu || p->rank > 0xffffu)
		return SY_EINVAL;
	if (n == 0)
		return SY_OK;
	struct sb_pring *q = sb_pring_at(r, proc);
	size_t keep = n > STATEBUS_PREDICT_CHAIN_MAX ? STATEBUS_PREDICT_CHAIN_MAX : n;
	uint64_t need = STATEBUS_PREDICT_HDR_WORDS + keep;
	uint64_t tail = CMM_LOAD_SHARED(q->prod.tail);
	uint64_t head = __atomic_load_n(&q->cons.head, __ATOMIC_ACQUIRE);
	uint64_t used = tail - head;
	if (used > STATEBUS_PREDICT_RING_WORDS || STATEBUS_PREDICT_RING_WORDS - used < need) {
		CMM_STORE_SHARED(q->prod.full, q->prod.full + 1);
		return SY_ENOSPC;
	}
	uint64_t *w = q->words;
	w[tail & RING_MASK] = SB_PRED_MAGIC | (uint64_t)keep << 16 | (uint64_t)p->worker << 32 |
			      (uint64_t)p->rank << 48;
	w[(tail + 1) & RING_MASK] = (uint64_t)p->worker_gen | (uint64_t)p->model_tag << 32;
	w[(tail + 2) & RING_MASK] = p->now_ns;
	w[(tail + 3) & RING_MASK] = (uint64_t)n;
	for (size_t k = 0; k < keep; k++)
		w[(tail + STATEBUS_PREDICT_HDR_WORDS + k) & RING_MASK] = (uint64_t)hashes[k];
	__atomic_store_n(&q->prod.tail, tail + need, __ATOMIC_RELEASE);
	CMM_STORE_SHARED(q->prod.pushed, q->prod.pushed + 1);
	if (keep < n)
		CMM_STORE_SHARED(q->prod.truncated, q->prod.truncated + (n - keep));
	return SY_OK;
}

uint64_t statebus_predict_ring_pos(const struct statebus_region *r, uint32_t proc)
{
	if (proc >= r->hdr->max_procs)
		return 0;
	return CMM_LOAD_SHARED(sb_pring_at(r, proc)->prod.tail);
}

bool statebus_predict_applied(const struct statebus_region *r, uint32_t proc, uint64_t pos)
{
	if (proc >= r->hdr->max_procs)
		return true;
	uint64_t head = __atomic_load_n(&sb_pring_at(r, proc)->cons.head, __ATOMIC_ACQUIRE);
	return head - pos < (UINT64_C(1) << 63); /* head ≥ pos, free-running */
}

int statebus_predict_worker_read(const struct statebus_region *r, uint32_t worker,
				 struct statebus_predict_worker *out)
{
	if (worker >= r->hdr->max_workers || out == NULL)
		return SY_EINVAL;
	const struct sb_pred_worker *pw = sb_pworker_at(r, worker);
	*out = (struct statebus_predict_worker){
		.worker_gen = CMM_LOAD_SHARED(pw->gen),
		.cache_signal = CMM_LOAD_SHARED(pw->cache_signal),
		.capacity_blocks = CMM_LOAD_SHARED(pw->capacity_blocks),
		.blocks = CMM_LOAD_SHARED(pw->blocks),
		.predicted = CMM_LOAD_SHARED(pw->predicted),
		.confirmed = CMM_LOAD_SHARED(pw->confirmed),
		.expired = CMM_LOAD_SHARED(pw->expired),
		.evicted = CMM_LOAD_SHARED(pw->evicted),
		.removed = CMM_LOAD_SHARED(pw->removed)};
	return SY_OK;
}

void statebus_predict_stats(const struct statebus_region *r, struct statebus_predict_stats *out)
{
	const struct statebus_hdr *h = r->hdr;
	memset(out, 0, sizeof(*out));
	out->rings = h->max_procs;
	out->ring_words = STATEBUS_PREDICT_RING_WORDS;
	out->entries_capacity = pool_cap(r);
	out->entries_used = CMM_LOAD_SHARED(h->index.pe_used);
	for (uint32_t p = 0; p < h->max_procs; p++) {
		const struct sb_pring *q = sb_pring_at(r, p);
		out->pushed += CMM_LOAD_SHARED(q->prod.pushed);
		out->ring_full += CMM_LOAD_SHARED(q->prod.full);
		out->truncated += CMM_LOAD_SHARED(q->prod.truncated);
	}
	out->drained = CMM_LOAD_SHARED(h->predict.drained);
	out->applied = CMM_LOAD_SHARED(h->predict.applied);
	out->stale = CMM_LOAD_SHARED(h->predict.stale);
	out->malformed = CMM_LOAD_SHARED(h->predict.malformed);
	out->pool_full = CMM_LOAD_SHARED(h->index.pe_pool_full);
	out->lag_ns_sum = CMM_LOAD_SHARED(h->predict.lag_ns_sum);
	out->lag_ns_max = CMM_LOAD_SHARED(h->predict.lag_ns_max);
}
