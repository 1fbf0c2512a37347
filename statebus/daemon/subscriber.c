/* subscriber.c — ZeroMQ subscriptions of one worker: per DP rank a SUB for
 * KV events and one for LoadStat, and a DEALER while a replay runs.
 *
 * Frames (sglang-wire.md §2): [topic, seq (8 bytes BE), msgpack]; anything
 * else is dropped, counted as a decode failure, and the rest of the message
 * drained. Sequencing (§9) is seq.c; this file acts on its verdicts:
 * - APPLY: decode and apply; a malformed batch is counted and skipped, the
 *   cursor still moves past it (it was received, not lost);
 * - GAP with a replay endpoint: a DEALER sends ["", cursor+1] and the
 *   triggering batch and every later live batch are held (at most
 *   SBD_HELD_MAX) until the replay answers END_SEQ, its budget (default 2 s)
 *   runs out, or the hold fills; replayed batches in [cursor+1, to) are
 *   applied in order, whatever was not recovered counts as a gap; then the
 *   held batches go through sequencing again (without a second replay);
 * - GAP without replay: counted (gaps, missing), untrusted, applied anyway;
 * - RESET (END_SEQ), RESTART (seq 0 behind the cursor): the rank is cleared;
 * - SKIP: counted, untrusted.
 * Peer restarts (switchyard extension of §9, docs/statebus.md): each KV SUB
 * has a zmq_socket_monitor PAIR polled in the same loop, and its events are
 * handled before the SUB's data. DISCONNECTED: the old publisher is gone —
 * drain what it queued (applied as usual; a replay running is ended). The
 * SUB may already have reconnected (its CONNECTED still unread behind the
 * DISCONNECTED) and the new process's first batches be queued behind the old
 * ones: the first seq at or behind the old stream's last (0..last) is the
 * new publisher's, and it and everything after it are held for the new
 * stream, as is any data up to CONNECTED.
 * CONNECTED after that: a new publisher process, whose seq 0 was probably
 * published before this SUB reconnected — the rank is cleared, the stream
 * starts over (cursor -1, counted as peer_reconnects_total) and, with a
 * replay endpoint, is rebuilt from seq 0 (live batches held meanwhile; an
 * oldest replayed batch other than 0 leaves the rank partial, counted).
 * The replay and the SUB are two connections: the replay may answer seqs
 * whose live copies arrive only after it ended. Live seqs the rebuild
 * already applied are dropped as duplicates — held ones at its end, later
 * ones while they keep rising past the highest live seq seen (live_max) up
 * to the rebuild's cursor; a seq not above live_max is still stale.
 * Statebus restart (docs/statebus.md "Start-up and restart"): the first
 * sbd_sub_open of a worker adopted at start-up restores each rank's stream
 * from its record when the index was kept, the KV facts are those it was
 * built under and the engine is SGLang; the rank's first live batch then
 * decides: cursor + 1 goes on, a gap is filled by replay (resume_fill: a
 * gap the replay cannot fill — a hole in its answer, a short answer, a
 * timeout — clears the rank and rebuilds it by replay from seq 0), a seq
 * behind the cursor (a publisher restarted meanwhile) rebuilds the rank.
 * A rank with nothing to resume from is cleared and rebuilt by replay
 * from seq 0 as soon as its sockets are open.
 * Sockets reconnect on their own (ZMQ_RECONNECT_IVL 50 ms doubling to 2 s);
 * after SBD_SOCKET_REBUILD_ERRORS consecutive receive errors a socket is
 * rebuilt. Each loop turn takes at most SBD_RECV_BURST messages from one
 * socket, so one busy engine cannot starve the others.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "common/clock.h"
#include "common/cursor.h"
#include "common/log.h"
#include "sbd.h"
#include "statebus-counters.h"

#define MAX_PARTS 4

static void *open_socket(struct sbd *d, int type, const char *host, unsigned port,
			 const char *topic)
{
	if (port == 0 || port > 65535 || host[0] == '\0')
		return NULL;
	void *s = zmq_socket(d->zctx, type);
	if (s == NULL)
		return NULL;
	int v = 50;
	zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &v, sizeof(v));
	v = 2000;
	zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &v, sizeof(v));
	v = 0;
	zmq_setsockopt(s, ZMQ_LINGER, &v, sizeof(v));
	v = 1024; /* pump depth (sglang-wire.md §10) */
	zmq_setsockopt(s, ZMQ_RCVHWM, &v, sizeof(v));
	bool v6 = strchr(host, ':') != NULL;
	if (v6) {
		v = 1;
		zmq_setsockopt(s, ZMQ_IPV6, &v, sizeof(v));
	}
	if (type == ZMQ_SUB)
		zmq_setsockopt(s, ZMQ_SUBSCRIBE, topic, strlen(topic));
	char ep[128];
	snprintf(ep, sizeof(ep), v6 ? "tcp://[%s]:%u" : "tcp://%s:%u", host, port);
	if (zmq_connect(s, ep) != 0) {
		sy_warn("connect %s: %s", ep, zmq_strerror(zmq_errno()));
		zmq_close(s);
		return NULL;
	}
	return s;
}

/* Attaches a monitor (CONNECTED, DISCONNECTED) to KV SUB `sub`: returns the
 * PAIR to read its events from, or NULL (then peer restarts are noticed only
 * through seq 0 / END_SEQ, as upstream). */
static void *open_monitor(struct sbd *d, void *sub)
{
	char ep[64];
	snprintf(ep, sizeof(ep), "inproc://sbd-kv-monitor-%u", d->mon_seq++);
	if (zmq_socket_monitor(sub, ep, ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
		sy_warn("zmq_socket_monitor: %s", zmq_strerror(zmq_errno()));
		return NULL;
	}
	void *m = zmq_socket(d->zctx, ZMQ_PAIR);
	if (m == NULL)
		return NULL;
	int v = 0;
	zmq_setsockopt(m, ZMQ_LINGER, &v, sizeof(v));
	if (zmq_connect(m, ep) != 0) {
		zmq_close(m);
		(void)zmq_socket_monitor(sub, NULL, 0);
		return NULL;
	}
	return m;
}

/* Closes a KV SUB and its monitor. */
static void close_kv(struct sbd_rank *rk)
{
	if (rk->kv_sub) {
		if (rk->kv_mon)
			(void)zmq_socket_monitor(rk->kv_sub, NULL, 0);
		zmq_close(rk->kv_sub);
	}
	if (rk->kv_mon)
		zmq_close(rk->kv_mon);
	rk->kv_sub = rk->kv_mon = NULL;
}

/* Opens rank k's KV SUB and its monitor. */
static void open_kv(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	struct sbd_rank *rk = &w->ranks[k];
	rk->kv_sub = open_socket(d, ZMQ_SUB, w->rec.kv_endpoint_host, w->rec.kv_port_base + k,
				 w->rec.kv_topic);
	rk->kv_mon = rk->kv_sub ? open_monitor(d, rk->kv_sub) : NULL;
}

static bool start_replay(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
			 const uint8_t *payload, size_t len);

static void drop_held(struct sbd_rank *rk)
{
	for (uint32_t i = 0; i < rk->n_held; i++)
		free(rk->held[i].payload);
	free(rk->held);
	rk->held = NULL;
	rk->n_held = 0;
}

static void close_rank(struct sbd_rank *rk)
{
	close_kv(rk);
	rk->peer_lost = false;
	rk->old_drain = false;
	rk->dup_window = false;
	rk->rebuild = false;
	rk->resumed = false;
	rk->resume_fill = false;
	if (rk->load_sub)
		zmq_close(rk->load_sub);
	if (rk->replay)
		zmq_close(rk->replay);
	rk->load_sub = rk->replay = NULL;
	drop_held(rk);
	rk->st.subscribed = 0;
	rk->st.replaying = 0;
	rk->dirty = true;
}

static void open_rank(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	struct sbd_rank *rk = &w->ranks[k];
	const struct statebus_worker *rec = &w->rec;
	if (d->index_on && rec->has_cache_signal && rec->kv_rejected == STATEBUS_KV_OK &&
	    rec->kv_port_base)
		open_kv(d, w, k);
	if (rec->load_port_base)
		rk->load_sub = open_socket(d, ZMQ_SUB, rec->kv_endpoint_host,
					   rec->load_port_base + k, "load");
	rk->st.subscribed = rk->kv_sub != NULL;
	rk->dirty = true;
}

void sbd_sub_close(struct sbd *d, struct sbd_worker *w)
{
	(void)d;
	for (uint32_t k = 0; k < w->n_ranks; k++)
		close_rank(&w->ranks[k]);
}

/* Whether the KV facts the kept index was built under (`a`, as adopted)
 * still hold for the record after discovery (`b`): the same publisher
 * endpoints, topic, block hashing, ranks, model and engine kind. */
static bool kv_facts_same(const struct statebus_worker *a, const struct statebus_worker *b)
{
	return a->kv_port_base == b->kv_port_base && a->kv_block_size == b->kv_block_size &&
	       a->kv_bigram == b->kv_bigram && a->dp_size == b->dp_size &&
	       a->engine == b->engine && a->kv_rejected == b->kv_rejected &&
	       a->has_cache_signal == b->has_cache_signal &&
	       strcmp(a->kv_endpoint_host, b->kv_endpoint_host) == 0 &&
	       strcmp(a->kv_topic, b->kv_topic) == 0 && strcmp(a->model, b->model) == 0;
}

/* First subscription of a worker adopted at start-up (see the file top,
 * "Statebus restart"): rank k resumes from its stream record, or has its
 * kept blocks cleared and is rebuilt by replay from seq 0. `resumable`:
 * the index was kept and w's KV facts did not change (SGLang only: a
 * vLLM worker's id map did not survive the restart). */
static void restart_rank(struct sbd *d, struct sbd_worker *w, uint32_t k, bool resumable)
{
	struct sbd_rank *rk = &w->ranks[k];
	struct statebus_stream rec;
	if (resumable && statebus_stream_read(d->r, w->slot, k, &rec) == SY_OK &&
	    rec.worker_gen == w->gen && rec.cursor >= 0) {
		rk->st = rec;
		rk->st.subscribed = 0;
		rk->st.replaying = 0;
		rk->resumed = true;
		statebus_counter_add(d->r, STATEBUS_CTR_KV_STREAMS_RESUMED, 1);
		sy_info("%s rank %u: resuming from cursor %lld", w->rec.id, k,
			(long long)rec.cursor);
		return;
	}
	if (resumable)
		sbd_apply_clear_rank(d, w, k); /* no cursor to resume its blocks from */
	rk->rebuild_on_open = true;
}

void sbd_sub_open(struct sbd *d, struct sbd_worker *w)
{
	uint32_t n = w->rec.dp_size ? w->rec.dp_size : 1;
	if (n > d->max_ranks)
		n = d->max_ranks;
	if (n != w->n_ranks) {
		sbd_sub_close(d, w);
		free(w->ranks);
		w->ranks = calloc(n, sizeof(*w->ranks));
		w->n_ranks = w->ranks ? n : 0;
		for (uint32_t k = 0; k < w->n_ranks; k++) {
			sbd_seq_init(&w->ranks[k].st, w->gen);
			w->ranks[k].live_max = -1;
			w->ranks[k].dirty = true;
		}
	} else {
		sbd_sub_close(d, w);
	}
	if (w->restart_pending) {
		w->restart_pending = false;
		bool resumable = d->index_kept && w->rec.engine == STATEBUS_ENGINE_SGLANG &&
				 kv_facts_same(&w->adopted, &w->rec);
		if (d->index_kept && !resumable) {
			sy_info("%s: KV facts or engine kind differ from the kept index's: its blocks "
				"are cleared", w->rec.id);
			sbd_apply_clear_worker(d, w->slot);
		}
		for (uint32_t k = 0; k < w->n_ranks; k++)
			restart_rank(d, w, k, resumable);
	}
	for (uint32_t k = 0; k < w->n_ranks; k++) {
		struct sbd_rank *rk = &w->ranks[k];
		open_rank(d, w, k);
		if (!rk->rebuild_on_open)
			continue;
		rk->rebuild_on_open = false;
		if (rk->kv_sub != NULL && start_replay(d, w, k, 0, NULL, 0))
			sy_info("%s rank %u: rebuilding from seq 0 by replay", w->rec.id, k);
	}
}

/* Receives one whole message (non-blocking): up to MAX_PARTS frames kept,
 * the rest drained. Returns the number of frames, 0 when none is waiting,
 * -1 on a receive error. */
static int recv_message(void *s, zmq_msg_t parts[MAX_PARTS], int *total)
{
	int n = 0;
	*total = 0;
	for (;;) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, s, ZMQ_DONTWAIT) < 0) {
			int e = zmq_errno();
			zmq_msg_close(&m);
			if (*total == 0 && e == EAGAIN)
				return 0;
			for (int i = 0; i < n; i++)
				zmq_msg_close(&parts[i]);
			return e == EAGAIN && *total > 0 ? n : -1;
		}
		bool more = zmq_msg_more(&m);
		(*total)++;
		if (n < MAX_PARTS)
			parts[n++] = m;
		else
			zmq_msg_close(&m);
		if (!more)
			return n;
	}
}

static void close_parts(zmq_msg_t *parts, int n)
{
	for (int i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
}

static int64_t seq_of(zmq_msg_t *m)
{
	return (int64_t)sy_get_u64be(zmq_msg_data(m));
}

/* Adds the change of a stream's counters to the region's totals. */
static void account(struct sbd *d, const struct statebus_stream *a, const struct statebus_stream *b)
{
	statebus_counter_add(d->r, STATEBUS_CTR_KV_SEQUENCE_GAPS, b->gaps - a->gaps);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_MISSING_SEQUENCES, b->missing - a->missing);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_SKIPPED_BATCHES, b->skipped - a->skipped);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_PUBLISHER_RESETS, b->resets - a->resets);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_DECODE_FAILURES,
			     b->decode_failures - a->decode_failures);
}

/* Decodes and applies one batch whose seq was admitted. */
static void decode_apply(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
			 const uint8_t *payload, size_t len)
{
	struct sbd_rank *rk = &w->ranks[k];
	struct sbd_kv_batch b;
	int rc = sbd_kv_decode(&d->dec, payload, len, &b);
	if (rc != SY_OK) {
		rk->st.decode_failures++;
		if (seq > rk->st.cursor)
			rk->st.cursor = seq; /* received: skipped, not lost */
		sy_debug("malformed KV batch seq %lld from %s rank %u: %s", (long long)seq,
			 w->rec.id, k, sy_strerror(rc));
		return;
	}
	rk->st.decode_failures += b.unknown_tags + b.bad_events + b.oversized_events;
	statebus_counter_add(d->r, STATEBUS_CTR_KV_UNKNOWN_TAGS, b.unknown_tags);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_OVERSIZED_EVENTS, b.oversized_events);
	statebus_counter_add(d->r, STATEBUS_CTR_KV_TOKENS_DROPPED, b.tokens_dropped);
	sbd_apply_batch(d, w, k, &b, sy_mono_ns());
	sbd_seq_commit(&rk->st, seq);
}

static bool hold(struct sbd_rank *rk, int64_t seq, const uint8_t *payload, size_t len)
{
	if (rk->n_held >= SBD_HELD_MAX)
		return false;
	if (rk->held == NULL && (rk->held = calloc(SBD_HELD_MAX, sizeof(*rk->held))) == NULL)
		return false;
	uint8_t *copy = malloc(len ? len : 1);
	if (copy == NULL)
		return false;
	memcpy(copy, payload, len);
	rk->held[rk->n_held++] = (struct sbd_held){seq, copy, len};
	return true;
}

static void sbd_sub_held(struct sbd *d, struct sbd_worker *w, uint32_t k);

/* Starts rank k's stream over: the rank is cleared, the cursor forgotten
 * (sbd_seq_resubscribe), `ctr` counted, and the rank rebuilt by replay
 * from seq 0; the live batches held meanwhile (rk->held) are kept for
 * after it, or go through sequencing now when no replay can start. */
static void restart_stream(struct sbd *d, struct sbd_worker *w, uint32_t k, unsigned ctr,
			   const char *why)
{
	struct sbd_rank *rk = &w->ranks[k];
	if (rk->replay) {
		zmq_close(rk->replay);
		rk->replay = NULL;
		rk->rebuild = false;
		rk->st.replaying = 0;
	}
	rk->resumed = false;
	rk->resume_fill = false;
	rk->dup_window = false;
	sbd_apply_clear_rank(d, w, k);
	sbd_seq_resubscribe(&rk->st);
	statebus_counter_add(d->r, ctr, 1);
	bool replay = start_replay(d, w, k, 0, NULL, 0);
	sy_info("%s rank %u: %s; rank cleared%s", w->rec.id, k, why,
		replay ? ", rebuilding from seq 0 by replay" : w->rec.kv_replay_port_base
		? ", replay request failed" : " (no replay endpoint: partial until re-stored)");
	if (!replay)
		sbd_sub_held(d, w, k);
	rk->dirty = true;
}

/* Passes the held batches through sequencing (no replay), in order. */
static void sbd_sub_held(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	struct sbd_rank *rk = &w->ranks[k];
	struct sbd_held *held = rk->held;
	uint32_t n = rk->n_held;
	rk->held = NULL;
	rk->n_held = 0;
	for (uint32_t i = 0; i < n; i++) {
		sbd_sub_batch(d, w, k, held[i].seq, held[i].payload, held[i].len, true);
		free(held[i].payload);
	}
	free(held);
}

static void finish_replay(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	struct sbd_rank *rk = &w->ranks[k];
	if (rk->resume_fill) {
		/* the cursor is ≥ 0 here: a resumed stream */
		rk->resume_fill = false;
		if (rk->replay_to - rk->st.cursor > 1) {
			restart_stream(d, w, k, STATEBUS_CTR_KV_RESUME_REBUILDS,
				       "replay could not fill the gap since the statebus restart");
			return;
		}
	}
	struct statebus_stream before = rk->st;
	if (rk->replay)
		zmq_close(rk->replay);
	rk->replay = NULL;
	rk->st.replaying = 0;
	bool rebuild = rk->rebuild;
	rk->rebuild = false;
	if (!rebuild)
		sbd_seq_gap_lost(&rk->st, rk->replay_to); /* what replay did not recover */
	account(d, &before, &rk->st);
	struct sbd_held *held = rk->held;
	uint32_t n = rk->n_held;
	rk->held = NULL;
	rk->n_held = 0;
	int64_t upto = rk->st.cursor, prev = -1;
	for (uint32_t i = 0; i < n; i++) {
		/* a rebuild's answer overlaps the live batches held meanwhile:
		 * those it already applied are duplicates, not stale seqs (a
		 * seq not above an earlier held one still is) */
		int64_t seq = held[i].seq;
		if (rebuild && upto >= 0 && seq >= 0 && seq <= upto && seq > prev)
			sy_debug("%s rank %u: held seq %lld already replayed", w->rec.id, k,
				 (long long)seq);
		else
			sbd_sub_batch(d, w, k, seq, held[i].payload, held[i].len, false);
		if (seq > prev)
			prev = seq;
		free(held[i].payload);
	}
	free(held);
	if (rebuild && upto > rk->live_max) {
		/* live copies of replayed seqs may still be on their way */
		rk->dup_window = true;
		rk->dup_upto = upto;
	}
	rk->dirty = true;
}

/* Starts a replay fetch from cursor + 1 up to `seq` (exclusive), holding the
 * batch (payload, len) that revealed the gap; payload NULL: a rebuild from
 * seq 0 after a reconnect, up to the replay's END_SEQ. */
static bool start_replay(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
			 const uint8_t *payload, size_t len)
{
	struct sbd_rank *rk = &w->ranks[k];
	if (w->rec.kv_replay_port_base == 0)
		return false;
	void *s = open_socket(d, ZMQ_DEALER, w->rec.kv_endpoint_host,
			      w->rec.kv_replay_port_base + k, "");
	if (s == NULL)
		return false;
	uint8_t start[8];
	sy_put_u64be(start, (uint64_t)(rk->st.cursor + 1));
	if (zmq_send(s, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	    zmq_send(s, start, sizeof(start), ZMQ_DONTWAIT) < 0 ||
	    (payload != NULL && !hold(rk, seq, payload, len))) {
		zmq_close(s);
		return false;
	}
	rk->replay = s;
	rk->rebuild = payload == NULL;
	rk->replay_to = payload == NULL ? INT64_MAX : seq;
	rk->replay_deadline_ns = sy_mono_ns() + (uint64_t)d->cfg.statebus.replay_timeout_ms * 1000000u;
	rk->st.replaying = 1;
	statebus_counter_add(d->r, STATEBUS_CTR_KV_REPLAY_REQUESTS, 1);
	return true;
}

void sbd_sub_batch(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
		   const uint8_t *payload, size_t len, bool allow_replay)
{
	struct sbd_rank *rk = &w->ranks[k];
	rk->st.last_event_ns = sy_mono_ns();
	rk->dirty = true;
	if (rk->replay != NULL) {
		if (hold(rk, seq, payload, len))
			return;
		finish_replay(d, w, k); /* hold full: give up on the replay */
		if (rk->replay != NULL)
			return; /* a rebuild from seq 0 started: its answer carries this batch */
	}
	struct statebus_stream before = rk->st;
	switch (sbd_seq_admit(&rk->st, seq)) {
	case SBD_SEQ_RESET:
		sbd_apply_clear_rank(d, w, k);
		sy_info("%s rank %u: publisher reset (END_SEQ)", w->rec.id, k);
		break;
	case SBD_SEQ_SKIP:
		break;
	case SBD_SEQ_RESTART:
		sbd_apply_clear_rank(d, w, k);
		sy_info("%s rank %u: publisher restarted (seq 0)", w->rec.id, k);
		decode_apply(d, w, k, seq, payload, len);
		break;
	case SBD_SEQ_GAP:
		if (allow_replay && start_replay(d, w, k, seq, payload, len))
			break;
		sbd_seq_gap_lost(&rk->st, seq);
		decode_apply(d, w, k, seq, payload, len);
		break;
	case SBD_SEQ_APPLY:
		decode_apply(d, w, k, seq, payload, len);
		break;
	}
	account(d, &before, &rk->st);
}

/* The first live batch of a stream resumed from its record. A seq behind
 * the cursor (other than 0, a restart from scratch that sequencing
 * handles) comes from a publisher that restarted while the statebus was
 * down: the rank is rebuilt. A seq ahead of cursor + 1 opens the gap of
 * the downtime, filled by replay (resume_fill: a gap replay cannot fill
 * rebuilds the rank); cursor + 1: nothing was missed. */
static void resume_first(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
			 const uint8_t *payload, size_t len)
{
	struct sbd_rank *rk = &w->ranks[k];
	int64_t cur = rk->st.cursor;
	rk->resumed = false;
	if (seq > 0 && seq <= cur && hold(rk, seq, payload, len)) {
		restart_stream(d, w, k, STATEBUS_CTR_KV_RESUME_REBUILDS,
			       "seq behind the resumed cursor: the publisher restarted meanwhile");
		return;
	}
	bool gap = seq > 0 && cur >= 0 && seq - cur > 1;
	sbd_sub_batch(d, w, k, seq, payload, len, true);
	rk->resume_fill = gap && rk->replay != NULL;
	if (gap)
		sy_info("%s rank %u: resumed at seq %lld, %lld batches after the cursor%s", w->rec.id,
			k, (long long)seq, (long long)(seq - cur - 1),
			rk->resume_fill ? ": filling the gap by replay" : "");
}

/* One batch read from the KV SUB. */
static void on_live(struct sbd *d, struct sbd_worker *w, uint32_t k, int64_t seq,
		    const uint8_t *payload, size_t len)
{
	struct sbd_rank *rk = &w->ranks[k];
	if (rk->peer_lost) {
		if (rk->old_drain) {
			/* the old stream's last seq: a seq at or behind it (a stale
			 * seq, or 0 = restart, for the old stream) is the new
			 * process's; END_SEQ and gaps are the old one's */
			int64_t last = rk->st.cursor;
			for (uint32_t i = 0; i < rk->n_held; i++)
				if (rk->held[i].seq > last)
					last = rk->held[i].seq;
			if (!(last >= 0 && seq >= 0 && seq <= last)) {
				sbd_sub_batch(d, w, k, seq, payload, len, true);
				return;
			}
			sy_debug("%s rank %u: seq %lld behind the lost publisher's %lld: the new "
				 "publisher's", w->rec.id, k, (long long)seq, (long long)last);
			rk->old_drain = false;
			if (rk->replay)
				finish_replay(d, w, k);
		}
		/* the new publisher's, before its CONNECTED was handled: held for
		 * the new stream (a full hold drops it; the rebuild recovers it) */
		if (seq > rk->live_max)
			rk->live_max = seq;
		rk->st.last_event_ns = sy_mono_ns();
		if (!hold(rk, seq, payload, len))
			sy_debug("%s rank %u: seq %lld before the reconnect dropped (hold full)",
				 w->rec.id, k, (long long)seq);
		return;
	}
	if (rk->dup_window) {
		if (seq >= 0 && seq <= rk->dup_upto && seq > rk->live_max) {
			rk->live_max = seq;
			rk->st.last_event_ns = sy_mono_ns();
			rk->dirty = true;
			sy_debug("%s rank %u: live seq %lld arrived after the rebuild replayed it",
				 w->rec.id, k, (long long)seq);
			return;
		}
		if (seq < 0 || seq >= rk->dup_upto)
			rk->dup_window = false;
	}
	if (seq > rk->live_max)
		rk->live_max = seq;
	if (rk->resumed) {
		resume_first(d, w, k, seq, payload, len);
		return;
	}
	sbd_sub_batch(d, w, k, seq, payload, len, true);
}

/* One replay answer: ["", seq, payload] or ["", topic, seq, payload]. */
static void on_replay_message(struct sbd *d, struct sbd_worker *w, uint32_t k, zmq_msg_t *p,
			      int n)
{
	struct sbd_rank *rk = &w->ranks[k];
	int si = n == 3 ? 1 : n == 4 ? 2 : -1;
	if (si < 0 || zmq_msg_size(&p[si]) != 8) {
		finish_replay(d, w, k); /* unexpected answer shape */
		return;
	}
	int64_t seq = seq_of(&p[si]);
	if (seq == SBD_END_SEQ || seq >= rk->replay_to) {
		finish_replay(d, w, k);
		return;
	}
	if (seq < 0 || seq <= rk->st.cursor)
		return;
	struct statebus_stream before = rk->st;
	if (rk->st.cursor < 0) {
		/* rebuild after a reconnect: complete only from seq 0 */
		rk->st.partial = seq != 0;
		if (seq != 0) {
			statebus_counter_add(d->r, STATEBUS_CTR_KV_PARTIAL_REBUILDS, 1);
			sy_warn("%s rank %u: replay starts at seq %lld, not 0: the rank stays "
				"partial", w->rec.id, k, (long long)seq);
		}
	} else if (seq > rk->st.cursor + 1) {
		if (rk->resume_fill) {
			restart_stream(d, w, k, STATEBUS_CTR_KV_RESUME_REBUILDS,
				       "the engine's replay buffer does not reach back to the cursor "
				       "since the statebus restart");
			return;
		}
		sbd_seq_gap_lost(&rk->st, seq); /* older than the engine's buffer */
	}
	decode_apply(d, w, k, seq, zmq_msg_data(&p[si + 1]), zmq_msg_size(&p[si + 1]));
	statebus_counter_add(d->r, STATEBUS_CTR_KV_REPLAYED_BATCHES, 1);
	account(d, &before, &rk->st);
	rk->dirty = true;
}

static void rebuild(struct sbd *d, struct sbd_worker *w, uint32_t k, int which)
{
	struct sbd_rank *rk = &w->ranks[k];
	statebus_counter_add(d->r, STATEBUS_CTR_SOCKET_REBUILDS, 1);
	sy_warn("%s rank %u: %d receive errors, rebuilding the %s socket", w->rec.id, k,
		SBD_SOCKET_REBUILD_ERRORS, which == 0 ? "KV" : "LoadStat");
	if (which == 0) {
		close_kv(rk);
		open_kv(d, w, k);
		/* events may be lost between the two sockets: its first connection
		 * starts the stream over, as after a peer restart (what the new
		 * socket receives until then is held for the new stream); without
		 * a monitor no CONNECTED comes and the stream just goes on */
		if (rk->kv_mon != NULL) {
			if (rk->replay) {
				zmq_close(rk->replay);
				rk->replay = NULL;
				rk->rebuild = false;
				rk->st.replaying = 0;
			}
			drop_held(rk);
			rk->peer_lost = true;
			rk->old_drain = false;
			rk->dup_window = false;
			rk->live_max = -1;
		}
		rk->kv_errors = 0;
	} else {
		zmq_close(rk->load_sub);
		rk->load_sub = open_socket(d, ZMQ_SUB, w->rec.kv_endpoint_host,
					   w->rec.load_port_base + k, "load");
		rk->load_errors = 0;
	}
}

/* Takes up to `burst` messages from socket `which` (0 kv, 1 load, 2 replay). */
static void drain(struct sbd *d, struct sbd_worker *w, uint32_t k, int which, int burst)
{
	struct sbd_rank *rk = &w->ranks[k];
	for (int i = 0; i < burst; i++) {
		void *s = which == 0 ? rk->kv_sub : which == 1 ? rk->load_sub : rk->replay;
		if (s == NULL)
			return;
		zmq_msg_t p[MAX_PARTS];
		int total;
		int n = recv_message(s, p, &total);
		if (n == 0)
			return;
		uint32_t *errs = which == 1 ? &rk->load_errors : &rk->kv_errors;
		if (n < 0) {
			if (which != 2 && ++*errs >= SBD_SOCKET_REBUILD_ERRORS)
				rebuild(d, w, k, which);
			return;
		}
		*errs = 0;
		if (which == 2) {
			on_replay_message(d, w, k, p, total == n ? n : -1);
		} else if (total != 3 || zmq_msg_size(&p[1]) != 8) {
			if (which == 0) {
				rk->st.decode_failures++;
				rk->dirty = true;
				statebus_counter_add(d->r, STATEBUS_CTR_KV_DECODE_FAILURES, 1);
			} else {
				statebus_counter_add(d->r, STATEBUS_CTR_LOAD_DECODE_FAILURES, 1);
			}
		} else if (which == 0) {
			on_live(d, w, k, seq_of(&p[1]), zmq_msg_data(&p[2]),
				zmq_msg_size(&p[2]));
		} else {
			sbd_apply_load(d, w, k, zmq_msg_data(&p[2]), zmq_msg_size(&p[2]),
				       sy_mono_ns());
		}
		close_parts(p, n);
	}
}

/* The KV SUB connected again after losing its peer: a new publisher
 * process. Clear the rank and start the stream over; rebuild from seq 0 by
 * replay when an endpoint is known. */
static void resubscribe(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	struct sbd_rank *rk = &w->ranks[k];
	if (rk->replay) /* not expected: ended when the peer was lost */
		drop_held(rk);
	/* rk->held: the new publisher's batches received before this event */
	restart_stream(d, w, k, STATEBUS_CTR_KV_PEER_RECONNECTS, "publisher reconnected");
}

/* Reads every pending monitor event of rank k's KV SUB, in order. */
static void on_monitor(struct sbd *d, struct sbd_worker *w, uint32_t k)
{
	struct sbd_rank *rk = &w->ranks[k];
	while (rk->kv_mon != NULL) {
		zmq_msg_t p[MAX_PARTS];
		int total;
		int n = recv_message(rk->kv_mon, p, &total);
		if (n <= 0)
			return;
		uint16_t ev = 0;
		if (zmq_msg_size(&p[0]) >= 2)
			memcpy(&ev, zmq_msg_data(&p[0]), sizeof(ev)); /* host order */
		close_parts(p, n);
		if (ev == ZMQ_EVENT_DISCONNECTED && !rk->peer_lost) {
			rk->peer_lost = true;
			rk->dup_window = false;
			rk->live_max = -1;
			sy_info("%s rank %u: KV publisher disconnected", w->rec.id, k);
			/* what the old process queued belongs to the old stream, up
			 * to the new process's first batch (on_live) */
			rk->old_drain = true;
			drain(d, w, k, 0, SBD_HELD_MAX * 4);
			if (rk->old_drain && rk->replay)
				finish_replay(d, w, k);
			rk->old_drain = false;
		} else if (ev == ZMQ_EVENT_CONNECTED && rk->peer_lost) {
			rk->peer_lost = false;
			resubscribe(d, w, k);
		}
	}
}

void sbd_sub_readable(struct sbd *d, struct sbd_worker *w, uint32_t k, int which)
{
	/* peer events first: data of a new publisher never counts for the old */
	if (which == 0 || which == 3)
		on_monitor(d, w, k);
	if (which != 3)
		drain(d, w, k, which, SBD_RECV_BURST);
}

void sbd_sub_timers(struct sbd *d, uint64_t now)
{
	for (uint32_t s = 0; s < d->n_slots; s++) {
		struct sbd_worker *w = &d->w[s];
		if (!w->used)
			continue;
		for (uint32_t k = 0; k < w->n_ranks; k++) {
			struct sbd_rank *rk = &w->ranks[k];
			if (rk->replay && now >= rk->replay_deadline_ns) {
				sy_warn("%s rank %u: replay timed out", w->rec.id, k);
				finish_replay(d, w, k);
			}
			if (rk->dirty) {
				rk->st.worker_gen = w->gen;
				(void)statebus_stream_write(d->r, w->slot, k, &rk->st);
				rk->dirty = false;
			}
		}
	}
}
