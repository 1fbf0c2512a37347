/* fleet_view.c — the process-local workers snapshot (fleet_view.h).
 *
 * Refresh: read every slot with statebus_worker_read (seqlock copy; a free or
 * torn slot is skipped), keep ACTIVE workers, sort them by ID, and intern
 * their models after the configured ones. The new entries replace the old
 * only when the copy differs, so `version` changes exactly when membership
 * caches must be rebuilt. On allocation failure the old snapshot stays.
 */
#include "router/core/fleet_view.h"
#include "common/errors.h"

#include <stdlib.h>
#include <string.h>

void fleet_init(struct fleet *f, uint64_t refresh_ns)
{
	memset(f, 0, sizeof(*f));
	f->refresh_ns = refresh_ns;
}

void fleet_free(struct fleet *f)
{
	free(f->entries);
	free(f->models);
	memset(f, 0, sizeof(*f));
}

static uint32_t find_model(const struct fleet *f, const char *name, size_t len)
{
	if (len >= STATEBUS_MODEL_MAX)
		return FLEET_NO_MODEL;
	for (size_t i = 0; i < f->n_models; i++)
		if (strncmp(f->models[i], name, len) == 0 && f->models[i][len] == '\0')
			return (uint32_t)i;
	return FLEET_NO_MODEL;
}

static int add_model(struct fleet *f, const char *name, size_t len, uint32_t *idx)
{
	uint32_t i = find_model(f, name, len);
	if (i != FLEET_NO_MODEL) {
		*idx = i;
		return SY_OK;
	}
	if (len >= STATEBUS_MODEL_MAX)
		return SY_EINVAL;
	if (f->n_models == f->cap_models) {
		size_t cap = f->cap_models ? f->cap_models * 2 : 8;
		void *m = realloc(f->models, cap * sizeof(*f->models));
		if (m == NULL)
			return SY_ENOMEM;
		f->models = m;
		f->cap_models = cap;
	}
	memcpy(f->models[f->n_models], name, len);
	f->models[f->n_models][len] = '\0';
	*idx = (uint32_t)f->n_models++;
	return SY_OK;
}

int fleet_add_static_model(struct fleet *f, const char *model)
{
	uint32_t idx;
	/* Static models stay first: only call before the first refresh. */
	int rc = add_model(f, model, strlen(model), &idx);
	if (rc == SY_OK && idx == f->n_static_models)
		f->n_static_models++;
	return rc == SY_EINVAL ? SY_OK : rc; /* too long: never matches anyway */
}

uint32_t fleet_model_index(const struct fleet *f, const char *name, size_t len)
{
	return find_model(f, name, len);
}

uint32_t fleet_adapter_index(const struct fleet *f, const char *name, size_t len,
			     uint32_t *model_idx)
{
	if (len >= STATEBUS_MODEL_MAX)
		return FLEET_NO_MODEL;
	for (size_t i = 0; i < f->n_adapters; i++)
		if (strncmp(f->adapters[i].name, name, len) == 0 && f->adapters[i].name[len] == '\0') {
			*model_idx = f->adapters[i].model_idx;
			return (uint32_t)i;
		}
	return FLEET_NO_MODEL;
}

/* The bits of the adapters `list` (statebus_worker.lora_adapters) of a
 * worker of model `model_idx`, interned into f->adapters. */
static uint64_t add_adapters(struct fleet *f, const char *list, size_t cap, uint32_t model_idx)
{
	uint64_t bits = 0;
	size_t off = 0;
	while (off < cap && list[off] != '\0') {
		size_t l = strnlen(list + off, cap - off);
		if (off + l >= cap || l >= STATEBUS_MODEL_MAX)
			break; /* unterminated: a torn or hostile record */
		const char *name = list + off;
		off += l + 1;
		size_t i;
		for (i = 0; i < f->n_adapters; i++)
			if (f->adapters[i].model_idx == model_idx && strcmp(f->adapters[i].name, name) == 0)
				break;
		if (i == f->n_adapters) {
			if (f->n_adapters == FLEET_MAX_ADAPTERS)
				continue;
			memcpy(f->adapters[i].name, name, l + 1);
			f->adapters[i].model_idx = model_idx;
			f->n_adapters++;
		}
		bits |= UINT64_C(1) << i;
	}
	return bits;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct fleet_entry *)a)->id, ((const struct fleet_entry *)b)->id);
}

bool fleet_refresh(struct fleet *f, const struct statebus_region *r, uint64_t now_ns, bool force)
{
	if (r == NULL)
		return false;
	if (!force && f->region == r && f->refreshed_ns != 0 &&
	    now_ns - f->refreshed_ns < f->refresh_ns)
		return false;

	uint32_t cap = statebus_workers_capacity(r);
	struct fleet_entry *next = malloc((cap ? cap : 1) * sizeof(*next));
	if (next == NULL)
		return false;
	size_t n = 0;
	struct statebus_worker w;
	f->n_models = f->n_static_models; /* re-intern the table's models */
	f->n_adapters = 0;
	for (uint32_t s = 0; s < cap; s++) {
		if (statebus_worker_read(r, s, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		struct fleet_entry *e = &next[n];
		memset(e, 0, sizeof(*e));
		if (add_model(f, w.model, strnlen(w.model, sizeof(w.model)), &e->model_idx) ==
		    SY_ENOMEM) {
			free(next);
			f->refreshed_ns = 0; /* try again next time */
			return false;
		}
		e->slot = s;
		e->generation = w.generation;
		e->role = w.role;
		e->healthy = w.healthy != 0;
		e->bootstrap_port = w.bootstrap_port;
		e->dp_size = w.dp_size;
		e->engine = w.engine;
		e->adapters = add_adapters(f, w.lora_adapters, sizeof(w.lora_adapters), e->model_idx);
		e->kv_block_size = w.kv_block_size;
		e->kv_bigram = w.kv_bigram != 0;
		e->kv_indexed = w.has_cache_signal && w.kv_rejected == STATEBUS_KV_OK;
		if (!e->kv_indexed && w.kv_block_size > 0) {
			/* Approximate mode: no KV events, predictions are the
			 * index's only signal for this worker. */
			struct statebus_predict_worker pw;
			e->kv_indexed = statebus_predict_worker_read(r, s, &pw) == SY_OK &&
					pw.cache_signal == STATEBUS_CACHE_SIGNAL_PREDICTED;
		}
		memcpy(e->id, w.id, sizeof(e->id));
		n++;
	}
	qsort(next, n, sizeof(*next), cmp_entry);

	bool changed = f->region != r || n != f->n ||
		       (n > 0 && memcmp(next, f->entries, n * sizeof(*next)) != 0);
	f->region = r;
	f->refreshed_ns = now_ns ? now_ns : 1;
	if (!changed) {
		free(next);
		return false;
	}
	free(f->entries);
	f->entries = next;
	f->n = n;
	f->cap = cap;
	f->version++;
	return true;
}

unsigned fleet_model_roles(const struct fleet *f, uint32_t idx)
{
	unsigned bits = 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->entries[i].model_idx == idx && f->entries[i].role < 8)
			bits |= 1u << f->entries[i].role;
	return bits;
}

uint32_t fleet_only_model(const struct fleet *f, size_t *n_models)
{
	uint32_t only = FLEET_NO_MODEL;
	*n_models = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (f->entries[i].model_idx == only)
			continue;
		if (only != FLEET_NO_MODEL) {
			*n_models = 2; /* at least */
			return FLEET_NO_MODEL;
		}
		only = f->entries[i].model_idx;
		*n_models = 1;
	}
	return only;
}
