/* apply.c — decoded events → the radix index; LoadStat → the load table.
 *
 * The only caller of the index write API (statebus.h, [writer]): every call
 * site is here. Medium → tiers (sglang-wire.md §7, ingest.c): a store with
 * an unknown medium is dropped and counted; "CPU" is taken as HOST and
 * counted; a remove with a missing or unknown medium clears every tier.
 * AllBlocksCleared clears the rank and makes the stream trusted again.
 * Every event of an applied batch is tallied per (event type, medium)
 * (sbd_tally_counter; dropped unknown-medium stores included).
 * An index error (pool exhausted, bad arguments) is counted, never fatal.
 *
 * vLLM workers (rec.engine): BlockStored is re-hashed from its token_ids
 * onto the router's chain and stored under the own ids, BlockRemoved is
 * translated through the engine id → own id map, and every clear of a rank
 * or worker also clears its map entries (vllm.h). An event that cannot be
 * re-hashed is counted by its reason and skipped; a map entry evicted for
 * room is un-indexed, so no block stays indexed that could not be removed.
 */
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "sbd.h"
#include "statebus-counters.h"

static void index_error(struct sbd *d, struct sbd_worker *w, uint32_t k, const char *what, int rc)
{
	statebus_counter_add(d->r, STATEBUS_CTR_KV_INDEX_ERRORS, 1);
	sy_debug("index %s for %s rank %u: %s", what, w->rec.id, k, sy_strerror(rc));
}

static void vmap_evicted(void *ctx, const struct sbd_vmap_entry *e)
{
	struct sbd *d = ctx;
	int64_t own = sy_blockhash_id(&e->digest);
	(void)statebus_index_remove(d->r, e->worker, e->rank, &own, 1, e->tiers);
	statebus_counter_add(d->r, STATEBUS_CTR_VLLM_MAP_EVICTIONS, 1);
}

int sbd_apply_init(struct sbd *d)
{
	int rc = sbd_vmap_init(&d->vmap, (uint32_t)d->cfg.statebus.vllm_map_blocks);
	d->vmap.on_evict = vmap_evicted;
	d->vmap.evict_ctx = d;
	return rc;
}

static const unsigned vllm_verdict_counter[] = {
	[SBD_VLLM_NO_TOKENS] = STATEBUS_CTR_VLLM_TOKENS_MISSING,
	[SBD_VLLM_TOKENS_MISMATCH] = STATEBUS_CTR_VLLM_TOKENS_MISMATCH,
	[SBD_VLLM_PARENT_UNKNOWN] = STATEBUS_CTR_VLLM_PARENT_UNKNOWN,
	[SBD_VLLM_OTHER_GROUP] = STATEBUS_CTR_VLLM_OTHER_GROUP,
	[SBD_VLLM_BAD_EXTRA] = STATEBUS_CTR_VLLM_BAD_EXTRA,
};

static void vllm_verdict(struct sbd *d, struct sbd_worker *w, uint32_t k, int v)
{
	if (v < 0) {
		index_error(d, w, k, "vLLM map", v);
		return;
	}
	if (v > 0 && (size_t)v < sizeof(vllm_verdict_counter) / sizeof(vllm_verdict_counter[0]))
		statebus_counter_add(d->r, vllm_verdict_counter[v], 1);
}

/* vLLM BlockStored: re-hash, map, store under the own ids. */
static void vllm_store(struct sbd *d, struct sbd_worker *w, uint32_t k,
		       const struct sbd_kv_event *e, uint32_t tiers, uint64_t now)
{
	uint32_t bs = w->rec.kv_block_size ? w->rec.kv_block_size
		      : e->block_size > 0 && e->block_size <= (1 << 20) ? (uint32_t)e->block_size : 0;
	if (bs == 0) {
		statebus_counter_add(d->r, STATEBUS_CTR_VLLM_TOKENS_MISMATCH, 1);
		return;
	}
	struct sbd_vllm_store st;
	int v = sbd_vllm_rehash(&d->vmap, &d->vscr, w->slot, k, e, bs, tiers, &st);
	if (v != SBD_VLLM_OK) {
		vllm_verdict(d, w, k, v);
		return;
	}
	statebus_counter_add(d->r, STATEBUS_CTR_VLLM_REHASHED_BLOCKS, st.n);
	int rc = statebus_index_store(d->r, w->slot, k, st.has_parent, st.parent, st.ids, st.n,
				      tiers, now);
	if (rc != SY_OK)
		index_error(d, w, k, "store", rc);
}

/* vLLM BlockRemoved: engine ids → own ids through the map. */
static void vllm_remove(struct sbd *d, struct sbd_worker *w, uint32_t k,
			const struct sbd_kv_event *e, uint32_t tiers)
{
	const int64_t *ids;
	uint32_t n, unknown;
	int v = sbd_vllm_remove(&d->vmap, &d->vscr, w->slot, k, e, tiers, &ids, &n, &unknown);
	if (v != SBD_VLLM_OK) {
		vllm_verdict(d, w, k, v);
		return;
	}
	statebus_counter_add(d->r, STATEBUS_CTR_VLLM_REMOVE_UNKNOWN, unknown);
	if (n == 0)
		return;
	int rc = statebus_index_remove(d->r, w->slot, k, ids, n, tiers);
	if (rc != SY_OK)
		index_error(d, w, k, "remove", rc);
}

void sbd_apply_batch(struct sbd *d, struct sbd_worker *w, uint32_t k,
		     const struct sbd_kv_batch *b, uint64_t now)
{
	struct sbd_rank *rk = &w->ranks[k];
	for (uint32_t i = 0; i < b->n_events; i++) {
		const struct sbd_kv_event *e = &b->events[i];
		statebus_counter_add(d->r, sbd_tally_counter(e), 1);
		if (e->medium == SBD_MEDIUM_CPU)
			statebus_counter_add(d->r, STATEBUS_CTR_KV_MEDIUM_CPU, 1);
		int rc = SY_OK;
		switch (e->type) {
		case SBD_EV_STORED: {
			uint32_t tiers = sbd_store_tiers(e->medium);
			if (tiers == 0) {
				statebus_counter_add(d->r, STATEBUS_CTR_KV_UNKNOWN_MEDIUM_STORES, 1);
				continue;
			}
			if (e->n_hashes == 0)
				break;
			if (w->rec.engine == STATEBUS_ENGINE_VLLM) {
				vllm_store(d, w, k, e, tiers, now);
				break;
			}
			rc = statebus_index_store(d->r, w->slot, k, e->has_parent, e->parent, e->hashes,
						  e->n_hashes, tiers, now);
			if (rc != SY_OK)
				index_error(d, w, k, "store", rc);
			break;
		}
		case SBD_EV_REMOVED:
			if (e->n_hashes == 0)
				break;
			if (w->rec.engine == STATEBUS_ENGINE_VLLM) {
				vllm_remove(d, w, k, e, sbd_remove_tiers(e->medium));
				break;
			}
			rc = statebus_index_remove(d->r, w->slot, k, e->hashes, e->n_hashes,
						   sbd_remove_tiers(e->medium));
			if (rc != SY_OK)
				index_error(d, w, k, "remove", rc);
			break;
		case SBD_EV_CLEARED:
			sbd_apply_clear_rank(d, w, k);
			sbd_seq_cleared(&rk->st);
			break;
		}
		rk->st.events++;
	}
	statebus_counter_add(d->r, STATEBUS_CTR_KV_EVENTS, b->n_events);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_BATCHES, 1);
	rk->dirty = true;
}

void sbd_apply_clear_rank(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	int rc = statebus_index_clear_rank(d->r, w->slot, k);
	if (rc != SY_OK)
		index_error(d, w, k, "clear", rc);
	(void)sbd_vmap_clear(&d->vmap, w->slot, k);
}

void sbd_apply_clear_worker(struct sbd *d, uint32_t slot)
{
	(void)sbd_vmap_clear(&d->vmap, slot, UINT32_MAX);
	int rc = statebus_index_clear_worker(d->r, slot);
	if (rc != SY_OK) {
		statebus_counter_add(d->r, STATEBUS_CTR_KV_INDEX_ERRORS, 1);
		sy_warn("index clear of worker slot %u: %s", slot, sy_strerror(rc));
	}
}

void sbd_apply_reset(struct sbd *d)
{
	(void)sbd_vmap_clear(&d->vmap, UINT32_MAX, UINT32_MAX);
	(void)statebus_index_reset(d->r); /* also bumps the index incarnation */
}

void sbd_apply_load(struct sbd *d, struct sbd_worker *w, uint32_t k, const uint8_t *payload,
		    size_t len, uint64_t now)
{
	struct sbd_load_stat s;
	int rc = sbd_load_decode(payload, len, &s);
	if (rc != SY_OK) {
		statebus_counter_add(d->r, STATEBUS_CTR_LOAD_DECODE_FAILURES, 1);
		sy_debug("LoadStat from %s rank %u: %s", w->rec.id, k, sy_strerror(rc));
		return;
	}
	if (s.partial_v3)
		statebus_counter_add(d->r, STATEBUS_CTR_LOAD_PARTIAL_V3, 1);
	struct statebus_load_report rep;
	sbd_load_report(&s, now, &w->ranks[k].load_prev, &rep);
	rc = statebus_load_write(d->r, w->slot, w->gen, k, &rep);
	if (rc == SY_OK)
		statebus_counter_add(d->r, STATEBUS_CTR_LOAD_REPORTS, 1);
}

void sbd_scrape_result(struct sbd *d, const struct sbd_http_result *res)
{
	if (res->slot >= d->n_slots || !d->w[res->slot].used || d->w[res->slot].gen != res->gen)
		return;
	struct sbd_worker *w = &d->w[res->slot];
	w->scrape_inflight = false;
	uint64_t t0 = sy_mono_ns();
	struct sbd_vllm_metrics *m = malloc(sizeof(*m));
	int rc = res->ok && m ? sbd_vllm_metrics_parse(res->body, res->len, m) : SY_EIO;
	if (rc != SY_OK) {
		statebus_counter_add(d->r, STATEBUS_CTR_LOAD_SCRAPE_FAILURES, 1);
		sy_debug("scrape of %s/metrics: %s", w->rec.id,
			 res->ok ? "no vllm:num_requests_* samples" : res->error);
		free(m);
		return;
	}
	uint32_t written = 0;
	for (uint32_t k = 0; k < w->rec.dp_size; k++) {
		struct statebus_load_report rep;
		if (!sbd_vllm_metrics_report(m, k, t0, &rep))
			continue;
		if (statebus_load_write(d->r, w->slot, w->gen, k, &rep) == SY_OK)
			written++;
	}
	free(m);
	if (written == 0)
		statebus_counter_add(d->r, STATEBUS_CTR_LOAD_SCRAPE_FAILURES, 1);
	else
		statebus_counter_add(d->r, STATEBUS_CTR_LOAD_SCRAPES, 1);
	uint64_t apply_ns = sy_mono_ns() - t0;
	d->scrapes++;
	d->scrape_http_us += res->total_us;
	d->scrape_apply_ns += apply_ns;
	sy_debug("scrape of %s/metrics: %zu bytes, %u of %u ranks, HTTP %llu us, parse+write %llu "
		 "ns (mean over %llu scrapes: HTTP %llu us, parse+write %llu ns)",
		 w->rec.id, res->len, written, (unsigned)w->rec.dp_size,
		 (unsigned long long)res->total_us, (unsigned long long)apply_ns,
		 (unsigned long long)d->scrapes, (unsigned long long)(d->scrape_http_us / d->scrapes),
		 (unsigned long long)(d->scrape_apply_ns / d->scrapes));
}
