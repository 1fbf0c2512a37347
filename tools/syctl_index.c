/* syctl_index.c — `syctl index` and `syctl match`: the radix index seen
 * through libstatebus's reader API (statebus_index_stats, _owner_stats,
 * _match). Both claim a tool process slot for their read brackets and
 * release it on exit; neither takes the writer lock.
 *
 *   index [--worker URL] → occupancy, counters, and per (worker, DP rank)
 *       the blocks it owns in any tier and per tier. Ownerships of an older
 *       generation of a slot (not yet cleared) are listed with
 *       "current": false.
 *   match --tokens 1,2,... [--block-size N] [--bigram] [--salt S] [--lora NAME]
 *       hashes the tokens with the SGLang block-hash chain (common/
 *       blockhash.h), in LoRA adapter NAME's namespace with --lora (its
 *       root seed, sy_blockhash_lora_seed; the salt is then ignored); block size and bigram mode default to the first
 *       active worker record that has a block size (sglang-wire.md §10
 *       "block-size oracle").
 *   match --hashes h1,h2,... → the given block ids (i64, as published).
 *   Output: {"blocks": N, "matches": [{"worker": URL, "dp_rank": R,
 *       "depth": D, "slot": S, "tiers": [...]}, ...]}, deepest first.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "common/clock.h"
#include "syctl.h"

static const char *const tier_names[] = {"device", "host", "disk", "external", "predicted"};

static json_t *tiers_json(uint32_t tiers)
{
	json_t *a = json_array();
	for (int b = 0; b < 5; b++)
		if (tiers & (1u << b))
			json_array_append_new(a, json_string(tier_names[b]));
	return a;
}

static void tiers_text(uint32_t tiers, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (int b = 0; b < 5; b++)
		if (tiers & (1u << b)) {
			size_t n = strlen(buf);
			snprintf(buf + n, cap - n, "%s%s", n ? "," : "", tier_names[b]);
		}
}

static int claim(struct statebus_region *r)
{
	int rc = statebus_proc_claim(r, STATEBUS_PROC_TOOL, NULL);
	if (rc == SY_EPERM) {
		fprintf(stderr, "syctl: reading the index needs a reader slot, i.e. write access to "
			"the region (attached read-only): run as the daemons' user\n");
		return 1;
	}
	if (rc != SY_OK && rc != SY_EEXIST) {
		fprintf(stderr, "syctl: no free process slot for a reader: %s\n", sy_strerror(rc));
		return 1;
	}
	return 0;
}

/* Worker ID of slot `slot` if its generation is `gen` (else ""). */
static bool worker_id(struct statebus_region *r, uint32_t slot, uint32_t gen, char *id, size_t cap)
{
	struct statebus_worker w;
	if (statebus_worker_read(r, slot, &w) != SY_OK || w.generation != gen) {
		id[0] = '\0';
		return false;
	}
	snprintf(id, cap, "%s", w.id);
	return true;
}

/* ---- index --------------------------------------------------------------- */

int syctl_cmd_index(struct statebus_region *r, const struct syctl_opts *o)
{
	int64_t only = -1;
	if (o->worker) {
		char id[STATEBUS_WORKER_ID_MAX];
		uint32_t slot, gen;
		if (statebus_worker_id_normalise(o->worker, id, sizeof(id)) != SY_OK ||
		    statebus_worker_find(r, id, &slot, &gen) != SY_OK) {
			fprintf(stderr, "syctl: no worker '%s'\n", o->worker);
			return 1;
		}
		only = slot;
	}
	if (claim(r))
		return 1;
	struct statebus_index_stats s;
	statebus_index_stats(r, &s);
	size_t cap = 1024;
	struct statebus_index_owner_stats *ow = calloc(cap, sizeof(*ow));
	int n = ow ? statebus_index_owner_stats(r, only, ow, cap) : SY_ENOMEM;
	if (n < 0) {
		fprintf(stderr, "syctl: index owners: %s\n", sy_strerror(n));
		free(ow);
		return 1;
	}
	if ((size_t)n > cap)
		n = (int)cap;
	char id[STATEBUS_WORKER_ID_MAX];
	if (o->json) {
		json_t *t = json_object();
		json_object_set_new(t, "incarnation", json_integer((json_int_t)statebus_region_incarnation(r)));
		json_object_set_new(t, "nodes", json_integer(s.nodes));
		json_object_set_new(t, "nodes_capacity", json_integer(s.nodes_capacity));
		json_object_set_new(t, "nodes_retired", json_integer(s.nodes_retired));
		json_object_set_new(t, "owners", json_integer((json_int_t)s.owners));
		json_object_set_new(t, "overflow_used", json_integer(s.overflow_used));
		json_object_set_new(t, "overflow_capacity", json_integer(s.overflow_capacity));
		json_object_set_new(t, "stored_blocks", json_integer((json_int_t)s.stored_blocks));
		json_object_set_new(t, "removed_blocks", json_integer((json_int_t)s.removed_blocks));
		json_object_set_new(t, "evictions", json_integer((json_int_t)s.evictions));
		json_object_set_new(t, "pruned", json_integer((json_int_t)s.pruned));
		json_object_set_new(t, "dropped", json_integer((json_int_t)s.dropped));
		json_object_set_new(t, "breadcrumbs", json_integer((json_int_t)s.breadcrumbs));
		json_object_set_new(t, "resets", json_integer((json_int_t)s.resets));
		json_object_set_new(t, "bytes", json_integer((json_int_t)s.bytes));
		json_t *arr = json_array();
		for (int i = 0; i < n; i++) {
			bool cur = worker_id(r, ow[i].worker, ow[i].worker_gen, id, sizeof(id));
			json_t *e = json_object();
			json_object_set_new(e, "worker", cur ? json_string(id) : json_null());
			json_object_set_new(e, "slot", json_integer(ow[i].worker));
			json_object_set_new(e, "generation", json_integer(ow[i].worker_gen));
			json_object_set_new(e, "current", json_boolean(cur));
			json_object_set_new(e, "dp_rank", json_integer(ow[i].rank));
			json_object_set_new(e, "blocks", json_integer((json_int_t)ow[i].blocks));
			json_t *tj = json_object();
			for (int b = 0; b < 5; b++)
				json_object_set_new(tj, tier_names[b],
						    json_integer((json_int_t)ow[i].tier_blocks[b]));
			json_object_set_new(e, "tiers", tj);
			json_array_append_new(arr, e);
		}
		json_object_set_new(t, "workers", arr);
		free(ow);
		return syctl_emit_json(t);
	}
	printf("nodes      %u / %u (%u retired), %" PRIu64 " ownerships, overflow %u / %u\n",
	       s.nodes, s.nodes_capacity, s.nodes_retired, s.owners, s.overflow_used,
	       s.overflow_capacity);
	printf("counters   stored %" PRIu64 ", removed %" PRIu64 ", evictions %" PRIu64
	       ", pruned %" PRIu64 ", dropped %" PRIu64 ", breadcrumbs %" PRIu64 ", resets %" PRIu64 "\n",
	       s.stored_blocks, s.removed_blocks, s.evictions, s.pruned, s.dropped, s.breadcrumbs,
	       s.resets);
	printf("memory     %" PRIu64 " bytes\n", s.bytes);
	if (n > 0)
		printf("%-40s %4s %10s %10s %10s %10s %10s %10s\n", "worker", "rank", "blocks",
		       "device", "host", "disk", "external", "predicted");
	for (int i = 0; i < n; i++) {
		if (!worker_id(r, ow[i].worker, ow[i].worker_gen, id, sizeof(id)))
			snprintf(id, sizeof(id), "(slot %u gen %u, stale)", ow[i].worker, ow[i].worker_gen);
		printf("%-40s %4u %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64
		       " %10" PRIu64 "\n",
		       id, ow[i].rank, ow[i].blocks, ow[i].tier_blocks[0], ow[i].tier_blocks[1],
		       ow[i].tier_blocks[2], ow[i].tier_blocks[3], ow[i].tier_blocks[4]);
	}
	free(ow);
	return 0;
}

/* ---- match --------------------------------------------------------------- */

/* Parses a comma-separated list of integers (signed when `sign`). Returns
 * the count, or -1 with a message. *out is malloc'd. */
static long parse_list(const char *flag, const char *s, bool sign, int64_t **out)
{
	size_t cap = 16, n = 0;
	int64_t *v = malloc(cap * sizeof(*v));
	const char *p = s;
	while (v != NULL && *p != '\0') {
		char *end;
		errno = 0;
		long long x = strtoll(p, &end, 10);
		if (errno || end == p || (*end != ',' && *end != '\0') || (!sign && (x < 0 || x > UINT32_MAX))) {
			fprintf(stderr, "syctl: %s: bad number near '%s'\n", flag, p);
			free(v);
			return -1;
		}
		if (n == cap) {
			int64_t *nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (nv == NULL)
				break;
			v = nv;
		}
		v[n++] = x;
		p = *end == ',' ? end + 1 : end;
	}
	if (v == NULL || n == 0) {
		fprintf(stderr, "syctl: %s: expected a comma-separated list\n", flag);
		free(v);
		return -1;
	}
	*out = v;
	return (long)n;
}

/* Block size and bigram mode from the first active worker that has one. */
static bool kv_facts(struct statebus_region *r, uint32_t *bs, bool *bigram)
{
	for (uint32_t i = 0; i < statebus_workers_capacity(r); i++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, i, &w) == SY_OK && w.state == STATEBUS_WORKER_ACTIVE &&
		    w.kv_block_size > 0) {
			*bs = w.kv_block_size;
			*bigram = w.kv_bigram != 0;
			return true;
		}
	}
	return false;
}

static int match_cmp(const void *a, const void *b)
{
	const struct statebus_index_match *x = a, *y = b;
	if (x->depth != y->depth)
		return x->depth > y->depth ? -1 : 1;
	if (x->worker != y->worker)
		return x->worker < y->worker ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The block-hash chain of --tokens (hashed with the SGLang chain; block
 * size and bigram from the workers unless given) or --hashes: *ids
 * (malloc'd) and *blocks, *bs / *bigram as used. Returns 0, 1 (runtime
 * error) or 2 (usage), with a message. */
static int chain_of(struct statebus_region *r, const struct syctl_opts *o, const char *cmd,
		    int64_t **out, size_t *out_blocks, uint32_t *out_bs, bool *out_bigram)
{
	if ((o->tokens == NULL) == (o->hashes == NULL)) {
		fprintf(stderr, "syctl: %s needs exactly one of --tokens or --hashes\n", cmd);
		return 2;
	}
	int64_t *list = NULL, *ids = NULL;
	long n = parse_list(o->tokens ? "tokens" : "hashes", o->tokens ? o->tokens : o->hashes,
			    o->hashes != NULL, &list);
	if (n < 0)
		return 2;
	size_t blocks;
	uint32_t bs = o->block_size;
	bool bigram = o->bigram;
	if (o->hashes) {
		ids = list;
		list = NULL;
		blocks = (size_t)n;
	} else {
		if (bs == 0 && !kv_facts(r, &bs, &bigram)) {
			fprintf(stderr, "syctl: no worker has a block size; pass --block-size\n");
			free(list);
			return 1;
		}
		uint32_t *tok = malloc((size_t)n * sizeof(uint32_t));
		struct sy_blockhash_params hp;
		size_t cnt = sy_blockhash_count((size_t)n, bs, bigram);
		ids = malloc((cnt ? cnt : 1) * sizeof(int64_t));
		if (tok == NULL || ids == NULL ||
		    sy_blockhash_params_init(&hp, bs, bigram, o->salt, o->salt ? strlen(o->salt) : 0) != SY_OK) {
			fprintf(stderr, "syctl: cannot hash tokens\n");
			free(tok);
			free(list);
			free(ids);
			return 1;
		}
		if (o->lora) {
			hp.has_seed = true;
			sy_blockhash_lora_seed(o->lora, strlen(o->lora), &hp.seed);
		}
		for (long i = 0; i < n; i++)
			tok[i] = (uint32_t)list[i];
		ssize_t k = sy_blockhash_chain(tok, (size_t)n, &hp, ids, cnt, NULL);
		free(tok);
		free(list);
		if (k < 0) {
			fprintf(stderr, "syctl: hashing: %s\n", sy_strerror((int)k));
			free(ids);
			return 1;
		}
		blocks = (size_t)k;
	}
	*out = ids;
	*out_blocks = blocks;
	*out_bs = bs;
	*out_bigram = bigram;
	return 0;
}

int syctl_cmd_match(struct statebus_region *r, const struct syctl_opts *o)
{
	int64_t *ids = NULL;
	size_t blocks = 0;
	uint32_t bs = 0;
	bool bigram = false;
	int crc = chain_of(r, o, "match", &ids, &blocks, &bs, &bigram);
	if (crc != 0)
		return crc;
	if (claim(r)) {
		free(ids);
		return 1;
	}
	size_t cap = (size_t)statebus_workers_capacity(r) * statebus_load_max_ranks(r);
	struct statebus_index_match *m = calloc(cap ? cap : 1, sizeof(*m));
	int k = m ? statebus_index_match(r, ids, blocks, m, cap) : SY_ENOMEM;
	free(ids);
	if (k < 0) {
		fprintf(stderr, "syctl: match: %s\n", sy_strerror(k));
		free(m);
		return 1;
	}
	qsort(m, (size_t)k, sizeof(*m), match_cmp);
	char id[STATEBUS_WORKER_ID_MAX];
	if (o->json) {
		json_t *t = json_object();
		json_object_set_new(t, "blocks", json_integer((json_int_t)blocks));
		if (o->tokens) {
			json_object_set_new(t, "block_size", json_integer(bs));
			json_object_set_new(t, "bigram", json_boolean(bigram));
		}
		json_t *arr = json_array();
		for (int i = 0; i < k; i++) {
			if (!worker_id(r, m[i].worker, m[i].worker_gen, id, sizeof(id)))
				continue; /* slot reused since the match */
			json_t *e = json_object();
			json_object_set_new(e, "worker", json_string(id));
			json_object_set_new(e, "dp_rank", json_integer(m[i].rank));
			json_object_set_new(e, "depth", json_integer(m[i].depth));
			json_object_set_new(e, "predicted_depth", json_integer(m[i].predicted_depth));
			json_object_set_new(e, "slot", json_integer(m[i].worker));
			json_object_set_new(e, "tiers", tiers_json(m[i].tiers));
			json_array_append_new(arr, e);
		}
		json_object_set_new(t, "matches", arr);
		free(m);
		return syctl_emit_json(t);
	}
	printf("blocks %zu", blocks);
	if (o->tokens)
		printf(" (block size %u%s)", bs, bigram ? ", bigram" : "");
	printf("\n");
	for (int i = 0; i < k; i++) {
		char tb[48];
		if (!worker_id(r, m[i].worker, m[i].worker_gen, id, sizeof(id)))
			continue;
		tiers_text(m[i].tiers, tb, sizeof(tb));
		printf("%-40s rank %-4u depth %-6u predicted %-6u %s\n", id, m[i].rank, m[i].depth,
		       m[i].predicted_depth, tb);
	}
	if (k == 0)
		printf("(no worker holds a prefix)\n");
	free(m);
	return 0;
}

/* ---- predict ------------------------------------------------------------- */

int syctl_cmd_predict(struct statebus_region *r, const struct syctl_opts *o)
{
	if (o->worker == NULL) {
		fprintf(stderr, "syctl: predict needs --worker URL\n");
		return 2;
	}
	char norm[STATEBUS_WORKER_ID_MAX];
	uint32_t slot, gen;
	if (statebus_worker_id_normalise(o->worker, norm, sizeof(norm)) != SY_OK ||
	    statebus_worker_find(r, norm, &slot, &gen) != SY_OK) {
		fprintf(stderr, "syctl: predict: no worker %s\n", o->worker);
		return 1;
	}
	struct statebus_worker w;
	if (statebus_worker_read(r, slot, &w) != SY_OK || o->dp_rank >= (w.dp_size ? w.dp_size : 1)) {
		fprintf(stderr, "syctl: predict: worker %s has no DP rank %u\n", norm, o->dp_rank);
		return 1;
	}
	int64_t *ids = NULL;
	size_t blocks = 0;
	uint32_t bs = 0;
	bool bigram = false;
	int crc = chain_of(r, o, "predict", &ids, &blocks, &bs, &bigram);
	if (crc != 0)
		return crc;
	if (claim(r)) {
		free(ids);
		return 1;
	}
	struct statebus_prediction p = {
		.worker = slot, .worker_gen = gen, .rank = o->dp_rank,
		.model_tag = statebus_predict_model_tag(w.model, strnlen(w.model, sizeof(w.model))),
		.now_ns = sy_mono_ns()};
	int rc = statebus_predict_push(r, (uint32_t)statebus_proc_self(r), &p, ids, blocks);
	free(ids);
	if (rc != SY_OK) {
		fprintf(stderr, "syctl: predict: %s\n", rc == SY_ENOSPC ? "prediction ring full"
								  : sy_strerror(rc));
		return 1;
	}
	if (o->json)
		return syctl_emit_json(json_pack("{s:s,s:i,s:i,s:i,s:I}", "worker", norm, "slot",
						 (int)slot, "generation", (int)gen, "dp_rank",
						 (int)o->dp_rank, "blocks", (json_int_t)blocks));
	printf("queued %zu block(s) as predicted for %s rank %u\n", blocks, norm, o->dp_rank);
	return 0;
}
