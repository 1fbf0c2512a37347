/* cache_source.c — prefix sources (local index, remote statebus) and the
 * per-request prefix memo (cache_source.h; DESIGN.md §4 step 3, §9).
 *
 * Invariants: a memo entry, once stored for a request, is never redone for
 * that request (one lookup per source per request, shared by every bucket
 * attempt); depths are max over DP ranks and ≤ query_blocks; an indexer
 * socket is used only by the process that opened it; a pick never waits
 * on a socket (only prefix_memo_fill may).
 */
#include "router/policies/cache/cache_source.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "common/clock.h"
#include "common/errors.h"
#include "router/core/fleet_view.h"
#include "router/core/generation.h"
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

static void sock_close(struct cache_source *s)
{
	if (s->sock != NULL && s->pid == (int)getpid())
		zmq_close(s->sock);
	s->sock = NULL;
	s->inflight = 0;
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
	memset(s, 0, sizeof(*s));
}

/* Opens the DEALER in this process (after fork the parent's are dropped,
 * not closed: they belong to the parent). */
static int sock_open(struct cache_source *s)
{
	if (s->pid != (int)getpid()) {
		s->zctx = NULL;
		s->sock = NULL;
		s->inflight = 0;
		s->pid = (int)getpid();
	}
	if (s->sock != NULL)
		return SY_OK;
	if (s->in == NULL && (s->in = malloc(STATEBUS_QUERY_MAX_BYTES)) == NULL)
		return SY_ENOMEM;
	if (s->matches == NULL &&
	    (s->matches = malloc(STATEBUS_QUERY_MAX_MATCHES * sizeof(*s->matches))) == NULL)
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
	return SY_OK;
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

static struct prefix_memo_entry *new_entry(struct prefix_memo *m, uint32_t key)
{
	struct prefix_memo_entry *e = find_entry(m, key);
	if (e == NULL) {
		if (m->n_entries == PREFIX_MEMO_MAX_SOURCES)
			return NULL;
		e = &m->entries[m->n_entries++];
	}
	e->source_key = key;
	e->status = PREFIX_FOUND;
	e->why = PREFIX_WHY_NONE;
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
			if (d->blocks > p->blocks)
				p->blocks = d->blocks;
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

/* Local: statebus_index_match, max over ranks per (slot, generation). */
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
	if (n <= 0)
		return SY_OK;
	if (ensure_depths(e, (size_t)n) != SY_OK)
		return SY_ENOMEM;
	for (int i = 0; i < n; i++) {
		const struct statebus_index_match *x = &m->scratch[i];
		struct prefix_depth *d = &e->depths[e->n_depths++];
		d->slot = x->worker;
		d->generation = x->worker_gen;
		d->url = NULL;
		d->blocks = cap_blocks(x->depth, m->n_ids);
	}
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

/* Indexer: one query, waiting up to the source's timeout. */
static int lookup_indexer(struct prefix_memo *m, struct prefix_memo_entry *e,
			  struct cache_source *s, const struct pick_request *req)
{
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
	/* Late replies of earlier timed-out queries. */
	long got;
	while ((got = recv_frame(s)) != -1) {
		if (s->inflight > 0)
			s->inflight--;
		s->stats.late_replies++;
	}
	if (s->inflight >= s->max_inflight) {
		sock_close(s); /* drops the outstanding ones; reconnect next time */
		unavailable(e, PREFIX_WHY_OVERLOADED);
		return SY_OK;
	}
	uint64_t id = ++s->next_id;
	if (statebus_query_encode_request(&s->out, id, req->model.ptr, req->model.len,
					  m->block_size, m->bigram, m->ids, m->n_ids) != SY_OK)
		return SY_ENOMEM;
	if (s->out.len > STATEBUS_QUERY_MAX_BYTES) {
		unavailable(e, PREFIX_WHY_TOO_LARGE);
		return SY_OK;
	}
	uint64_t deadline = sy_mono_ns() + (uint64_t)s->timeout_ms * 1000000u;
	zmq_pollitem_t it = {.socket = s->sock, .events = ZMQ_POLLOUT};
	/* ZMQ_IMMEDIATE: writable only once a connection exists. */
	if (zmq_send(s->sock, s->out.buf, s->out.len, ZMQ_DONTWAIT) < 0) {
		uint64_t now = sy_mono_ns();
		long wait = now < deadline ? (long)((deadline - now) / 1000000u) : 0;
		if (zmq_poll(&it, 1, wait) <= 0 ||
		    zmq_send(s->sock, s->out.buf, s->out.len, ZMQ_DONTWAIT) < 0) {
			unavailable(e, PREFIX_WHY_UNREACHABLE);
			return SY_OK;
		}
	}
	s->inflight++;
	it.events = ZMQ_POLLIN;
	for (;;) {
		uint64_t now = sy_mono_ns();
		if (now >= deadline) {
			unavailable(e, PREFIX_WHY_TIMEOUT);
			return SY_OK;
		}
		long wait = (long)((deadline - now + 999999u) / 1000000u);
		int pr = zmq_poll(&it, 1, wait);
		if (pr < 0) {
			unavailable(e, PREFIX_WHY_UNREACHABLE);
			return SY_OK;
		}
		if (pr == 0)
			continue;
		while ((got = recv_frame(s)) != -1) {
			if (s->inflight > 0)
				s->inflight--;
			if (got == -2) {
				unavailable(e, PREFIX_WHY_TOO_LARGE);
				return SY_OK;
			}
			struct statebus_query_reply rep = {.matches = s->matches};
			rc = statebus_query_decode_reply(s->in, (size_t)got, &rep,
							 STATEBUS_QUERY_MAX_MATCHES);
			if (rc == SY_OK && rep.id != id) {
				s->stats.late_replies++;
				continue;
			}
			if (rc == SY_ERANGE) {
				unavailable(e, PREFIX_WHY_TOO_LARGE);
				return SY_OK;
			}
			if (rc != SY_OK) {
				e->status = PREFIX_REJECTED;
				return SY_OK;
			}
			return store_reply(m, e, &rep);
		}
	}
}

const struct prefix_memo_entry *prefix_memo_lookup(struct prefix_memo *m, struct cache_source *s,
						   struct statebus_region *r,
						   const struct pick_request *req, bool allow_block)
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
	} else if (!allow_block) {
		unavailable(e, PREFIX_WHY_TIMEOUT); /* not asked before the pick */
	} else {
		m->lookups++;
		rc = lookup_indexer(m, e, s, req);
	}
	if (rc != SY_OK) {
		m->n_entries--; /* forget the half-made entry */
		return NULL;
	}
	if (e->status == PREFIX_NO_CHAIN) {
		s->stats.no_chain++;
	} else {
		s->stats.lookups++;
		if (e->status == PREFIX_FOUND)
			s->stats.found++;
		else if (e->status == PREFIX_REJECTED)
			s->stats.rejected++;
		else
			s->stats.unavailable[e->why]++;
	}
	return e;
}

uint32_t prefix_entry_depth(const struct prefix_memo_entry *e, uint32_t slot, uint32_t generation,
			    const char *id)
{
	size_t lo = 0, hi = e->n_depths;
	if (e->status != PREFIX_FOUND)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct prefix_depth *d = &e->depths[mid];
		int c;
		if (d->url != NULL)
			c = strcmp(d->url, id);
		else
			c = d->slot < slot ? -1 : d->slot > slot ? 1 : 0;
		if (c == 0)
			return d->url != NULL || d->generation == generation ? d->blocks : 0;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* ---- fill -------------------------------------------------------------------- */

static int fill_group(struct prefix_memo *m, struct router_gen *g, struct engine_group *grp,
		      struct statebus_region *r, const struct pick_request *req)
{
	if (grp->policy.kind != POLICY_CACHE_AWARE || grp->stage == STAGE_DECODE)
		return SY_OK;
	struct cache_source *s = cache_aware_source(&grp->policy);
	if (s == NULL)
		return SY_OK;
	if (!m->chain_done) {
		uint32_t bs = 0;
		bool bigram = false;
		cache_model_blocks(&g->fleet, req->model.ptr, req->model.len, &bs, &bigram);
		int rc = prefix_memo_chain(m, req, bs, bigram);
		if (rc < 0)
			return rc;
	}
	return prefix_memo_lookup(m, s, r, req, true) != NULL ? SY_OK : SY_ENOMEM;
}

int prefix_memo_fill(struct prefix_memo *m, struct router_gen *g, struct statebus_region *r,
		     const struct pick_request *req, uint64_t now_ns)
{
	if (m->filled)
		return SY_OK;
	m->filled = true;
	if (!g->has_cache_policy)
		return SY_OK;
	fleet_refresh(&g->fleet, r, now_ns, false);

	struct bucket_signal sig = {
		.input_tokens = req->input_tokens,
		.has_peak = req->has_peak,
		.expected_peak = req->expected_peak,
		.has_ttft = req->has_ttft_slo,
		.ttft_ms = req->ttft_slo_ms,
		.has_tps = req->has_tps_slo,
		.tps = req->tps_slo,
	};
	size_t n = 0;
	const char *why = NULL;
	if (bucket_resolver_resolve(&g->resolver, &sig, g->order, g->n_buckets, &n, &why) !=
	    PICK_OK)
		return SY_OK; /* selection reports it */
	for (size_t i = 0; i < n; i++) {
		struct bucket *b = g->order[i];
		int rc = b->pd ? fill_group(m, g, &b->prefill, r, req)
			       : fill_group(m, g, &b->plain, r, req);
		if (rc != SY_OK)
			return rc;
	}
	return SY_OK;
}
