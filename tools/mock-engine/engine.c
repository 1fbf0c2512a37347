/* engine.c — ranks, request lifecycle and the timing model (see engine.h).
 *
 * Timing: each rank has one serial prefill timeline (`prefill_free_at`):
 * an admitted request's prefill starts when the previous prefill ends and
 * lasts uncached_tokens × prefill_us; decoding is per request in parallel
 * (continuous batching), output token i ready at prefill_end + (i+1) ×
 * decode_us. With zero costs a request completes inside the tick that
 * admitted it.
 */
#include "tools/mock-engine/engine.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "tools/mock-engine/respond.h"
#include "tools/mock-engine/tok.h"

#define container_of(p, T, m) ((T *)((char *)(p) - offsetof(T, m)))

#define STREAM_STEP_TOKENS 4096      /* streamed tokens emitted per decode step at most */
#define STREAM_BACKLOG_BYTES (1 << 20) /* unsent SSE bytes at which a stream pauses */

static void schedule(struct mock_rank *rk);
static void decode_step(struct mock_timer *t);

/* ---- request memory ------------------------------------------------------ */

static void unlink_waiting(struct mreq *r)
{
	struct mock_rank *rk = r->rank;
	if (r->qprev)
		r->qprev->qnext = r->qnext;
	else
		rk->wait_head = r->qnext;
	if (r->qnext)
		r->qnext->qprev = r->qprev;
	else
		rk->wait_tail = r->qprev;
	r->qnext = r->qprev = NULL;
	rk->n_waiting--;
	rk->waiting_uncached -= r->est_uncached;
}

/* SGLang `cache_finished_req`: when a request finishes (or is aborted while
 * decoding) the radix cache inserts (prompt ids + output ids)[:prompt +
 * generated − 1], page-aligned — the last output token was sampled but
 * never run forward, so it has no KV. The mock's output token i is a word;
 * its ids are the tokenizer's ids of words 0..generated−2, tokenized as one
 * text and appended to the prompt ids. That is what a follow-up chat turn
 * contains after `<|im_start|>assistant\n` (the reply as content), so turn 2
 * hits beyond turn 1's prompt. Exact for `bytes` (byte ids do not depend on
 * context); with a BPE tokenizer the boundary token may differ from an
 * in-context tokenization, as retokenized replies do on a real engine.
 * New whole pages go through mock_cache_insert (evictions, BlockStored with
 * the last prompt page as parent, coalescing); r->hashes/r->locked then
 * describe the longer sequence so that release unlocks all of it. */
static void cache_output(struct mreq *r)
{
	struct mock_engine *e = r->eng;
	struct mock_rank *rk = r->rank;
	if (r->generated < 2)
		return;
	struct sbuf text = {0};
	for (int i = 0; i < r->generated - 1; i++) {
		size_t l;
		const char *w = textgen_word(r->seed, i, &l);
		sbuf_put(&text, w, l);
	}
	uint32_t *out = NULL, *all = NULL;
	size_t n_out = 0;
	struct mock_pages pg = {0};
	int rc = text.oom ? SY_ENOMEM : mock_tok_text(&e->tok, text.p, text.n, &out, &n_out);
	size_t n = r->n_tokens + n_out;
	if (rc == 0 && !(all = malloc((n ? n : 1) * sizeof(*all))))
		rc = SY_ENOMEM;
	if (rc == 0) {
		memcpy(all, r->tokens, r->n_tokens * sizeof(*all));
		memcpy(all + r->n_tokens, out, n_out * sizeof(*all));
		rc = mock_tok_pages_seeded(all, n, e->cfg.block_size, e->cfg.bigram,
					   mock_lora_seed(e, r->lora), &pg);
	}
	if (rc == 0 && pg.n > r->n_pages) {
		rk->batch.cur_lora = r->lora;
		r->locked = mock_cache_insert(rk->cache, pg.hashes, pg.n, r->locked,
					      pg.tokens ? pg.tokens : all, pg.tok_per_page,
					      &rk->batch);
		/* pg.hashes[0..n_pages) == r->hashes: a page id depends only on
		 * the tokens before and in it */
		int64_t *t = r->hashes;
		r->hashes = pg.hashes;
		pg.hashes = t;
		r->n_pages = pg.n;
	}
	if (rc)
		sy_warn("request %" PRIu64 ": output tokens not cached (%s)", r->id, sy_strerror(rc));
	mock_tok_pages_free(&pg);
	free(all);
	free(out);
	sbuf_free(&text);
}

/* Frees a running request's slot and pages (caching its output first when
 * it was decoding). */
static void release_running(struct mreq *r)
{
	struct mock_rank *rk = r->rank;
	if (r->state == MS_DECODE)
		cache_output(r);
	mock_cache_release(rk->cache, r->hashes, r->locked);
	r->locked = 0;
	rk->n_running--;
	rk->tokens_reqs -= (int64_t)r->n_tokens + r->max_tokens;
	rk->kick = true;
}

static void mreq_dispose(void *p)
{
	struct mreq *r = p;
	struct mock_engine *e = r->eng;
	mock_timer_cancel(&e->timers, &r->timer);
	switch (r->state) {
	case MS_QUEUED:
		unlink_waiting(r);
		r->rank->tokens_reqs -= (int64_t)r->n_tokens + r->max_tokens;
		e->stats.client_aborts++;
		break;
	case MS_PD_WAIT:
		mock_pd_cancel(r);
		r->rank->n_pd_wait--;
		e->stats.client_aborts++;
		break;
	case MS_PREFILL:
	case MS_DECODE:
		release_running(r);
		e->stats.client_aborts++;
		break;
	default:
		break;
	}
	r->state = MS_DONE;
	r->req = NULL;
	free(r->tokens);
	free(r->hashes);
	free(r->page_tokens);
	sbuf_free(&r->out);
	sbuf_free(&r->inflight);
	sbuf_free(&r->gen_text);
}

const struct sy_blockhash_digest *mock_lora_seed(const struct mock_engine *e, int lora)
{
	return lora > 0 && lora <= e->cfg.n_lora ? &e->lora_seed[lora - 1] : NULL;
}

struct mreq *mreq_new(struct mock_engine *e, h2o_req_t *req)
{
	struct mreq *r = h2o_mem_alloc_shared(&req->pool, sizeof(*r), mreq_dispose);
	memset(r, 0, sizeof(*r));
	r->eng = e;
	r->req = req;
	r->id = ++e->next_id;
	r->t_arrival = sy_mono_us();
	r->state = MS_NEW;
	return r;
}

static void add_header(h2o_req_t *req, const h2o_token_t *tok, const char *v)
{
	h2o_add_header(&req->pool, &req->res.headers, tok, NULL, v, strlen(v));
}

/* h2o keeps pointers to header values: copy `v` into the request's pool. */
static void add_header_str(h2o_req_t *req, const char *name, const char *v)
{
	h2o_iovec_t c = h2o_strdup(&req->pool, v, strlen(v));
	h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, c.base,
			      c.len);
}

void mreq_fail(struct mreq *r, int status, const char *type, const char *msg)
{
	h2o_req_t *req = r->req;
	if (!req || r->started)
		return;
	struct sbuf b = {0};
	respond_error_body(&b, status, type, msg);
	req->res.status = status;
	req->res.reason = status == 400 ? "Bad Request" : status == 404 ? "Not Found"
						   : status == 503 ? "Service Unavailable"
								   : "Internal Server Error";
	add_header(req, H2O_TOKEN_CONTENT_TYPE, "application/json");
	r->state = MS_DONE;
	r->req = NULL;
	h2o_send_inline(req, b.oom ? "{}" : b.p, b.oom ? 2 : b.n);
	sbuf_free(&b);
}

/* ---- streaming ----------------------------------------------------------- */

static void stream_flush(struct mreq *r);

static void on_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct mreq *r = container_of(g, struct mreq, gen);
	r->sending = false;
	r->inflight.n = 0;
	stream_flush(r);
}

static void on_stop(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct mreq *r = container_of(g, struct mreq, gen);
	r->req = NULL; /* dispose follows; nothing may be sent any more */
}

static void stream_start(struct mreq *r, const char *ctype)
{
	h2o_req_t *req = r->req;
	req->res.status = 200;
	req->res.reason = "OK";
	add_header(req, H2O_TOKEN_CONTENT_TYPE, ctype);
	add_header(req, H2O_TOKEN_CACHE_CONTROL, "no-cache");
	char v[32];
	snprintf(v, sizeof(v), "%zu", r->cached_tokens);
	add_header_str(req, "x-mock-cached-tokens", v);
	snprintf(v, sizeof(v), "%d", r->rank->idx);
	add_header_str(req, "x-mock-rank", v);
	r->gen.proceed = on_proceed;
	r->gen.stop = on_stop;
	r->started = true;
	h2o_start_response(req, &r->gen);
}

/* Sends what is pending when no send is in flight. A final send (end of
 * stream, or an injected drop) ends the request's use of req. */
static void stream_flush(struct mreq *r)
{
	h2o_req_t *req = r->req;
	if (!req || r->sending)
		return;
	bool last = r->final_pending;
	if (r->out.n == 0 && !last)
		return;
	struct sbuf t = r->inflight;
	r->inflight = r->out;
	r->out = t;
	r->out.n = 0;
	h2o_iovec_t iov = h2o_iovec_init(r->inflight.p, r->inflight.n);
	if (last && r->dropped && iov.len) {
		/* send the data first, the error on the next proceed */
		r->sending = true;
		h2o_send(req, &iov, 1, H2O_SEND_STATE_IN_PROGRESS);
		return;
	}
	if (last) {
		r->req = NULL;
		h2o_send(req, &iov, iov.len ? 1 : 0,
			 r->dropped ? H2O_SEND_STATE_ERROR : H2O_SEND_STATE_FINAL);
		return;
	}
	r->sending = true;
	h2o_send(req, &iov, 1, H2O_SEND_STATE_IN_PROGRESS);
}

/* ---- lifecycle ----------------------------------------------------------- */

static void record_stats(struct mreq *r, uint64_t now)
{
	struct mock_req_stat st = {
		.id = r->id,
		.rank = r->rank->idx,
		.prompt_tokens = r->n_tokens,
		.cached_tokens = r->cached_tokens,
		.completion_tokens = (uint64_t)r->generated,
		.queue_us = r->t_admit - r->t_arrival,
		.ttft_us = (r->t_first ? r->t_first : now) - r->t_arrival,
		.e2e_us = now - r->t_arrival,
	};
	mock_stats_finish(&r->eng->stats, &st);
	r->rank->hit_prompt_tokens += st.prompt_tokens;
	r->rank->prom_prompt_tokens += st.prompt_tokens;
	r->rank->prom_generation_tokens += st.completion_tokens;
	r->rank->prom_requests++;
	r->rank->hit_cached_tokens += st.cached_tokens;
}

static void finish(struct mreq *r)
{
	struct mock_engine *e = r->eng;
	uint64_t now = sy_mono_us();
	release_running(r);
	record_stats(r, now);
	r->state = MS_DONE;
	if (!r->req)
		return;
	if (r->stream) {
		respond_stream_tail(r, &r->out);
		r->final_pending = true;
		stream_flush(r);
		return;
	}
	struct sbuf b = {0};
	respond_full_body(r, &b);
	h2o_req_t *req = r->req;
	if (e->faults.drop_after_tokens > 0 && b.n > 1) {
		/* non-streaming drop: advertise the length, send half, then cut */
		e->stats.dropped_streams++;
		req->res.content_length = b.n;
		stream_start(r, "application/json");
		sbuf_put(&r->out, b.p, b.n / 2);
		r->dropped = true;
		r->final_pending = true;
		sbuf_free(&b);
		stream_flush(r);
		return;
	}
	req->res.status = 200;
	req->res.reason = "OK";
	add_header(req, H2O_TOKEN_CONTENT_TYPE, "application/json");
	char v[32];
	snprintf(v, sizeof(v), "%zu", r->cached_tokens);
	add_header_str(req, "x-mock-cached-tokens", v);
	snprintf(v, sizeof(v), "%d", r->rank->idx);
	add_header_str(req, "x-mock-rank", v);
	r->req = NULL;
	h2o_send_inline(req, b.oom ? "{}" : b.p, b.oom ? 2 : b.n);
	sbuf_free(&b);
}

static void emit_token(struct mreq *r, uint64_t when)
{
	int i = r->generated;
	if (r->kind == MREQ_GENERATE || !r->stream) {
		size_t l;
		const char *w = textgen_word(r->seed, i, &l);
		if (r->kind == MREQ_GENERATE)
			sbuf_put(&r->gen_text, w, l);
	}
	if (r->stream)
		respond_stream_token(r, i, &r->out);
	if (i == 0)
		r->t_first = when;
	r->generated++;
}

static void decode_step(struct mock_timer *t)
{
	struct mreq *r = container_of(t, struct mreq, timer);
	struct mock_engine *e = r->eng;
	uint64_t now = sy_mono_us();
	uint64_t dus = e->cfg.decode_us;
	int due = r->max_tokens;
	if (dus) {
		uint64_t k = now >= r->t_prefill_end ? (now - r->t_prefill_end) / dus : 0;
		if (k < (uint64_t)due)
			due = (int)k;
	}
	if (!r->stream) {
		if (due < r->max_tokens) {
			mock_timer_arm(&e->timers, &r->timer,
				       r->t_prefill_end + (uint64_t)r->max_tokens * dus, decode_step);
			return;
		}
		r->generated = r->max_tokens;
		r->t_first = r->t_prefill_end + dus;
		finish(r);
		return;
	}
	/* A reader that does not keep up: hold the tokens back (bounded memory
	 * per stream) and look again in 1 ms. */
	if (r->sending && r->out.n >= STREAM_BACKLOG_BYTES) {
		mock_timer_arm(&e->timers, &r->timer, now + 1000, decode_step);
		return;
	}
	/* At most STREAM_STEP_TOKENS per step, so that a huge max_tokens at zero
	 * decode cost cannot hold the loop (the rest follows next turn). */
	bool more = false;
	if (due - r->generated > STREAM_STEP_TOKENS) {
		due = r->generated + STREAM_STEP_TOKENS;
		more = true;
	}
	while (r->generated < due) {
		emit_token(r, r->t_prefill_end + (uint64_t)(r->generated + 1) * dus);
		int drop = e->faults.drop_after_tokens;
		if (drop > 0 && r->generated >= drop && r->generated < r->max_tokens) {
			e->stats.dropped_streams++;
			r->dropped = true;
			r->final_pending = true;
			release_running(r);
			record_stats(r, now);
			r->state = MS_DONE;
			stream_flush(r);
			return;
		}
	}
	if (r->generated >= r->max_tokens) {
		finish(r);
		return;
	}
	stream_flush(r);
	uint64_t next = r->t_prefill_end + (uint64_t)(r->generated + 1) * dus;
	if (more) /* after `now`: mock_timers_run() must not fire it again this turn */
		next = now + 1;
	mock_timer_arm(&e->timers, &r->timer, next, decode_step);
}

static void prefill_done(struct mock_timer *t)
{
	struct mreq *r = container_of(t, struct mreq, timer);
	struct mock_engine *e = r->eng;
	struct mock_rank *rk = r->rank;
	rk->batch.cur_lora = r->lora;
	r->locked = mock_cache_insert(rk->cache, r->hashes, r->n_pages, r->locked,
				      r->page_tokens ? r->page_tokens : r->tokens,
				      r->tok_per_page, &rk->batch);
	if (e->cfg.pd_mode == MOCK_PD_PREFILL && r->has_room)
		mock_pd_prefill_done(e, r->room);
	r->state = MS_DECODE;
	if (r->stream && r->req) {
		stream_start(r, "text/event-stream");
		respond_stream_head(r, &r->out);
	}
	decode_step(&r->timer);
}

/* Pages a prompt may match: SGLang matches the prefix of its first n - 1
 * tokens only (the last token is always computed: it yields the logits), so a
 * page-aligned prompt never hits on its last page (schedule_batch.py,
 * init_next_round_input: max_prefix_len = input_len - 1). */
static size_t match_pages(const struct mreq *r)
{
	if (r->n_tokens == 0)
		return 0;
	size_t p = mock_tok_full_pages(r->n_tokens - 1, r->eng->cfg.block_size, r->eng->cfg.bigram);
	return p < r->n_pages ? p : r->n_pages;
}

static void admit(struct mreq *r)
{
	struct mock_engine *e = r->eng;
	struct mock_rank *rk = r->rank;
	uint64_t now = sy_mono_us();
	unlink_waiting(r);
	rk->n_running++;
	if (rk->n_running > e->stats.peak_running)
		e->stats.peak_running = rk->n_running;
	r->t_admit = now;
	r->locked = mock_cache_acquire(rk->cache, r->hashes, match_pages(r));
	size_t cached = r->locked * e->cfg.block_size;
	r->cached_tokens = cached < r->n_tokens ? cached : r->n_tokens;
	uint64_t uncached = r->n_tokens - r->cached_tokens;
	/* A decode engine receives the KV from the prefill: no prefill cost. */
	uint64_t cost = e->cfg.pd_mode == MOCK_PD_DECODE ? 0 : uncached * e->cfg.prefill_us;
	uint64_t start = rk->prefill_free_at > now ? rk->prefill_free_at : now;
	r->t_prefill_end = start + cost;
	if (cost)
		rk->prefill_free_at = r->t_prefill_end;
	if (e->cfg.pd_mode != MOCK_PD_DECODE) {
		rk->total_prefill_uncached += (int64_t)uncached;
		rk->total_prefill_busy_us += (int64_t)cost;
	}
	r->state = MS_PREFILL;
	if (r->t_prefill_end <= now)
		prefill_done(&r->timer);
	else
		mock_timer_arm(&e->timers, &r->timer, r->t_prefill_end, prefill_done);
}

static void schedule(struct mock_rank *rk)
{
	while (rk->wait_head && rk->n_running < rk->eng->cfg.max_running)
		admit(rk->wait_head);
}

static void enqueue(struct mreq *r)
{
	struct mock_engine *e = r->eng;
	struct mock_rank *rk = r->rank;
	r->state = MS_QUEUED;
	size_t m = mock_cache_match(rk->cache, r->hashes, match_pages(r)) * e->cfg.block_size;
	r->est_uncached = m < r->n_tokens ? (int64_t)(r->n_tokens - m) : 0;
	r->qprev = rk->wait_tail;
	r->qnext = NULL;
	if (rk->wait_tail)
		rk->wait_tail->qnext = r;
	else
		rk->wait_head = r;
	rk->wait_tail = r;
	rk->n_waiting++;
	rk->waiting_uncached += r->est_uncached;
	if (rk->n_waiting + rk->n_pd_wait > e->stats.peak_waiting)
		e->stats.peak_waiting = rk->n_waiting + rk->n_pd_wait;
	rk->kick = true;
}

void mreq_pd_ready(struct mreq *r)
{
	r->rank->n_pd_wait--;
	r->rank->tokens_reqs += (int64_t)r->n_tokens + r->max_tokens;
	enqueue(r);
}

void mreq_pd_timeout(struct mreq *r)
{
	r->rank->n_pd_wait--;
	r->eng->stats.pd_timeouts++;
	char msg[160];
	snprintf(msg, sizeof(msg), "KV transfer timed out: no prefill for bootstrap_room %" PRIu64,
		 r->room);
	mreq_fail(r, 500, "InternalServerError", msg);
}

static void after_stall(struct mock_timer *t)
{
	struct mreq *r = container_of(t, struct mreq, timer);
	if (r->eng->cfg.pd_mode == MOCK_PD_DECODE && r->has_room) {
		r->state = MS_PD_WAIT;
		r->rank->n_pd_wait++;
		mock_pd_wait(r);
		return;
	}
	r->rank->tokens_reqs += (int64_t)r->n_tokens + r->max_tokens;
	enqueue(r);
}

static uint64_t rng_next(struct mock_engine *e)
{
	uint64_t x = e->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	e->rng = x;
	return x;
}

/* Up to `cap` bytes of v with spaces and control bytes as '_'. */
static size_t log_field(char *dst, size_t cap, const char *v, size_t n)
{
	if (n > cap)
		n = cap;
	for (size_t i = 0; i < n; i++)
		dst[i] = (unsigned char)v[i] <= ' ' || v[i] == 0x7f ? '_' : v[i];
	return n;
}

void mock_engine_log_request(struct mock_engine *e, h2o_req_t *req)
{
	if (e->request_log_fd < 0)
		return;
	char line[512];
	uint64_t ns = sy_wall_ns();
	int n = snprintf(line, sizeof(line), "%" PRIu64 ".%06" PRIu64 " %d ", ns / 1000000000u,
			 ns / 1000u % 1000000u, e->cfg.port);
	size_t w = n > 0 ? (size_t)n : 0;
	ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
	if (i >= 0 && req->headers.entries[i].value.len > 0)
		w += log_field(line + w, 128, req->headers.entries[i].value.base,
			       req->headers.entries[i].value.len);
	else
		line[w++] = '-';
	line[w++] = ' ';
	w += log_field(line + w, 256, req->path.base, req->path.len);
	line[w++] = '\n';
	if (write(e->request_log_fd, line, w) != (ssize_t)w)
		sy_warn("--request-log: short write");
}

void mock_engine_submit(struct mreq *r)
{
	struct mock_engine *e = r->eng;
	e->stats.requests++;
	if (e->faults.fail_rate > 0 &&
	    (double)(rng_next(e) >> 11) / 9007199254740992.0 < e->faults.fail_rate) {
		e->stats.injected_failures++;
		mreq_fail(r, 500, "InternalServerError", "mock: injected failure (--fail-rate)");
		return;
	}
	int dp = e->cfg.dp_size;
	int rank = -1;
	ssize_t hi = h2o_find_header_by_str(&r->req->headers, H2O_STRLIT("x-data-parallel-rank"), -1);
	if (hi >= 0) {
		h2o_iovec_t v = r->req->headers.entries[hi].value;
		char tmp[16];
		size_t l = v.len < sizeof(tmp) - 1 ? v.len : sizeof(tmp) - 1;
		memcpy(tmp, v.base, l);
		tmp[l] = 0;
		char *end;
		long x = strtol(tmp, &end, 10);
		if (end != tmp && x >= 0 && x < dp)
			rank = (int)x;
	}
	if (rank < 0)
		rank = r->has_room ? (int)(r->room % (uint64_t)dp) : (int)(e->rr++ % (unsigned)dp);
	r->rank = &e->ranks[rank];
	if (e->faults.stall_ms > 0) {
		r->state = MS_STALL;
		mock_timer_arm(&e->timers, &r->timer, r->t_arrival + (uint64_t)e->faults.stall_ms * 1000,
			       after_stall);
		return;
	}
	after_stall(&r->timer);
}

/* ---- publishing ---------------------------------------------------------- */

void mock_rank_loadstat(const struct mock_rank *rk, struct loadstat *ls)
{
	const struct mock_config *c = &rk->eng->cfg;
	size_t bs = c->block_size;
	*ls = (struct loadstat){
		.running = rk->n_running,
		.waiting = rk->n_waiting + rk->n_pd_wait,
		.num_tokens = (int64_t)(mock_cache_pages(rk->cache) * bs),
		.max_total_num_tokens = (int64_t)(mock_cache_capacity_pages(rk->cache) * bs),
		.rank = rk->idx,
		.waiting_uncached = rk->waiting_uncached,
		.total_tokens = rk->tokens_reqs,
		.max_running = c->max_running,
		.total_prefill_uncached = rk->total_prefill_uncached,
		.total_prefill_busy_us = rk->total_prefill_busy_us,
	};
}

/* Publishes the delayed batches due at `now` (µs), in order. */
static void send_delayed(struct mock_rank *rk, uint64_t now)
{
	while (rk->dq_head != NULL && rk->dq_head->due_us <= now) {
		struct mock_delayed *x = rk->dq_head;
		rk->dq_head = x->next;
		if (rk->dq_head == NULL)
			rk->dq_tail = NULL;
		mock_pub_send(&rk->kv, x->data, x->len);
		free(x);
	}
}

/* Publishes an encoded batch now, or queues a copy for now + the delay
 * (out of memory: published now, logged). */
static void publish_kv(struct mock_rank *rk, const char *data, size_t len, uint64_t now)
{
	int delay = rk->eng->cfg.kv_event_delay_ms;
	struct mock_delayed *x = delay > 0 ? malloc(sizeof(*x) + len) : NULL;
	if (x == NULL) {
		if (delay > 0)
			sy_error("rank %d: out of memory delaying a KV event batch; sent now", rk->idx);
		send_delayed(rk, UINT64_MAX); /* keep the order */
		mock_pub_send(&rk->kv, data, len);
		return;
	}
	x->next = NULL;
	x->due_us = now + (uint64_t)delay * 1000u;
	x->len = len;
	memcpy(x->data, data, len);
	if (rk->dq_tail)
		rk->dq_tail->next = x;
	else
		rk->dq_head = x;
	rk->dq_tail = x;
}

static void flush_rank(struct mock_rank *rk, uint64_t now)
{
	struct mock_engine *e = rk->eng;
	if (rk->batch.n) {
		if (rk->has_kv) {
			msgpack_sbuffer sb;
			msgpack_sbuffer_init(&sb);
			if (kvev_encode(&rk->batch, sy_wall_seconds(), rk->idx, e->cfg.encoding, &sb) == 0)
				publish_kv(rk, sb.data, sb.size, now);
			else
				sy_error("rank %d: out of memory encoding a KV event batch", rk->idx);
			msgpack_sbuffer_destroy(&sb);
		}
		kvev_batch_reset(&rk->batch);
	}
	if (rk->has_load) {
		struct loadstat ls;
		mock_rank_loadstat(rk, &ls);
		if (!rk->ls_sent || !loadstat_equal(&ls, &rk->last_ls) ||
		    now - rk->last_ls_us >= (uint64_t)e->cfg.load_interval_ms * 1000) {
			msgpack_sbuffer sb;
			msgpack_sbuffer_init(&sb);
			if (loadstat_encode(&ls, &sb) == 0)
				mock_pub_send(&rk->load, sb.data, sb.size);
			msgpack_sbuffer_destroy(&sb);
			rk->last_ls = ls;
			rk->last_ls_us = now;
			rk->ls_sent = true;
		}
	}
	if (rk->has_kv) {
		send_delayed(rk, now);
		mock_pub_replay_poll(&rk->kv);
	}
}

void mock_engine_tick(struct mock_engine *e)
{
	mock_timers_run(&e->timers, sy_mono_us());
	for (int pass = 0; pass < 4; pass++) {
		bool any = false;
		for (int i = 0; i < e->cfg.dp_size; i++) {
			struct mock_rank *rk = &e->ranks[i];
			if (rk->kick) {
				rk->kick = false;
				any = true;
				schedule(rk);
			}
		}
		if (!any)
			break;
	}
	uint64_t now = sy_mono_us();
	for (int i = 0; i < e->cfg.dp_size; i++) {
		e->ranks[i].kv.skip_every = e->faults.skip_seq_every;
		flush_rank(&e->ranks[i], now);
	}
}

int32_t mock_engine_wait_ms(struct mock_engine *e)
{
	for (int i = 0; i < e->cfg.dp_size; i++)
		if (e->ranks[i].kick)
			return 0;
	uint64_t now = sy_mono_us(), next = mock_timers_next(&e->timers);
	for (int i = 0; i < e->cfg.dp_size; i++)
		if (e->ranks[i].dq_head != NULL && e->ranks[i].dq_head->due_us < next)
			next = e->ranks[i].dq_head->due_us;
	int32_t cap = 100;
	if (next == UINT64_MAX)
		return cap;
	if (next <= now)
		return 0;
	uint64_t ms = (next - now + 999) / 1000;
	return ms < (uint64_t)cap ? (int32_t)ms : cap;
}

int mock_engine_flush_cache(struct mock_engine *e)
{
	for (int i = 0; i < e->cfg.dp_size; i++)
		if (e->ranks[i].n_running || e->ranks[i].n_waiting)
			return SY_EBUSY;
	for (int i = 0; i < e->cfg.dp_size; i++) {
		struct mock_rank *rk = &e->ranks[i];
		int rc = mock_cache_clear(rk->cache, &rk->batch);
		if (rc)
			return rc;
	}
	return 0;
}

void mock_engine_restart_events(struct mock_engine *e, bool sentinel, bool keep_cache)
{
	for (int i = 0; i < e->cfg.dp_size; i++) {
		struct mock_rank *rk = &e->ranks[i];
		flush_rank(rk, sy_mono_us()); /* events so far belong to the old stream */
		if (rk->has_kv)
			send_delayed(rk, UINT64_MAX);
		if (!keep_cache)
			(void)mock_cache_clear(rk->cache, NULL);
		if (rk->has_kv)
			mock_pub_reset(&rk->kv, sentinel);
	}
}

/* ---- set-up -------------------------------------------------------------- */

static void on_replay_readable(h2o_socket_t *sock, const char *err)
{
	(void)err;
	struct mock_rank *rk = sock->data;
	mock_pub_replay_poll(&rk->kv);
}

int mock_engine_init(struct mock_engine *e, const struct mock_config *cfg, h2o_evloop_t *loop)
{
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	e->loop = loop;
	e->faults = (struct mock_faults){cfg->fail_rate, cfg->stall_ms, cfg->drop_after_tokens,
					 cfg->skip_seq_every};
	e->rng = cfg->seed ? cfg->seed : 0x2545F4914F6CDD1Dull;
	e->started_wall_s = sy_wall_ns() / 1000000000u - sy_mono_us() / 1000000u;
	e->request_log_fd = -1;
	if (cfg->request_log != NULL) {
		e->request_log_fd =
			open(cfg->request_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (e->request_log_fd < 0) {
			sy_error("--request-log %s: cannot open it for appending", cfg->request_log);
			return SY_EIO;
		}
	}
	int rc = mock_tok_init(&e->tok, cfg->tokenizer, cfg->tokenizer_path);
	if (rc) {
		sy_error("tokenizer '%s' is not supported by this build", cfg->tokenizer);
		return rc;
	}
	for (int i = 0; i < cfg->n_lora; i++)
		sy_blockhash_lora_seed(cfg->lora[i], strlen(cfg->lora[i]), &e->lora_seed[i]);
	struct sbuf mj = {0};
	sbuf_json_str(&mj, cfg->model, strlen(cfg->model));
	e->model_json = (char *)sbuf_cstr(&mj);
	e->zctx = zmq_ctx_new();
	e->ranks = calloc((size_t)cfg->dp_size, sizeof(*e->ranks));
	if (!e->model_json || !e->zctx || !e->ranks)
		return SY_ENOMEM;
	for (int i = 0; i < cfg->dp_size; i++) {
		struct mock_rank *rk = &e->ranks[i];
		rk->idx = i;
		rk->eng = e;
		rk->cache = mock_cache_create(cfg->cache_tokens, cfg->block_size);
		if (!rk->cache)
			return SY_ENOMEM;
		rk->batch.medium = cfg->medium;
		rk->batch.lora_names = e->cfg.lora;
		rk->batch.vllm_seed = cfg->seed;
		if (cfg->kv_port > 0) {
			rc = mock_pub_open(&rk->kv, e->zctx, cfg->host, cfg->kv_port + i,
					   cfg->replay_port > 0 ? cfg->replay_port + i : 0, cfg->topic,
					   100000, 1000, cfg->replay_buffer_steps, cfg->replay_frames);
			if (rc)
				return rc;
			rk->has_kv = true;
			int fd = mock_pub_replay_fd(&rk->kv);
			if (fd >= 0) {
				h2o_socket_t *s = h2o_evloop_socket_create(loop, dup(fd),
									   H2O_SOCKET_FLAG_DONT_READ);
				s->data = rk;
				h2o_socket_read_start(s, on_replay_readable);
				rk->replay_watch = s;
			}
		}
		if (cfg->load_port > 0) {
			rc = mock_pub_open(&rk->load, e->zctx, cfg->host, cfg->load_port + i, 0, "load", 8,
					   0, 0, 4);
			if (rc)
				return rc;
			rk->has_load = true;
		}
	}
	return mock_pd_init(e);
}

void mock_engine_shutdown(struct mock_engine *e)
{
	for (int i = 0; i < e->cfg.dp_size; i++) {
		struct mock_rank *rk = &e->ranks[i];
		flush_rank(rk, sy_mono_us());
		if (rk->has_kv)
			send_delayed(rk, UINT64_MAX);
		if (rk->replay_watch)
			h2o_socket_close(rk->replay_watch); /* closes the dup, not zmq's fd */
		if (rk->has_kv) {
			mock_pub_reset(&rk->kv, true); /* END_SEQ: publisher going away */
			mock_pub_close(&rk->kv);
		}
		if (rk->has_load)
			mock_pub_close(&rk->load);
	}
	mock_pd_close(e);
	mock_tok_close(&e->tok);
	zmq_ctx_term(e->zctx);
	for (int i = 0; i < e->cfg.dp_size; i++)
		mock_cache_destroy(e->ranks[i].cache), kvev_batch_free(&e->ranks[i].batch);
	free(e->ranks);
	free(e->model_json);
	mock_timers_free(&e->timers);
}
