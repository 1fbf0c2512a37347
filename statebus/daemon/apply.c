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
 */
#include "common/log.h"
#include "sbd.h"
#include "statebus-counters.h"

static void index_error(struct sbd *d, struct sbd_worker *w, uint32_t k, const char *what, int rc)
{
	statebus_counter_add(d->r, STATEBUS_CTR_KV_INDEX_ERRORS, 1);
	sy_debug("index %s for %s rank %u: %s", what, w->rec.id, k, sy_strerror(rc));
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
			rc = statebus_index_store(d->r, w->slot, k, e->has_parent, e->parent, e->hashes,
						  e->n_hashes, tiers, now);
			if (rc != SY_OK)
				index_error(d, w, k, "store", rc);
			break;
		}
		case SBD_EV_REMOVED:
			if (e->n_hashes == 0)
				break;
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
}

void sbd_apply_clear_worker(struct sbd *d, uint32_t slot)
{
	int rc = statebus_index_clear_worker(d->r, slot);
	if (rc != SY_OK) {
		statebus_counter_add(d->r, STATEBUS_CTR_KV_INDEX_ERRORS, 1);
		sy_warn("index clear of worker slot %u: %s", slot, sy_strerror(rc));
	}
}

void sbd_apply_reset(struct sbd *d)
{
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
