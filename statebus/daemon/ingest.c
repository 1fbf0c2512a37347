/* ingest.c — LoadStat → load record, medium → tiers (see ingest.h). */
#include <string.h>

#include "common/errors.h"
#include "ingest.h"
#include "statebus-counters.h"
#include "statebus.h"

static uint32_t sat32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

void sbd_load_report(const struct sbd_load_stat *s, uint64_t now_ns, struct sbd_load_prev *prev,
		     struct statebus_load_report *out)
{
	memset(out, 0, sizeof(*out));
	out->flags = STATEBUS_LOAD_HAS_REPORT;
	out->num_running_reqs = sat32(s->num_running_reqs);
	out->num_waiting_reqs = sat32(s->num_waiting_reqs);
	out->num_tokens = sat32(s->num_tokens);
	out->max_total_num_tokens = sat32(s->max_total_num_tokens);
	out->recv_mono_ns = now_ns;
	if (!s->v3) {
		prev->valid = false;
		return;
	}
	out->flags |= STATEBUS_LOAD_HAS_V3;
	out->num_waiting_uncached_tokens = sat32(s->num_waiting_uncached_tokens);
	out->num_total_tokens = sat32(s->num_total_tokens);
	out->max_running_requests = sat32(s->max_running_requests);
	if (prev->valid && s->total_prefill_uncached_tokens > prev->uncached &&
	    s->total_prefill_busy_us > prev->busy_us) {
		double du = (double)(s->total_prefill_uncached_tokens - prev->uncached);
		double db = (double)(s->total_prefill_busy_us - prev->busy_us);
		out->prefill_tokens_per_s = (float)(1e6 * du / db);
		out->flags |= STATEBUS_LOAD_HAS_THROUGHPUT;
	}
	/* Counters that went backwards (engine restart) just become the new
	 * baseline: no throughput from this pair. */
	prev->valid = true;
	prev->uncached = s->total_prefill_uncached_tokens;
	prev->busy_us = s->total_prefill_busy_us;
}

uint32_t sbd_store_tiers(int medium)
{
	switch (medium) {
	case SBD_MEDIUM_ABSENT:
	case SBD_MEDIUM_GPU: return STATEBUS_TIER_DEVICE;
	case SBD_MEDIUM_CPU_PINNED:
	case SBD_MEDIUM_CPU: return STATEBUS_TIER_HOST;
	case SBD_MEDIUM_DISK: return STATEBUS_TIER_DISK;
	case SBD_MEDIUM_EXTERNAL: return STATEBUS_TIER_EXTERNAL;
	default: return 0;
	}
}

uint32_t sbd_remove_tiers(int medium)
{
	uint32_t t = medium == SBD_MEDIUM_ABSENT ? 0 : sbd_store_tiers(medium);
	return t ? t : STATEBUS_TIER_ALL;
}

unsigned sbd_tally_counter(const struct sbd_kv_event *e)
{
	unsigned type = e->type == SBD_EV_STORED    ? STATEBUS_TALLY_STORED
			: e->type == SBD_EV_REMOVED ? STATEBUS_TALLY_REMOVED
						    : STATEBUS_TALLY_CLEARED;
	unsigned medium;
	switch (type == STATEBUS_TALLY_CLEARED ? SBD_MEDIUM_ABSENT : e->medium) {
	case SBD_MEDIUM_ABSENT: medium = STATEBUS_TALLY_UNTAGGED; break;
	case SBD_MEDIUM_GPU: medium = STATEBUS_TALLY_GPU; break;
	case SBD_MEDIUM_CPU_PINNED:
	case SBD_MEDIUM_CPU: medium = STATEBUS_TALLY_CPU_PINNED; break;
	case SBD_MEDIUM_DISK: medium = STATEBUS_TALLY_DISK; break;
	case SBD_MEDIUM_EXTERNAL: medium = STATEBUS_TALLY_EXTERNAL; break;
	default: medium = STATEBUS_TALLY_UNKNOWN; break;
	}
	return statebus_kv_tally_counter(type, medium);
}
