/* cache_source.c — prefix sources (local index, remote statebus) and the
 * per-request prefix memo (cache_source.h; DESIGN.md §4 step 3, §9).
 *
 * Invariants: a memo entry, once stored for a request, is never redone for
 * that request (one lookup per source per request, shared by every bucket
 * attempt); depths are max over DP ranks and ≤ query_blocks; an indexer
 * socket is used only by the process that opened it; a pick never waits
 * on a socket (only PREFIX_FILL_WAIT does); an entry is pending exactly
 * while its source's wait table holds (id, memo) for it, and
 * m->n_pending counts those entries; n_waits ≤ inflight ≤ max_inflight.
 */
#include "router/policies/cache/cache_source.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/core/buckets.h"
#include "router/core/fleet_view.h"
#include "router/policies/cache/cache_aware.h"

#define LOCAL_MATCH_CAP 65536u /* (worker, rank) owners read per lookup */

const char *prefix_status_name(enum prefix_status s)
{
	switch (s) {
	case PREFIX_FOUND:
		return "found";
	case PREFIX_NO_CHAIN:
		return "no_chain";
	case PREFIX_UNAVAILABLE:
		return "unavailable";
	case PREFIX_REJECTED:
		return "rejected";
	}
	return "unknown";
}

const char *prefix_unavailable_name(enum prefix_unavailable w)
{
	switch (w) {
	case PREFIX_WHY_NONE:
		return "none";
	case PREFIX_WHY_TIMEOUT:
		return "timeout";
	case PREFIX_WHY_UNREACHABLE:
		return "unreachable";
	case PREFIX_WHY_OVERLOADED:
		return "overloaded";
	case PREFIX_WHY_TOO_LARGE:
		return "too_large";
	}
	return "unknown";
}

/* ---- sources ----------------------------------------------------------------- */

void cache_source_init_local(struct cache_source *s)
{
	memset(s, 0, sizeof(*s));
	s->kind = CACHE_SOURCE_LOCAL;
	s->key = CACHE_SOURCE_LOCAL_KEY;
}

int cache_source_init_indexer(struct cache_source *s, uint32_t key, const char *endpoint,
			      uint32_t timeout_ms, uint32_t max_inflight)
{
	memset(s, 0, sizeof(*s));
	if (key == CACHE_SOURCE_LOCAL_KEY || endpoint == NULL || endpoint[0] == '\0')
		return SY_EINVAL;
	if ((s->endpoint = strdup(endpoint)) == NULL)
		return SY_ENOMEM;
	s->kind = CACHE_SOURCE_INDEXER;
	s->key = key;
	s->timeout_ms = timeout_ms ? timeout_ms : CACHE_SOURCE_DEFAULT_TIMEOUT_MS;
	s->max_inflight = max_inflight ? max_inflight : CACHE_SOURCE_DEFAULT_MAX_INFLIGHT;
	return SY_OK;
}

static const struct cache_source_loop *proc_loop; /* this process's binding */

void cache_source_set_loop(const struct cache_source_loop *loop)
{
	proc_loop = loop;
}

static void wait_fail_all(struct cache_source *s, enum prefix_unavailable why);

static void sock_close(struct cache_source *s)
{
	if (s->pid == (int)getpid()) {
		wait_fail_all(s, PREFIX_WHY_UNREACHABLE);
		if (s->watch != NULL && proc_loop != NULL)
			proc_loop->unwatch(proc_loop->ctx, s);
		if (s->sock != NULL)
			zmq_close(s->sock);
	}
	s->watch = NULL;
	s->sock = NULL;
	s->inflight = 0;
	s->n_waits = 0;
}

void cache_source_close(struct cache_source *s)
{
	sock_close(s);
	if (s->zctx != NULL && s->pid == (int)getpid())
		zmq_ctx_term(s->zctx);
	s->zctx = NULL;
	free(s->endpoint);
	free(s->out.buf);
	free(s->in);
	free(s->matches);
	free(s->waits);
	memset(s, 0, sizeof(*s));
}

/* Opens the DEALER in this process (after fork the parent's are dropped,
 * not closed: they belong to the parent) and hands its ZMQ_FD to the
 * process's event-loop binding. */
static int sock_open(struct cache_source *s)
{
	if (s->pid != (int)getpid()) {
		s->zctx = NULL;
		s->sock = NULL;
		s->watch = NULL;
		s->inflight = 0;
		s->n_waits = 0;
		s->pid = (int)getpid();
	}
	if (s->sock != NULL)
		return SY_OK;
	if (s->in == NULL && (s->in = malloc(STATEBUS_QUERY_MAX_BYTES)) == NULL)
		return SY_ENOMEM;
	if (s->matches == NULL &&
	    (s->matches = malloc(STATEBUS_QUERY_MAX_MATCHES * sizeof(*s->matches))) == NULL)
		return SY_ENOMEM;
	if (s->waits == NULL && (s->waits = calloc(s->max_inflight, sizeof(*s->waits))) == NULL)
		return SY_ENOMEM;
	if (s->zctx == NULL && (s->zctx = zmq_ctx_new()) == NULL)
		return SY_EIO;
	void *z = zmq_socket(s->zctx, ZMQ_DEALER);
	if (z == NULL)
		return SY_EIO;
	int zero = 0, one = 1;
	int64_t maxmsg = STATEBUS_QUERY_MAX_BYTES;
	zmq_setsockopt(z, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(z, ZMQ_IMMEDIATE, &one, sizeof(one)); /* no queueing to nobody */
	zmq_setsockopt(z, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	if (zmq_connect(z, s->endpoint) != 0) {
		zmq_close(z);
		return SY_EIO;
	}
	s->sock = z;
	s->inflight = 0;
	s->n_waits = 0;
	int fd = -1;
	size_t fl = sizeof(fd);
	if (proc_loop != NULL && zmq_getsockopt(z, ZMQ_FD, &fd, &fl) == 0 &&
	    proc_loop->watch(proc_loop->ctx, s, fd) != 0)
		s->watch = NULL;
	return SY_OK;
}

int cache_source_open(struct cache_source *s)
{
	return s->kind == CACHE_SOURCE_INDEXER ? sock_open(s) : SY_OK;
}

/* Receives one message (its last frame) without waiting. Returns the frame
 * length, -1 when nothing is there, -2 when the frame is over the buffer. */
static long recv_frame(struct cache_source *s)
{
	long got = -1;
	int more = 0;
	size_t ml = sizeof(more);
	do {
		int n = zmq_recv(s->sock, s->in, STATEBUS_QUERY_MAX_BYTES, ZMQ_DONTWAIT);
		if (n < 0)
			return got;
		got = n > (int)STATEBUS_QUERY_MAX_BYTES ? -2 : n;
		zmq_getsockopt(s->sock, ZMQ_RCVMORE, &more, &ml);
	} while (more);
	return got;
}

/* ---- memo -------------------------------------------------------------------- */

void prefix_memo_init(struct prefix_memo *m, struct digest_memo *digests)
{
	memset(m, 0, sizeof(*m));
	m->digests = digests;
}

void prefix_memo_reset(struct prefix_memo *m)
{
	prefix_memo_cancel(m);
	m->filled = false;
	m->chain_done = false;
	m->chain_status = PREFIX_NO_CHAIN;
	m->block_size = 0;
	m->bigram = false;
	m->input_tokens = 0;
	m->n_ids = 0;
	for (uint32_t i = 0; i < m->n_entries; i++) {
		m->entries[i].n_depths = 0;
		m->entries[i].names_len = 0;
	}
	m->n_entries = 0;
	m->chains = 0;
	m->lookups = 0;
}

void prefix_memo_free(struct prefix_memo *m)
{
	prefix_memo_cancel(m);
	free(m->ids);
	free(m->scratch);
	for (uint32_t i = 0; i < PREFIX_MEMO_MAX_SOURCES; i++) {
		free(m->entries[i].depths);
		free(m->entries[i].names);
	}
	struct digest_memo *d = m->digests;
	memset(m, 0, sizeof(*m));
	m->digests = d;
}

int prefix_memo_chain(struct prefix_memo *m, const struct pick_request *req, uint32_t block_size,
		      bool bigram)
{
	if (m->chain_done)
		return m->chain_status;
	m->chain_done = true;
	m->chain_status = PREFIX_NO_CHAIN;
	m->block_size = block_size;
	m->bigram = bigram;
	m->input_tokens = req->input_tokens;
	m->n_ids = 0;
	if (block_size == 0 || req->token_ids == NULL || req->n_token_ids == 0 ||
	    req->input_tokens == 0)
		return PREFIX_NO_CHAIN;

	struct sy_blockhash_params p;
	if (sy_blockhash_params_init(&p, block_size, bigram, req->cache_salt.ptr,
				     req->cache_salt.ptr ? req->cache_salt.len : 0) != SY_OK)
		return PREFIX_NO_CHAIN;
	if (req->lora.ptr != NULL) {
		/* a LoRA adapter's blocks live in its own namespace
		 * (sy_blockhash_lora_seed; the statebus seeds vLLM chains the same) */
		sy_blockhash_lora_seed(req->lora.ptr, req->lora.len, &p.seed);
		p.has_seed = true;
	}
	size_t pages = sy_blockhash_count(req->n_token_ids, block_size, bigram);
	if (pages == 0)
		return PREFIX_NO_CHAIN;
	if (pages > m->cap_ids) {
		int64_t *ids = realloc(m->ids, pages * sizeof(*ids));
		if (ids == NULL) {
			m->chain_done = false;
			return SY_ENOMEM;
		}
		m->ids = ids;
		m->cap_ids = pages;
	}
	ssize_t n = digest_memo_chain(m->digests, req->token_ids, req->n_token_ids, &p, m->ids,
				      m->cap_ids);
	if (n <= 0)
		return PREFIX_NO_CHAIN;
	m->n_ids = (size_t)n;
	m->chains++;
	m->chain_status = PREFIX_FOUND;
	return PREFIX_FOUND;
}

bool cache_model_blocks(const struct fleet *f, const char *model, size_t len,
			uint32_t *block_size, bool *bigram)
{
	uint32_t idx = fleet_model_index(f, model, len);
	if (idx == FLEET_NO_MODEL)
		return false;
	for (size_t i = 0; i < f->n; i++) {
		const struct fleet_entry *e = &f->entries[i];
		if (e->model_idx == idx && e->kv_indexed && e->kv_block_size > 0) {
			*block_size = e->kv_block_size;
			*bigram = e->kv_bigram;
			return true;
		}
	}
	return false;
}

static struct prefix_memo_entry *find_entry(struct prefix_memo *m, uint32_t key)
{
	for (uint32_t i = 0; i < m->n_entries; i++)
		if (m->entries[i].source_key == key)
			return &m->entries[i];
	return NULL;
}

static void entry_unwait(struct prefix_memo *m, struct prefix_memo_entry *e);

static struct prefix_memo_entry *new_entry(struct prefix_memo *m, uint32_t key)
{
	struct prefix_memo_entry *e = find_entry(m, key);
	if (e != NULL) {
		entry_unwait(m, e);
	} else {
		if (m->n_entries == PREFIX_MEMO_MAX_SOURCES)
			return NULL;
		e = &m->entries[m->n_entries++];
	}
	e->source_key = key;
	e->status = PREFIX_FOUND;
	e->why = PREFIX_WHY_NONE;
	e->pending = false;
	e->src = NULL;
	e->query_id = 0;
	e->deadline_ns = 0;
	e->n_depths = 0;
	e->names_len = 0;
	return e;
}

static int ensure_depths(struct prefix_memo_entry *e, size_t n)
{
	if (n <= e->cap_depths)
		return SY_OK;
	struct prefix_depth *d = realloc(e->depths, n * sizeof(*d));
	if (d == NULL)
		return SY_ENOMEM;
	e->depths = d;
	e->cap_depths = (uint32_t)n;
	return SY_OK;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct prefix_depth *x = a, *y = b;
	return (x->slot > y->slot) - (x->slot < y->slot);
}

static int cmp_url(const void *a, const void *b)
{
	return strcmp(((const struct prefix_depth *)a)->url, ((const struct prefix_depth *)b)->url);
}

/* Sorted depths: of adjacent entries naming the same worker — (slot,
 * generation) for the local index, the URL for the indexer — keeps one,
 * with the deepest match. */
static void keep_deepest(struct prefix_memo_entry *e, bool by_url)
{
	uint32_t w = 0;
	for (uint32_t i = 0; i < e->n_depths; i++) {
		const struct prefix_depth *d = &e->depths[i];
		struct prefix_depth *p = w > 0 ? &e->depths[w - 1] : NULL;
		if (p != NULL && (by_url ? strcmp(p->url, d->url) == 0
					 : p->slot == d->slot && p->generation == d->generation)) {
			/* the deepest; of equal depths, the least predicted */
			if (d->blocks > p->blocks ||
			    (d->blocks == p->blocks && d->predicted < p->predicted)) {
				const char *url = p->url;
				*p = *d;
				p->url = url;
			}
			continue;
		}
		e->depths[w++] = *d;
	}
	e->n_depths = w;
}

static uint32_t cap_blocks(uint64_t d, size_t q)
{
	return (uint32_t)(d < q ? d : q);
}

/* The weighted part of d (blocks already set): predicted_depth blocks past
 * the confirmed prefix, its age, and whether the worker is in approximate
 * mode (its predictions are its cache model: they do not decay). */
static void set_predicted(struct prefix_depth *d, bool approximate, uint32_t predicted_depth,
			  uint64_t age_ms)
{
	d->approximate = approximate;
	d->predicted = predicted_depth < d->blocks ? predicted_depth : d->blocks;
	d->predicted_age_ms = age_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)age_ms;
}

/* ---- this process's predictions not yet applied by the statebus ---------- */

/* Process-local, single-threaded (one per router worker process). */
struct pending_prediction {
	bool used;
	uint32_t slot, generation, n;
	uint64_t pos;                  /* ring position after the push */
	uint64_t at_ns;                /* CLOCK_MONOTONIC of the push */
	int64_t ids[STATEBUS_PREDICT_CHAIN_MAX];
};
static struct pending_prediction pending[PREFIX_PENDING_MAX];
static uint32_t pending_next;

void prefix_pending_add(uint32_t slot, uint32_t generation, const int64_t *ids, size_t n,
			uint64_t pos, uint64_t now_ns)
{
	if (n == 0 || ids == NULL)
		return;
	struct pending_prediction *p = &pending[pending_next];
	pending_next = (pending_next + 1) % PREFIX_PENDING_MAX;
	p->used = true;
	p->slot = slot;
	p->generation = generation;
	p->pos = pos;
	p->at_ns = now_ns;
	p->n = (uint32_t)(n < STATEBUS_PREDICT_CHAIN_MAX ? n : STATEBUS_PREDICT_CHAIN_MAX);
	memcpy(p->ids, ids, p->n * sizeof(*ids));
}

void prefix_pending_clear(void)
{
	memset(pending, 0, sizeof(pending));
	pending_next = 0;
}

/* Appends to e the predictions of this process (proc slot `proc`) that the
 * statebus has not applied yet and that share a prefix with the request's
 * chain (depth = the common prefix, all of it predicted, age 0); forgets
 * the applied ones and those older than PREFIX_PENDING_MAX_AGE_MS (no
 * statebus draining). e->depths must have room for PREFIX_PENDING_MAX
 * more. */
static void add_pending(struct prefix_memo *m, struct prefix_memo_entry *e,
			struct statebus_region *r, uint32_t proc, uint64_t now_ns)
{
	for (uint32_t i = 0; i < PREFIX_PENDING_MAX; i++) {
		struct pending_prediction *p = &pending[i];
		if (!p->used)
			continue;
		if (statebus_predict_applied(r, proc, p->pos) ||
		    now_ns - p->at_ns > (uint64_t)PREFIX_PENDING_MAX_AGE_MS * 1000000u) {
			p->used = false;
			continue;
		}
		uint32_t k = 0, lim = p->n < m->n_ids ? p->n : (uint32_t)m->n_ids;
		while (k < lim && p->ids[k] == m->ids[k])
			k++;
		if (k == 0)
			continue;
		struct statebus_predict_worker pw;
		bool approximate = statebus_predict_worker_read(r, p->slot, &pw) == SY_OK &&
				   pw.cache_signal == STATEBUS_CACHE_SIGNAL_PREDICTED;
		struct prefix_depth *d = &e->depths[e->n_depths++];
		d->slot = p->slot;
		d->generation = p->generation;
		d->url = NULL;
		d->blocks = k;
		set_predicted(d, approximate, k, (now_ns - p->at_ns) / 1000000u);
	}
}

/* Local: statebus_index_match, max over ranks per (slot, generation), and
 * this process's predictions still on their way to the index. */
static int lookup_local(struct prefix_memo *m, struct prefix_memo_entry *e,
			struct statebus_region *r)
{
	if (r == NULL || m->n_ids == 0)
		return SY_OK; /* no index attached: a confirmed miss */
	if (statebus_proc_self(r) < 0) {
		e->status = PREFIX_UNAVAILABLE;
		e->why = PREFIX_WHY_UNREACHABLE; /* no reader slot: cannot bracket */
		return SY_OK;
	}
	size_t cap = (size_t)statebus_workers_capacity(r) * statebus_load_max_ranks(r);
	if (cap > LOCAL_MATCH_CAP)
		cap = LOCAL_MATCH_CAP;
	if (cap > m->cap_scratch) {
		void *p = realloc(m->scratch, cap * sizeof(*m->scratch));
		if (p == NULL)
			return SY_ENOMEM;
		m->scratch = p;
		m->cap_scratch = cap;
	}
	int n = statebus_index_match(r, m->ids, m->n_ids, m->scratch, m->cap_scratch);
	if (n < 0)
		n = 0;
	if (ensure_depths(e, (size_t)n + PREFIX_PENDING_MAX) != SY_OK)
		return SY_ENOMEM;
	uint64_t now = sy_mono_ns();
	for (int i = 0; i < n; i++) {
		const struct statebus_index_match *x = &m->scratch[i];
		struct prefix_depth *d = &e->depths[e->n_depths++];
		d->slot = x->worker;
		d->generation = x->worker_gen;
		d->url = NULL;
		d->blocks = cap_blocks(x->depth, m->n_ids);
		uint64_t age = x->predicted_ns != 0 && now > x->predicted_ns
				       ? (now - x->predicted_ns) / 1000000u
				       : 0;
		set_predicted(d, x->cache_signal == STATEBUS_CACHE_SIGNAL_PREDICTED,
			      x->predicted_depth, age);
	}
	add_pending(m, e, r, (uint32_t)statebus_proc_self(r), now);
	if (e->n_depths <= 32) {
		/* a few owners (the usual case): stable insertion sort, no qsort call */
		for (uint32_t a = 1; a < e->n_depths; a++) {
			struct prefix_depth x = e->depths[a];
			uint32_t b = a;
			while (b > 0 && e->depths[b - 1].slot > x.slot) {
				e->depths[b] = e->depths[b - 1];
				b--;
			}
			e->depths[b] = x;
		}
	} else {
		qsort(e->depths, e->n_depths, sizeof(*e->depths), cmp_slot);
	}
	keep_deepest(e, false);
	return SY_OK;
}

static int store_reply(struct prefix_memo *m, struct prefix_memo_entry *e,
		       const struct statebus_query_reply *rep)
{
	switch (rep->status) {
	case STATEBUS_QUERY_OK:
		break;
	case STATEBUS_QUERY_OVERLOADED:
		e->status = PREFIX_UNAVAILABLE;
		e->why = PREFIX_WHY_OVERLOADED;
		return SY_OK;
	case STATEBUS_QUERY_TOO_LARGE:
		e->status = PREFIX_UNAVAILABLE;
		e->why = PREFIX_WHY_TOO_LARGE;
		return SY_OK;
	default:
		e->status = PREFIX_REJECTED;
		return SY_OK;
	}
	size_t bytes = 0, n = 0;
	for (uint32_t i = 0; i < rep->n_matches; i++) {
		if (rep->matches[i].depth == 0)
			continue;
		bytes += rep->matches[i].url_len + 1;
		n++;
	}
	if (ensure_depths(e, n) != SY_OK)
		return SY_ENOMEM;
	if (bytes > e->names_cap) {
		char *p = realloc(e->names, bytes);
		if (p == NULL)
			return SY_ENOMEM;
		e->names = p;
		e->names_cap = bytes;
	}
	e->names_len = 0;
	size_t q = m->n_ids ? m->n_ids : rep->query_blocks;
	for (uint32_t i = 0; i < rep->n_matches; i++) {
		const struct statebus_query_match *x = &rep->matches[i];
		if (x->depth == 0)
			continue;
		struct prefix_depth *d = &e->depths[e->n_depths++];
		char *u = e->names + e->names_len;
		memcpy(u, x->url, x->url_len);
		u[x->url_len] = '\0';
		e->names_len += x->url_len + 1;
		d->slot = UINT32_MAX;
		d->generation = 0;
		d->url = u;
		d->blocks = cap_blocks(x->depth, q);
		set_predicted(d, x->approximate, x->has_predicted ? x->predicted_depth : 0,
			      x->predicted_age_ms);
	}
	qsort(e->depths, e->n_depths, sizeof(*e->depths), cmp_url);
	keep_deepest(e, true);
	return SY_OK;
}

int prefix_memo_put_reply(struct prefix_memo *m, uint32_t key,
			  const struct statebus_query_reply *reply)
{
	struct prefix_memo_entry *e = new_entry(m, key);
	if (e == NULL)
		return SY_ENOSPC;
	return store_reply(m, e, reply);
}

int prefix_memo_put_status(struct prefix_memo *m, uint32_t key, enum prefix_status st,
			   enum prefix_unavailable why)
{
	struct prefix_memo_entry *e = new_entry(m, key);
	if (e == NULL)
		return SY_ENOSPC;
	e->status = st;
	e->why = st == PREFIX_UNAVAILABLE ? why : PREFIX_WHY_NONE;
	return SY_OK;
}

static void unavailable(struct prefix_memo_entry *e, enum prefix_unavailable why)
{
	e->status = PREFIX_UNAVAILABLE;
	e->why = why;
}

/* Counts an entry's outcome on its source (once, when it is known). */
static void account(struct cache_source *s, const struct prefix_memo_entry *e)
{
	if (e->status == PREFIX_NO_CHAIN) {
		s->stats.no_chain++;
		return;
	}
	s->stats.lookups++;
	if (e->status == PREFIX_FOUND)
		s->stats.found++;
	else if (e->status == PREFIX_REJECTED)
		s->stats.rejected++;
	else
		s->stats.unavailable[e->why]++;
}

/* ---- wait table -------------------------------------------------------------- */

static int wait_index(const struct cache_source *s, uint64_t id)
{
	for (uint32_t i = 0; i < s->n_waits; i++)
		if (s->waits[i].id == id)
			return (int)i;
	return -1;
}

static void wait_remove(struct cache_source *s, uint32_t i)
{
	s->waits[i] = s->waits[--s->n_waits];
}

/* Takes a pending entry out of its source's table; not counted. */
static void entry_unwait(struct prefix_memo *m, struct prefix_memo_entry *e)
{
	if (!e->pending)
		return;
	int i = wait_index(e->src, e->query_id);
	if (i >= 0)
		wait_remove(e->src, (uint32_t)i);
	e->pending = false;
	e->src = NULL;
	m->n_pending--;
}

/* A pending entry's outcome is known (e filled by the caller): counted,
 * and the memo told when it was its last (`notify`). */
static void entry_done(struct prefix_memo *m, struct prefix_memo_entry *e, struct cache_source *s,
		       bool notify)
{
	entry_unwait(m, e);
	account(s, e);
	if (notify && m->n_pending == 0 && m->on_ready != NULL)
		m->on_ready(m, m->ready_arg);
}

static void wait_fail_all(struct cache_source *s, enum prefix_unavailable why)
{
	while (s->n_waits > 0) {
		struct prefix_memo *m = s->waits[s->n_waits - 1].memo;
		struct prefix_memo_entry *e = find_entry(m, s->key);
		if (e == NULL || !e->pending) { /* cannot happen: drop the record */
			s->n_waits--;
			continue;
		}
		unavailable(e, why);
		entry_done(m, e, s, true);
	}
}

void prefix_memo_cancel(struct prefix_memo *m)
{
	for (uint32_t i = 0; i < m->n_entries && m->n_pending > 0; i++)
		entry_unwait(m, &m->entries[i]);
}

uint32_t prefix_memo_expire(struct prefix_memo *m, uint64_t now_ns)
{
	for (uint32_t i = 0; i < m->n_entries && m->n_pending > 0; i++) {
		struct prefix_memo_entry *e = &m->entries[i];
		if (e->pending && now_ns >= e->deadline_ns) {
			struct cache_source *s = e->src;
			unavailable(e, PREFIX_WHY_TIMEOUT); /* the query stays in flight */
			entry_done(m, e, s, false);
		}
	}
	return m->n_pending;
}

uint64_t prefix_memo_deadline(const struct prefix_memo *m)
{
	uint64_t d = 0;
	for (uint32_t i = 0; i < m->n_entries; i++)
		if (m->entries[i].pending && m->entries[i].deadline_ns > d)
			d = m->entries[i].deadline_ns;
	return d;
}

/* One received frame of `got` bytes (-2: over the buffer) at `now`. */
static int on_reply(struct cache_source *s, long got, uint64_t now)
{
	if (s->inflight > 0)
		s->inflight--;
	struct statebus_query_reply rep = {.matches = s->matches};
	int rc = got == -2 ? SY_ERANGE
			   : statebus_query_decode_reply(s->in, (size_t)got, &rep,
							 STATEBUS_QUERY_MAX_MATCHES);
	int w = rep.id != 0 ? wait_index(s, rep.id) : -1;
	if (w < 0 && rc != SY_OK && s->n_waits == 1)
		w = 0; /* an undecodable reply: the only query waiting is its own */
	if (w < 0) {
		s->stats.late_replies++;
		return SY_OK;
	}
	struct prefix_memo *m = s->waits[w].memo;
	struct prefix_memo_entry *e = find_entry(m, s->key);
	if (e == NULL || !e->pending) {
		wait_remove(s, (uint32_t)w);
		s->stats.late_replies++;
		return SY_OK;
	}
	if (now >= e->deadline_ns) {
		s->stats.late_replies++;
		unavailable(e, PREFIX_WHY_TIMEOUT);
	} else if (rc == SY_ERANGE) {
		unavailable(e, PREFIX_WHY_TOO_LARGE);
	} else if (rc != SY_OK) {
		e->status = PREFIX_REJECTED;
	} else {
		e->status = PREFIX_FOUND;
		e->why = PREFIX_WHY_NONE;
		e->n_depths = 0;
		e->names_len = 0;
		if (store_reply(m, e, &rep) != SY_OK) {
			unavailable(e, PREFIX_WHY_TOO_LARGE); /* no room for its answer */
			entry_done(m, e, s, true);
			return SY_ENOMEM;
		}
	}
	entry_done(m, e, s, true);
	return SY_OK;
}

int cache_source_drain(struct cache_source *s, uint64_t now_ns)
{
	if (s->kind != CACHE_SOURCE_INDEXER || s->sock == NULL || s->pid != (int)getpid())
		return 0;
	int n = 0;
	for (;;) {
		long got;
		while (s->sock != NULL && (got = recv_frame(s)) != -1) {
			n++;
			(void)on_reply(s, got, now_ns);
		}
		if (s->sock == NULL)
			return n;
		int ev = 0;
		size_t el = sizeof(ev);
		if (zmq_getsockopt(s->sock, ZMQ_EVENTS, &ev, &el) != 0 || !(ev & ZMQ_POLLIN))
			return n;
	}
}

/* ---- indexer lookup ---------------------------------------------------------- */

/* Sends the request's query to indexer `s` without waiting and leaves `e`
 * pending, or fills `e` with the reason it was not sent. `block`: a send
 * refused for want of a connection is retried until the deadline. */
static int indexer_send(struct prefix_memo *m, struct prefix_memo_entry *e,
			struct cache_source *s, const struct pick_request *req, bool block,
			bool *sent)
{
	*sent = false;
	if (m->n_ids > STATEBUS_QUERY_MAX_HASHES) {
		unavailable(e, PREFIX_WHY_TOO_LARGE);
		return SY_OK;
	}
	int rc = sock_open(s);
	if (rc == SY_ENOMEM)
		return rc;
	if (rc != SY_OK) {
		unavailable(e, PREFIX_WHY_UNREACHABLE);
		return SY_OK;
	}
	uint64_t now = sy_mono_ns();
	cache_source_drain(s, now); /* replies already there, late ones included */
	if (s->inflight >= s->max_inflight) {
		if (s->n_waits == 0)
			sock_close(s); /* drops the timed-out ones; reconnect next time */
		unavailable(e, PREFIX_WHY_OVERLOADED);
		return SY_OK;
	}
	uint64_t id = ++s->next_id;
	if (statebus_query_encode_request(&s->out, id, req->model.ptr, req->model.len,
					  m->block_size, m->bigram, m->ids, m->n_ids, true) != SY_OK)
		return SY_ENOMEM;
	if (s->out.len > STATEBUS_QUERY_MAX_BYTES) {
		unavailable(e, PREFIX_WHY_TOO_LARGE);
		return SY_OK;
	}
	uint64_t deadline = now + (uint64_t)s->timeout_ms * 1000000u;
	/* ZMQ_IMMEDIATE: writable only once a connection exists. */
	if (zmq_send(s->sock, s->out.buf, s->out.len, ZMQ_DONTWAIT) < 0) {
		zmq_pollitem_t it = {.socket = s->sock, .events = ZMQ_POLLOUT};
		long wait = (long)((uint64_t)s->timeout_ms);
		if (!block || zmq_poll(&it, 1, wait) <= 0 ||
		    zmq_send(s->sock, s->out.buf, s->out.len, ZMQ_DONTWAIT) < 0) {
			unavailable(e, PREFIX_WHY_UNREACHABLE);
			return SY_OK;
		}
	}
	s->inflight++;
	s->waits[s->n_waits++] = (struct cache_source_wait){.id = id, .memo = m};
	unavailable(e, PREFIX_WHY_TIMEOUT); /* what a pick reads while it waits */
	e->pending = true;
	e->src = s;
	e->query_id = id;
	e->deadline_ns = deadline;
	m->n_pending++;
	*sent = true;
	/* Sending may have taken the edge of ZMQ_FD: look again. */
	cache_source_drain(s, sy_mono_ns());
	return SY_OK;
}

/* Waits on the socket until `e` completes or its deadline passes. */
static void indexer_wait(struct prefix_memo *m, struct prefix_memo_entry *e,
			 struct cache_source *s)
{
	while (e->pending) {
		uint64_t now = sy_mono_ns();
		if (now >= e->deadline_ns || s->sock == NULL) {
			unavailable(e, PREFIX_WHY_TIMEOUT);
			entry_done(m, e, s, false);
			return;
		}
		zmq_pollitem_t it = {.socket = s->sock, .events = ZMQ_POLLIN};
		long wait = (long)((e->deadline_ns - now + 999999u) / 1000000u);
		if (zmq_poll(&it, 1, wait) < 0) {
			unavailable(e, PREFIX_WHY_UNREACHABLE);
			entry_done(m, e, s, false);
			return;
		}
		cache_source_drain(s, sy_mono_ns());
	}
}

enum lookup_mode { LOOKUP_NO_ASK, LOOKUP_SEND, LOOKUP_WAIT };

static const struct prefix_memo_entry *lookup(struct prefix_memo *m, struct cache_source *s,
					      struct statebus_region *r,
					      const struct pick_request *req, enum lookup_mode mode)
{
	struct prefix_memo_entry *e = find_entry(m, s->key);
	if (e != NULL)
		return e;
	if ((e = new_entry(m, s->key)) == NULL)
		return NULL;
	int rc = SY_OK;
	if (!m->chain_done || m->chain_status != PREFIX_FOUND) {
		e->status = PREFIX_NO_CHAIN;
	} else if (s->kind == CACHE_SOURCE_LOCAL) {
		m->lookups++;
		rc = lookup_local(m, e, r);
	} else if (mode == LOOKUP_NO_ASK) {
		unavailable(e, PREFIX_WHY_TIMEOUT); /* not asked before the pick */
	} else {
		bool sent;
		m->lookups++;
		rc = indexer_send(m, e, s, req, mode == LOOKUP_WAIT, &sent);
		if (sent && mode == LOOKUP_WAIT)
			indexer_wait(m, e, s);
		if (sent)
			return e; /* counted when it completes (perhaps already) */
	}
	if (rc != SY_OK) {
		m->n_entries--; /* forget the half-made entry */
		return NULL;
	}
	account(s, e);
	return e;
}

const struct prefix_memo_entry *prefix_memo_lookup(struct prefix_memo *m, struct cache_source *s,
						   struct statebus_region *r,
						   const struct pick_request *req, bool allow_block)
{
	return lookup(m, s, r, req, allow_block ? LOOKUP_WAIT : LOOKUP_NO_ASK);
}

const struct prefix_memo_entry *prefix_memo_ask(struct prefix_memo *m, struct cache_source *s,
						struct statebus_region *r,
						const struct pick_request *req)
{
	return lookup(m, s, r, req, LOOKUP_SEND);
}

uint32_t prefix_entry_depth(const struct prefix_memo_entry *e, uint32_t slot, uint32_t generation,
			    const char *id)
{
	const struct prefix_depth *d = prefix_entry_find(e, slot, generation, id);
	return d != NULL ? d->blocks : 0;
}

const struct prefix_depth *prefix_entry_find(const struct prefix_memo_entry *e, uint32_t slot,
					     uint32_t generation, const char *id)
{
	size_t lo = 0, hi = e->n_depths;
	if (e->status != PREFIX_FOUND)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct prefix_depth *d = &e->depths[mid];
		int c;
		if (d->url != NULL)
			c = strcmp(d->url, id);
		else
			c = d->slot < slot ? -1 : d->slot > slot ? 1 : 0;
		if (c == 0)
			return d->url != NULL || d->generation == generation ? d : NULL;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- fill -------------------------------------------------------------------- */

static int fill_group(struct prefix_memo *m, const struct fleet *f, struct engine_group *grp,
		      struct statebus_region *r, const struct pick_request *req,
		      enum prefix_fill_mode mode)
{
	if (grp->policy.kind != POLICY_CACHE_AWARE || grp->stage == STAGE_DECODE)
		return SY_OK;
	struct cache_source *s = cache_aware_source(&grp->policy);
	if (s == NULL)
		return SY_OK;
	if (!m->chain_done) {
		uint32_t bs = 0;
		bool bigram = false;
		cache_model_blocks(f, req->model.ptr, req->model.len, &bs, &bigram);
		int rc = prefix_memo_chain(m, req, bs, bigram);
		if (rc < 0)
			return rc;
	}
	return lookup(m, s, r, req, mode == PREFIX_FILL_WAIT ? LOOKUP_WAIT : LOOKUP_SEND) != NULL
		       ? SY_OK
		       : SY_ENOMEM;
}

int prefix_memo_fill(struct prefix_memo *m, struct bucket *const *order, size_t n,
		     const struct fleet *f, struct statebus_region *r,
		     const struct pick_request *req, enum prefix_fill_mode mode)
{
	if (m->filled)
		return SY_OK;
	m->filled = true;
	for (size_t i = 0; i < n; i++) {
		struct bucket *b = order[i];
		int rc = fill_group(m, f, b->pd ? &b->prefill : &b->plain, r, req, mode);
		if (rc != SY_OK)
			return rc;
	}
	return SY_OK;
}
