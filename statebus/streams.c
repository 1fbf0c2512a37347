/* streams.c — the KV-event streams table: one seqlock record per
 * (worker slot, DP rank) with the receiver-sequencing state of that stream
 * (sglang-wire.md §9): cursor, gaps, missing, resets, skipped, decode
 * failures, untrusted flag, last receive time.
 *
 * The statebus keeps the authoritative state in process memory and
 * publishes a copy here after each change, so readers (`syctl streams`, a
 * router's /metrics) see consistent per-stream values without ever
 * blocking the writer. A record with worker_gen 0 is unused.
 */
#include <string.h>

#include "sb-int.h"

static bool in_range(const struct statebus_region *r, uint32_t slot, uint32_t rank)
{
	return slot < r->hdr->max_workers && rank < r->hdr->max_dp_ranks;
}

int statebus_stream_write(struct statebus_region *r, uint32_t slot, uint32_t rank,
			  const struct statebus_stream *s)
{
	sb_assert_writer(r);
	if (!in_range(r, slot, rank) || s == NULL)
		return SY_EINVAL;
	struct sb_stream_rec *rec = sb_stream_at(r, slot, rank);
	uint32_t q = sb_seq_write_begin(&rec->seq);
	memcpy(&rec->s, s, sizeof(rec->s));
	sb_seq_write_end(&rec->seq, q);
	return SY_OK;
}

int statebus_stream_read(const struct statebus_region *r, uint32_t slot, uint32_t rank,
			 struct statebus_stream *out)
{
	if (!in_range(r, slot, rank) || out == NULL)
		return SY_EINVAL;
	const struct sb_stream_rec *rec = sb_stream_at(r, slot, rank);
	for (int i = 0; i < SB_SEQ_RETRIES; i++) {
		uint32_t q;
		if (!sb_seq_read_begin(&rec->seq, &q))
			continue;
		memcpy(out, (const void *)&rec->s, sizeof(*out));
		if (sb_seq_read_retry(&rec->seq, q))
			continue;
		return out->worker_gen == 0 ? SY_ENOENT : SY_OK;
	}
	memset(out, 0, sizeof(*out));
	return SY_ESTALE;
}

int statebus_streams_clear_worker(struct statebus_region *r, uint32_t slot)
{
	sb_assert_writer(r);
	if (slot >= r->hdr->max_workers)
		return SY_EINVAL;
	for (uint32_t k = 0; k < r->hdr->max_dp_ranks; k++) {
		struct sb_stream_rec *rec = sb_stream_at(r, slot, k);
		if (rec->s.worker_gen == 0)
			continue;
		uint32_t q = sb_seq_write_begin(&rec->seq);
		memset(&rec->s, 0, sizeof(rec->s));
		sb_seq_write_end(&rec->seq, q);
	}
	return SY_OK;
}

int sb_streams_repair(struct statebus_region *r)
{
	int n = 0;
	uint64_t count = (uint64_t)r->hdr->max_workers * r->hdr->max_dp_ranks;
	struct sb_stream_rec *recs = sb_table(r, SB_T_STREAMS);
	for (uint64_t i = 0; i < count; i++) {
		uint32_t q = CMM_LOAD_SHARED(recs[i].seq);
		if ((q & 1u) == 0)
			continue;
		memset(&recs[i].s, 0, sizeof(recs[i].s));
		cmm_smp_wmb();
		CMM_STORE_SHARED(recs[i].seq, q + 1);
		n++;
	}
	return n;
}
