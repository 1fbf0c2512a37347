/* fleet_view.h — a process-local, sorted snapshot of the state plane's workers
 * table, refreshed at most every `refresh_ns` (and at once when forced).
 *
 * Why: statebus_worker_read() copies a ~700-byte record under a seqlock; doing
 * it for every slot on every pick would cost microseconds per request. The
 * router keeps a copy of the live workers (slot, generation, ID, model, role,
 * health, bootstrap port, DP size), sorted by worker ID, and rescans the
 * table when the copy is older than refresh_ns (default 20 ms: health
 * changes and new workers are seen within that time; the statebus probes
 * health every second). A pick is still validated against the table itself
 * (statebus_worker_valid on (slot, generation)) before it is returned, so a
 * removed or reused slot is never handed to dispatch.
 *
 * Models are interned: each entry carries a small model index, and a request's
 * model is looked up once per selection (fleet_model_index), so candidate
 * filtering compares integers.
 *
 * Invariant: every entry was ACTIVE with its generation at the last refresh;
 * entries are sorted by strcmp of id, ids unique. Process-local, not
 * thread-safe; lives in a configuration generation (router/core/generation.h).
 */
#ifndef SY_ROUTER_FLEET_H
#define SY_ROUTER_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statebus.h"

#define FLEET_DEFAULT_REFRESH_NS UINT64_C(20000000) /* 20 ms */
#define FLEET_NO_MODEL UINT32_MAX
#define FLEET_MAX_ADAPTERS 64u /* distinct (LoRA adapter, base model) pairs
				  routable as adapters; more are left out */

/* A LoRA adapter some worker serves (statebus_worker.lora_adapters). */
struct fleet_adapter {
	char name[STATEBUS_MODEL_MAX];
	uint32_t model_idx;      /* its base model: index into fleet.models */
};

struct fleet_entry {
	uint32_t slot;
	uint32_t generation;
	uint32_t model_idx;      /* index into fleet.models */
	uint8_t role;            /* enum statebus_worker_role */
	bool healthy;
	uint16_t bootstrap_port;
	uint16_t dp_size;
	uint8_t engine;          /* enum statebus_engine_kind */
	uint64_t adapters;       /* bit i: serves fleet.adapters[i] */
	uint32_t kv_block_size;  /* tokens per KV block, 0 = unknown */
	bool kv_bigram;          /* the engine hashes in bigram mode */
	bool kv_indexed;         /* the index holds this worker's blocks: KV events
				    accepted (kv_rejected 0), or, without KV events,
				    the statebus's predictions (approximate mode) */
	char id[STATEBUS_WORKER_ID_MAX];
};

struct fleet {
	const struct statebus_region *region; /* region of the last refresh */
	uint64_t refreshed_ns;   /* CLOCK_MONOTONIC of the last refresh, 0 = never */
	uint64_t refresh_ns;     /* max age before a rescan (0: every selection) */
	uint64_t version;        /* bumped by every refresh that changed entries */
	struct fleet_entry *entries; /* n, sorted by id */
	size_t n, cap;
	char (*models)[STATEBUS_MODEL_MAX]; /* distinct models of entries and of
					       the static configuration */
	size_t n_models, cap_models;
	size_t n_static_models;  /* the first n_static_models come from config */
	struct fleet_adapter adapters[FLEET_MAX_ADAPTERS]; /* of entries, re-interned
					   at each refresh */
	size_t n_adapters;
};

/* Empty fleet with the given refresh period (ns). */
void fleet_init(struct fleet *f, uint64_t refresh_ns);
void fleet_free(struct fleet *f);

/* Registers a model name that counts as served even with no live worker
 * (model_id and the configured workers' models). 0 or SY_ENOMEM. */
int fleet_add_static_model(struct fleet *f, const char *model);

/* Rescans the workers table when forced, when the region changed, or when
 * the snapshot is older than refresh_ns at now_ns. Never blocks (seqlock
 * reads; a torn slot reads as absent). Returns true when entries changed.
 * SY_ENOMEM keeps the previous snapshot and returns false. */
bool fleet_refresh(struct fleet *f, const struct statebus_region *r, uint64_t now_ns, bool force);

/* Index of model `len` bytes at `name` in f->models, or FLEET_NO_MODEL when
 * no worker (live or configured) serves it. */
uint32_t fleet_model_index(const struct fleet *f, const char *name, size_t len);

/* The adapter `len` bytes at `name` as some entry serves it: its index in
 * f->adapters (the first pair of that name when two base models have one)
 * with *model_idx its base model, or FLEET_NO_MODEL. */
uint32_t fleet_adapter_index(const struct fleet *f, const char *name, size_t len,
			     uint32_t *model_idx);

/* Bits (1 << enum statebus_worker_role) of the roles of the entries that
 * serve model `idx`, healthy or not. O(entries). */
unsigned fleet_model_roles(const struct fleet *f, uint32_t idx);

/* The model every entry serves when they all serve one, else
 * FLEET_NO_MODEL; *n_models is the number of distinct models of entries
 * (0: no entry). */
uint32_t fleet_only_model(const struct fleet *f, size_t *n_models);

#endif
