/* query_serve.c — answering remote prefix queries from the region
 * (statebus-query.h "serving"; docs/query.md).
 *
 * One query: decode (caps first), find the model's block-size oracle in the
 * workers table, compare, walk the radix index with statebus_index_match()
 * (it brackets itself), and name each owning (worker, rank) by the worker's
 * ID — read once per slot per query, generation- and model-checked, so a
 * reused slot or another model's owner is never reported. A request that
 * asks "predicted" gets each match's predicted depth, the age of its
 * deepest predicted block's last prediction (ms, from this host's clock)
 * and whether the worker is in approximate mode.
 */
#include "statebus-query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "statebus.h"

#define SERVE_MATCH_CAP 65536u

int statebus_query_server_init(struct statebus_query_server *s)
{
	memset(s, 0, sizeof(*s));
	s->hashes = malloc(STATEBUS_QUERY_MAX_HASHES * sizeof(*s->hashes));
	return s->hashes != NULL ? SY_OK : SY_ENOMEM;
}

void statebus_query_server_free(struct statebus_query_server *s)
{
	free(s->hashes);
	free(s->matches);
	free(s->out.buf);
	memset(s, 0, sizeof(*s));
}

static bool model_eq(const struct statebus_worker *w, const char *m, uint32_t len)
{
	return len < sizeof(w->model) && strncmp(w->model, m, len) == 0 && w->model[len] == '\0';
}

/* The model's oracle: false when no worker of it is indexed. */
static bool oracle(struct statebus_region *r, const char *m, uint32_t len, uint32_t *bs,
		   bool *bigram)
{
	uint32_t cap = statebus_workers_capacity(r);
	struct statebus_worker w;
	for (uint32_t s = 0; s < cap; s++) {
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		struct statebus_predict_worker pw;
		bool approximate = !w.has_cache_signal &&
				   statebus_predict_worker_read(r, s, &pw) == SY_OK &&
				   pw.cache_signal == STATEBUS_CACHE_SIGNAL_PREDICTED;
		if (!model_eq(&w, m, len) || !(w.has_cache_signal || approximate) ||
		    w.kv_rejected != STATEBUS_KV_OK || w.kv_block_size == 0)
			continue;
		*bs = w.kv_block_size;
		*bigram = w.kv_bigram != 0;
		return true;
	}
	return false;
}

static int reply_status(struct statebus_query_server *s, uint64_t id,
			enum statebus_query_status st, const char *error)
{
	return statebus_query_begin_reply(&s->out, id, st, error, 0, 0);
}

int statebus_query_answer(struct statebus_query_server *s, struct statebus_region *r,
			  const uint8_t *frame, size_t len, bool overloaded)
{
	struct statebus_query_request q = {.hashes = s->hashes};
	enum statebus_query_status st =
		statebus_query_decode_request(frame, len, &q, STATEBUS_QUERY_MAX_HASHES);
	if (st == STATEBUS_QUERY_TOO_LARGE) {
		s->too_large++;
		return reply_status(s, q.id, st, "more than 65536 hashes or 1 MiB");
	}
	if (st != STATEBUS_QUERY_OK) {
		s->bad++;
		return reply_status(s, q.id, STATEBUS_QUERY_BAD_REQUEST, "not a prefix query");
	}
	if (overloaded) {
		s->overloaded++;
		return reply_status(s, q.id, STATEBUS_QUERY_OVERLOADED, NULL);
	}
	uint32_t bs = 0;
	bool bigram = false;
	if (oracle(r, q.model, q.model_len, &bs, &bigram) &&
	    (bs != q.block_size || bigram != q.bigram)) {
		char why[128];
		snprintf(why, sizeof(why), "model block size %u%s, query %u%s", bs,
			 bigram ? " bigram" : "", q.block_size, q.bigram ? " bigram" : "");
		s->rejected++;
		return reply_status(s, q.id, STATEBUS_QUERY_REJECTED, why);
	}
	s->answered++;
	if (bs == 0 || q.n_hashes == 0)
		return statebus_query_begin_reply(&s->out, q.id, STATEBUS_QUERY_OK, NULL, q.n_hashes,
						  0);

	size_t cap = (size_t)statebus_workers_capacity(r) * statebus_load_max_ranks(r);
	if (cap > SERVE_MATCH_CAP)
		cap = SERVE_MATCH_CAP;
	if (cap > s->cap_matches) {
		void *p = realloc(s->matches, cap * sizeof(*s->matches));
		if (p == NULL)
			return SY_ENOMEM;
		s->matches = p;
		s->cap_matches = cap;
	}
	int n = statebus_index_match(r, q.hashes, q.n_hashes, s->matches, s->cap_matches);
	if (n < 0)
		n = 0;
	/* keep the owners of this model; name them by ID */
	struct statebus_worker w;
	uint32_t last = UINT32_MAX;
	bool last_ok = false;
	int kept = 0;
	for (int i = 0; i < n; i++) {
		struct statebus_index_match *m = &s->matches[i];
		if (m->worker != last) {
			last = m->worker;
			last_ok = statebus_worker_read(r, m->worker, &w) == SY_OK &&
				  w.state == STATEBUS_WORKER_ACTIVE && w.generation == m->worker_gen &&
				  model_eq(&w, q.model, q.model_len);
		}
		if (last_ok)
			s->matches[kept++] = *m;
		else
			m->depth = 0;
	}
	if (statebus_query_begin_reply(&s->out, q.id, STATEBUS_QUERY_OK, NULL, q.n_hashes,
				       (uint32_t)kept) != SY_OK)
		return SY_ENOMEM;
	last = UINT32_MAX;
	uint64_t now = sy_mono_ns();
	for (int i = 0; i < kept; i++) {
		struct statebus_index_match *m = &s->matches[i];
		if (m->worker != last) {
			last = m->worker;
			if (statebus_worker_read(r, m->worker, &w) != SY_OK)
				w.id[0] = '\0';
		}
		size_t ul = strnlen(w.id, sizeof(w.id));
		int rc;
		if (q.predicted) {
			uint64_t age = m->predicted_ns != 0 && now > m->predicted_ns
					       ? (now - m->predicted_ns) / 1000000u
					       : 0;
			rc = statebus_query_add_match_predicted(
				&s->out, w.id, ul ? ul : 1, m->rank, m->depth, m->predicted_depth,
				age > UINT32_MAX ? UINT32_MAX : (uint32_t)age,
				m->cache_signal == STATEBUS_CACHE_SIGNAL_PREDICTED);
		} else {
			rc = statebus_query_add_match(&s->out, w.id, ul ? ul : 1, m->rank, m->depth);
		}
		if (rc != SY_OK)
			return SY_ENOMEM;
	}
	return SY_OK;
}
