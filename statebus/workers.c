/* workers.c — the workers table: fixed slots of seqlock-protected records.
 *
 * Each slot holds {seq, struct statebus_worker}. The single writer (writer
 * lock held) changes a record between seq odd and seq even; readers copy the
 * record and retry while seq was odd or moved, up to SB_SEQ_RETRIES, then
 * report SY_ESTALE (a writer killed mid-update leaves seq odd forever until
 * the next writer lock repairs it: the record is then freed with a new
 * generation, so a half-written worker is never taken as valid).
 *
 * Invariants:
 * - generation changes every time a FREE slot becomes ACTIVE (add), so
 *   (slot, generation) names one worker for the life of the region;
 * - at most one non-FREE slot holds a given ID (add checks under the lock);
 * - dp_size is 1..max_dp_ranks for every non-FREE record;
 * - strings of every even record are NUL-terminated.
 */
#include <ctype.h>
#include <string.h>

#include "common/url.h"
#include "sb-int.h"
#include "statebus-queue.h"

uint32_t statebus_workers_capacity(const struct statebus_region *r)
{
	return r->hdr->max_workers;
}

int statebus_worker_id_normalise(const char *url, char *out, size_t cap)
{
	if (url == NULL || out == NULL || cap == 0)
		return SY_EINVAL;
	/* One normaliser for the whole project (common/url.c): the config
	 * loader, routers and the statebus must agree on worker IDs. */
	const char *why = NULL;
	int n = sy_url_normalize(url, strlen(url), out, cap, &why);
	if (n == SY_ENOSPC)
		return SY_ERANGE;
	return n < 0 ? n : SY_OK;
}

/* Copies the facts of w into the record (not id, state, generation), with
 * every string terminated. */
static void copy_facts(struct statebus_worker *dst, const struct statebus_worker *w)
{
	memcpy(dst->model, w->model, sizeof(dst->model));
	dst->model[sizeof(dst->model) - 1] = '\0';
	dst->role = w->role;
	dst->healthy = w->healthy;
	dst->kv_bigram = w->kv_bigram;
	dst->has_cache_signal = w->has_cache_signal;
	dst->dp_size = w->dp_size ? w->dp_size : 1;
	dst->bootstrap_port = w->bootstrap_port;
	dst->kv_block_size = w->kv_block_size;
	dst->kv_port_base = w->kv_port_base;
	dst->kv_replay_port_base = w->kv_replay_port_base;
	dst->load_port_base = w->load_port_base;
	dst->kv_rejected = w->kv_rejected;
	dst->engine = w->engine;
	memcpy(dst->kv_endpoint_host, w->kv_endpoint_host, sizeof(dst->kv_endpoint_host));
	dst->kv_endpoint_host[sizeof(dst->kv_endpoint_host) - 1] = '\0';
	memcpy(dst->kv_topic, w->kv_topic, sizeof(dst->kv_topic));
	dst->kv_topic[sizeof(dst->kv_topic) - 1] = '\0';
	dst->health_failures = w->health_failures;
	dst->health_checked_ns = w->health_checked_ns;
	/* an adapter list always ends: its last two bytes are NULs */
	memcpy(dst->lora_adapters, w->lora_adapters, sizeof(dst->lora_adapters));
	dst->lora_adapters[sizeof(dst->lora_adapters) - 2] = '\0';
	dst->lora_adapters[sizeof(dst->lora_adapters) - 1] = '\0';
}

static bool dp_ok(const struct statebus_region *r, const struct statebus_worker *w)
{
	return w->dp_size <= r->hdr->max_dp_ranks;
}

/* Writer-side lookup of (slot, gen); records are stable under the lock. */
static struct sb_worker_rec *writer_rec(struct statebus_region *r, uint32_t slot, uint32_t gen, int *rc)
{
	sb_assert_writer(r);
	if (slot >= r->hdr->max_workers) {
		*rc = SY_EINVAL;
		return NULL;
	}
	struct sb_worker_rec *rec = sb_worker_at(r, slot);
	if (rec->w.state == STATEBUS_WORKER_FREE || rec->w.generation != gen) {
		*rc = SY_ENOENT;
		return NULL;
	}
	*rc = SY_OK;
	return rec;
}

int statebus_worker_add(struct statebus_region *r, const struct statebus_worker *w,
			uint32_t *slot, uint32_t *gen)
{
	sb_assert_writer(r);
	if (w == NULL || w->id[0] == '\0' || memchr(w->id, '\0', sizeof(w->id)) == NULL || !dp_ok(r, w))
		return SY_EINVAL;
	int64_t free_slot = -1;
	for (uint32_t i = 0; i < r->hdr->max_workers; i++) {
		struct sb_worker_rec *rec = sb_worker_at(r, i);
		if (rec->w.state == STATEBUS_WORKER_FREE) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (strcmp(rec->w.id, w->id) == 0) {
			if (slot)
				*slot = i;
			if (gen)
				*gen = rec->w.generation;
			return SY_EEXIST;
		}
	}
	if (free_slot < 0)
		return SY_ENOSPC;
	uint32_t i = (uint32_t)free_slot;
	statebus_load_clear_worker(r, i);
	statebus_streams_clear_worker(r, i);
	statebus_inflight_zero_worker(r, i);
	struct sb_worker_rec *rec = sb_worker_at(r, i);
	uint32_t s = sb_seq_write_begin(&rec->seq);
	uint32_t g = rec->w.generation + 1;
	memset(&rec->w, 0, sizeof(rec->w));
	memcpy(rec->w.id, w->id, sizeof(rec->w.id));
	copy_facts(&rec->w, w);
	rec->w.generation = g;
	sb_health_reset(r, i, g);
	rec->w.state = STATEBUS_WORKER_ACTIVE;
	sb_seq_write_end(&rec->seq, s);
	(void)statebus_queue_wake(r, STATEBUS_QUEUE_WRITER); /* a new candidate */
	if (slot)
		*slot = i;
	if (gen)
		*gen = g;
	return SY_OK;
}

int statebus_worker_update(struct statebus_region *r, uint32_t slot, uint32_t gen,
			   const struct statebus_worker *w)
{
	int rc;
	struct sb_worker_rec *rec = writer_rec(r, slot, gen, &rc);
	if (rec == NULL)
		return rc;
	if (w == NULL || !dp_ok(r, w))
		return SY_EINVAL;
	uint32_t s = sb_seq_write_begin(&rec->seq);
	copy_facts(&rec->w, w);
	sb_seq_write_end(&rec->seq, s);
	return SY_OK;
}

int statebus_worker_set_health(struct statebus_region *r, uint32_t slot, uint32_t gen,
			       bool healthy, uint64_t checked_ns, uint32_t failures)
{
	int rc;
	struct sb_worker_rec *rec = writer_rec(r, slot, gen, &rc);
	if (rec == NULL)
		return rc;
	bool up = healthy && !rec->w.healthy;
	uint32_t s = sb_seq_write_begin(&rec->seq);
	rec->w.healthy = healthy ? 1 : 0;
	rec->w.health_checked_ns = checked_ns;
	rec->w.health_failures = failures;
	sb_seq_write_end(&rec->seq, s);
	if (up)
		(void)statebus_queue_wake(r, STATEBUS_QUEUE_WRITER); /* a candidate back */
	return SY_OK;
}

/* Sets the state of the record (slot, gen) under its seqlock; errors as
 * writer_rec(). The generation is kept (bumped on reuse). */
static int write_state(struct statebus_region *r, uint32_t slot, uint32_t gen,
		       enum statebus_worker_state state)
{
	int rc;
	struct sb_worker_rec *rec = writer_rec(r, slot, gen, &rc);
	if (rec == NULL)
		return rc;
	uint32_t s = sb_seq_write_begin(&rec->seq);
	rec->w.state = state;
	sb_seq_write_end(&rec->seq, s);
	return SY_OK;
}

int statebus_worker_mark_removing(struct statebus_region *r, uint32_t slot, uint32_t gen)
{
	return write_state(r, slot, gen, STATEBUS_WORKER_REMOVING);
}

int statebus_worker_remove(struct statebus_region *r, uint32_t slot, uint32_t gen)
{
	int rc = write_state(r, slot, gen, STATEBUS_WORKER_FREE);
	if (rc != SY_OK)
		return rc;
	sb_health_reset(r, slot, 0);
	statebus_load_clear_worker(r, slot);
	statebus_streams_clear_worker(r, slot);
	return SY_OK;
}

/* Seqlock snapshot of slot `slot` (bounded retries): the whole record into
 * `full`, or only its head fields into `head` (exactly one is non-NULL).
 * Errors as statebus_worker_read; on SY_ESTALE the output is zeroed. */
static int worker_snapshot(const struct statebus_region *r, uint32_t slot,
			   struct statebus_worker *full, struct statebus_worker_head *head)
{
	if (slot >= r->hdr->max_workers)
		return SY_EINVAL;
	const struct sb_worker_rec *rec = sb_worker_at(r, slot);
	const struct statebus_worker *src = full != NULL ? full : &rec->w;
	for (int i = 0; i < SB_SEQ_RETRIES; i++) {
		uint32_t s;
		if (!sb_seq_read_begin(&rec->seq, &s)) {
			caa_cpu_relax();
			continue;
		}
		if (full != NULL)
			memcpy(full, &rec->w, sizeof(*full));
		struct statebus_worker_head h = {
			.state = src->state, .generation = src->generation, .dp_size = src->dp_size};
		char id_end = src->id[sizeof(src->id) - 1];
		if (sb_seq_read_retry(&rec->seq, s))
			continue;
		if (head != NULL)
			*head = h;
		if (h.state == STATEBUS_WORKER_FREE)
			return SY_ENOENT;
		/* Invariant of every even record; a violation is corruption. */
		if (id_end != '\0' || h.dp_size == 0 || h.dp_size > r->hdr->max_dp_ranks)
			break;
		return SY_OK;
	}
	if (full != NULL)
		memset(full, 0, sizeof(*full));
	if (head != NULL)
		memset(head, 0, sizeof(*head));
	return SY_ESTALE;
}

int statebus_worker_read(const struct statebus_region *r, uint32_t slot, struct statebus_worker *out)
{
	return worker_snapshot(r, slot, out, NULL);
}

int statebus_worker_head_read(const struct statebus_region *r, uint32_t slot,
			      struct statebus_worker_head *out)
{
	return worker_snapshot(r, slot, NULL, out);
}

int statebus_worker_find(const struct statebus_region *r, const char *id, uint32_t *slot, uint32_t *gen)
{
	struct statebus_worker w;
	for (uint32_t i = 0; i < r->hdr->max_workers; i++) {
		if (CMM_LOAD_SHARED(sb_worker_at(r, i)->w.state) == STATEBUS_WORKER_FREE)
			continue;
		if (statebus_worker_read(r, i, &w) != SY_OK || strcmp(w.id, id) != 0)
			continue;
		if (slot)
			*slot = i;
		if (gen)
			*gen = w.generation;
		return SY_OK;
	}
	return SY_ENOENT;
}

bool statebus_worker_valid(const struct statebus_region *r, uint32_t slot, uint32_t gen)
{
	if (slot >= r->hdr->max_workers)
		return false;
	const struct sb_worker_rec *rec = sb_worker_at(r, slot);
	for (int i = 0; i < SB_SEQ_RETRIES; i++) {
		uint32_t s;
		if (!sb_seq_read_begin(&rec->seq, &s)) {
			caa_cpu_relax();
			continue;
		}
		uint32_t state = CMM_LOAD_SHARED(rec->w.state);
		uint32_t g = CMM_LOAD_SHARED(rec->w.generation);
		if (sb_seq_read_retry(&rec->seq, s))
			continue;
		return state == STATEBUS_WORKER_ACTIVE && g == gen;
	}
	return false;
}

int sb_workers_repair(struct statebus_region *r)
{
	int n = 0;
	for (uint32_t i = 0; i < r->hdr->max_workers; i++) {
		struct sb_worker_rec *rec = sb_worker_at(r, i);
		uint32_t s = CMM_LOAD_SHARED(rec->seq);
		if ((s & 1u) == 0)
			continue;
		/* Half-written: free it under a new generation; the statebus
		 * re-adds the worker from its sources. */
		uint32_t g = rec->w.generation + 1;
		memset(&rec->w, 0, sizeof(rec->w));
		rec->w.generation = g;
		cmm_smp_wmb();
		CMM_STORE_SHARED(rec->seq, s + 1);
		sb_health_reset(r, i, 0);
		statebus_load_clear_worker(r, i);
		statebus_streams_clear_worker(r, i);
		n++;
	}
	return n;
}
