/* loadstat.c — msgpack encoding of the SGLang LoadStat V3 report. */
#include "tools/mock-engine/loadstat.h"

#include "common/errors.h"

int loadstat_encode(const struct loadstat *ls, msgpack_sbuffer *out)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
	int rc = 0;
	rc |= msgpack_pack_array(&pk, 11);
	rc |= msgpack_pack_str(&pk, 8);
	rc |= msgpack_pack_str_body(&pk, "LoadStat", 8);
	rc |= msgpack_pack_int64(&pk, ls->running);
	rc |= msgpack_pack_int64(&pk, ls->waiting);
	rc |= msgpack_pack_int64(&pk, ls->num_tokens);
	rc |= msgpack_pack_int64(&pk, ls->max_total_num_tokens);
	if (ls->rank < 0)
		rc |= msgpack_pack_nil(&pk);
	else
		rc |= msgpack_pack_int(&pk, ls->rank);
	rc |= msgpack_pack_int64(&pk, ls->waiting_uncached);
	rc |= msgpack_pack_int64(&pk, ls->total_tokens);
	rc |= msgpack_pack_int64(&pk, ls->max_running);
	rc |= msgpack_pack_int64(&pk, ls->total_prefill_uncached);
	rc |= msgpack_pack_int64(&pk, ls->total_prefill_busy_us);
	return rc ? SY_ENOMEM : 0;
}

bool loadstat_equal(const struct loadstat *a, const struct loadstat *b)
{
	return a->running == b->running && a->waiting == b->waiting &&
	       a->num_tokens == b->num_tokens &&
	       a->max_total_num_tokens == b->max_total_num_tokens && a->rank == b->rank &&
	       a->waiting_uncached == b->waiting_uncached && a->total_tokens == b->total_tokens &&
	       a->max_running == b->max_running &&
	       a->total_prefill_uncached == b->total_prefill_uncached &&
	       a->total_prefill_busy_us == b->total_prefill_busy_us;
}
