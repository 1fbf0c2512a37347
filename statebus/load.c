/* load.c — the load table: one 64-byte seqlock record per (worker, DP rank).
 *
 * Record = struct sb_load_rec (sb-int.h), exactly one cache line, holding
 * the last SGLang LoadStat (V3 extension included, sglang-wire.md §12) of a
 * rank, the monotonic receive time, the worker generation it belongs to and
 * the worker's summed dispatch counter at receipt. The single writer goes
 * odd → write → even; readers retry a bounded number of times and report a
 * record still odd (writer killed mid-update, or preempted for long) as
 * SY_ESTALE — unknown, never valid data. The next writer lock clears such
 * records (sb_load_repair).
 *
 * Aggregation follows SGLang's EngineReportedLoadTable (§13): a worker is
 * fresh only if every expected rank is fresh — never a sum over the fresh
 * subset — and an unknown worker has no numbers, not zeros.
 */
#include <string.h>

#include "sb-int.h"
#include "statebus-queue.h"

uint32_t statebus_load_max_ranks(const struct statebus_region *r)
{
	return r->hdr->max_dp_ranks;
}

static void rec_clear(struct sb_load_rec *rec)
{
	uint32_t s = sb_seq_write_begin(&rec->seq);
	memset((uint8_t *)rec + sizeof(rec->seq), 0, sizeof(*rec) - sizeof(rec->seq));
	sb_seq_write_end(&rec->seq, s);
}

int statebus_load_write(struct statebus_region *r, uint32_t slot, uint32_t gen, uint32_t rank,
			const struct statebus_load_report *rep)
{
	sb_assert_writer(r);
	if (slot >= r->hdr->max_workers || rank >= r->hdr->max_dp_ranks || rep == NULL)
		return SY_EINVAL;
	const struct sb_worker_rec *w = sb_worker_at(r, slot);
	if (w->w.state == STATEBUS_WORKER_FREE || w->w.generation != gen)
		return SY_ENOENT;
	if (rank >= w->w.dp_size)
		return SY_EINVAL;
	uint64_t dispatches = sb_inflight_dispatches(r, slot);
	struct sb_load_rec *rec = sb_load_at(r, slot, rank);
	uint32_t s = sb_seq_write_begin(&rec->seq);
	rec->flags = rep->flags | STATEBUS_LOAD_HAS_REPORT;
	rec->num_running_reqs = rep->num_running_reqs;
	rec->num_waiting_reqs = rep->num_waiting_reqs;
	rec->num_tokens = rep->num_tokens;
	rec->max_total_num_tokens = rep->max_total_num_tokens;
	rec->num_waiting_uncached_tokens = rep->num_waiting_uncached_tokens;
	rec->num_total_tokens = rep->num_total_tokens;
	rec->max_running_requests = rep->max_running_requests;
	rec->prefill_tokens_per_s = rep->prefill_tokens_per_s;
	rec->worker_gen = gen;
	rec->recv_mono_ns = rep->recv_mono_ns;
	rec->dispatches_at_recv = dispatches;
	sb_seq_write_end(&rec->seq, s);
	(void)statebus_queue_wake(r, STATEBUS_QUEUE_WRITER); /* a fresh load report */
	return SY_OK;
}

/* Seqlock copy of one record; SY_OK, SY_ENOENT (no report), SY_ESTALE. */
static int rec_read(const struct sb_load_rec *rec, struct statebus_load_report *out)
{
	for (int i = 0; i < SB_SEQ_RETRIES; i++) {
		uint32_t s;
		if (!sb_seq_read_begin(&rec->seq, &s)) {
			caa_cpu_relax();
			continue;
		}
		out->flags = rec->flags;
		out->num_running_reqs = rec->num_running_reqs;
		out->num_waiting_reqs = rec->num_waiting_reqs;
		out->num_tokens = rec->num_tokens;
		out->max_total_num_tokens = rec->max_total_num_tokens;
		out->num_waiting_uncached_tokens = rec->num_waiting_uncached_tokens;
		out->num_total_tokens = rec->num_total_tokens;
		out->max_running_requests = rec->max_running_requests;
		out->prefill_tokens_per_s = rec->prefill_tokens_per_s;
		out->worker_gen = rec->worker_gen;
		out->recv_mono_ns = rec->recv_mono_ns;
		out->dispatches_at_recv = rec->dispatches_at_recv;
		if (sb_seq_read_retry(&rec->seq, s))
			continue;
		return (out->flags & STATEBUS_LOAD_HAS_REPORT) ? SY_OK : SY_ENOENT;
	}
	memset(out, 0, sizeof(*out));
	return SY_ESTALE;
}

int statebus_load_read_rank(const struct statebus_region *r, uint32_t slot, uint32_t rank,
			    struct statebus_load_report *out)
{
	if (slot >= r->hdr->max_workers || rank >= r->hdr->max_dp_ranks || out == NULL)
		return SY_EINVAL;
	return rec_read(sb_load_at(r, slot, rank), out);
}

static int view_unknown(struct statebus_load_view *out, uint32_t reason, int rc)
{
	uint32_t dp = out->dp_size, gen = out->worker_gen;
	memset(out, 0, sizeof(*out));
	out->status = STATEBUS_LOAD_UNKNOWN;
	out->reason = reason;
	out->dp_size = dp;
	out->worker_gen = gen;
	return rc;
}

int statebus_load_view(const struct statebus_region *r, uint32_t slot, uint64_t now_ns,
		       struct statebus_load_view *out)
{
	if (slot >= r->hdr->max_workers || out == NULL)
		return SY_EINVAL;
	memset(out, 0, sizeof(*out));
	struct statebus_worker_head w;
	int rc = statebus_worker_head_read(r, slot, &w);
	if (rc == SY_ESTALE)
		return view_unknown(out, STATEBUS_LOAD_REASON_TORN, SY_ESTALE);
	if (rc != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
		return view_unknown(out, STATEBUS_LOAD_REASON_NO_WORKER, SY_ENOENT);
	out->dp_size = w.dp_size;
	out->worker_gen = w.generation;
	bool native = true, tput = true, scraped = true;
	double usage = 0;
	uint64_t oldest = UINT64_MAX;
	for (uint32_t k = 0; k < w.dp_size; k++) {
		struct statebus_load_report rep;
		rc = rec_read(sb_load_at(r, slot, k), &rep);
		if (rc == SY_ESTALE)
			return view_unknown(out, STATEBUS_LOAD_REASON_TORN, SY_ESTALE);
		if (rc != SY_OK || rep.worker_gen != w.generation)
			return view_unknown(out, STATEBUS_LOAD_REASON_MISSING, SY_ESTALE);
		if (now_ns >= rep.recv_mono_ns && now_ns - rep.recv_mono_ns > r->fresh_ns)
			return view_unknown(out, STATEBUS_LOAD_REASON_STALE, SY_ESTALE);
		out->num_running_reqs += rep.num_running_reqs;
		out->num_waiting_reqs += rep.num_waiting_reqs;
		out->num_tokens += rep.num_tokens;
		out->max_total_num_tokens += rep.max_total_num_tokens;
		if (rep.flags & STATEBUS_LOAD_SCRAPED)
			usage += rep.scraped.kv_usage_ppm / 1e6;
		else
			scraped = false;
		if (!(rep.flags & STATEBUS_LOAD_HAS_V3) || rep.max_total_num_tokens == 0 ||
		    rep.max_running_requests == 0)
			native = false;
		out->num_waiting_uncached_tokens += rep.num_waiting_uncached_tokens;
		out->num_total_tokens += rep.num_total_tokens;
		out->max_running_requests += rep.max_running_requests;
		if (!(rep.flags & STATEBUS_LOAD_HAS_THROUGHPUT) || !(rep.prefill_tokens_per_s > 0))
			tput = false;
		else
			out->prefill_tokens_per_s += rep.prefill_tokens_per_s;
		if (rep.recv_mono_ns < oldest) {
			oldest = rep.recv_mono_ns;
			out->dispatches_at_capture = rep.dispatches_at_recv;
		}
	}
	if (!native) {
		out->num_waiting_uncached_tokens = 0;
		out->num_total_tokens = 0;
		out->max_running_requests = 0;
	}
	if (!tput)
		out->prefill_tokens_per_s = 0;
	out->native = native;
	out->scraped = scraped && w.dp_size > 0;
	out->kv_usage = out->scraped ? usage / w.dp_size : 0;
	out->has_throughput = tput;
	out->captured_at_ns = oldest;
	out->status = STATEBUS_LOAD_FRESH;
	out->reason = STATEBUS_LOAD_REASON_NONE;
	return SY_OK;
}

int statebus_load_clear_worker(struct statebus_region *r, uint32_t slot)
{
	sb_assert_writer(r);
	if (slot >= r->hdr->max_workers)
		return SY_EINVAL;
	for (uint32_t k = 0; k < r->hdr->max_dp_ranks; k++) {
		struct sb_load_rec *rec = sb_load_at(r, slot, k);
		if (CMM_LOAD_SHARED(rec->seq) & 1u)
			continue; /* repaired by sb_load_repair */
		if (rec->flags != 0)
			rec_clear(rec);
	}
	return SY_OK;
}

int sb_load_repair(struct statebus_region *r)
{
	int n = 0;
	uint64_t count = (uint64_t)r->hdr->max_workers * r->hdr->max_dp_ranks;
	struct sb_load_rec *recs = sb_table(r, SB_T_LOAD);
	for (uint64_t i = 0; i < count; i++) {
		struct sb_load_rec *rec = &recs[i];
		uint32_t s = CMM_LOAD_SHARED(rec->seq);
		if ((s & 1u) == 0)
			continue;
		memset((uint8_t *)rec + sizeof(rec->seq), 0, sizeof(*rec) - sizeof(rec->seq));
		cmm_smp_wmb();
		CMM_STORE_SHARED(rec->seq, s + 1);
		n++;
	}
	return n;
}
