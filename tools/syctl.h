/* syctl.h — shared between syctl's command files (syctl.c: region, workers,
 * load, in-flight, readers; syctl_index.c: index, match). */
#ifndef SY_TOOLS_SYCTL_H
#define SY_TOOLS_SYCTL_H

#include <stdbool.h>

#include <jansson.h>

#include "statebus.h"

struct syctl_opts {
	const char *shm;
	bool json;
	struct statebus_params params;
	/* index / match */
	const char *worker;    /* --worker URL (index): one worker only */
	const char *tokens;    /* --tokens 1,2,... (match) */
	const char *hashes;    /* --hashes h1,h2,... (match) */
	const char *salt;      /* --salt S (match): cache_salt of the chain */
	const char *lora;      /* --lora NAME (match): the chain of LoRA adapter NAME
	                          (sy_blockhash_lora_seed) */
	uint32_t block_size;   /* --block-size N (match); 0 = from the workers */
	bool bigram;           /* --bigram (match) */
	uint32_t dp_rank;      /* --dp-rank R (predict), default 0 */
};

/* Prints `obj` (stolen) as one JSON document on stdout; 0 or 1. */
int syctl_emit_json(json_t *obj);

/* syctl index [--worker ID]: index occupancy and per-(worker, rank) tiers. */
int syctl_cmd_index(struct statebus_region *r, const struct syctl_opts *o);
/* syctl match --tokens ... | --hashes ...: per-(worker, rank) depths. */
int syctl_cmd_match(struct statebus_region *r, const struct syctl_opts *o);
/* syctl predict --worker URL [--dp-rank R] --tokens ... | --hashes ...:
 * pushes one prediction into this process's ring (the statebus applies it). */
int syctl_cmd_predict(struct statebus_region *r, const struct syctl_opts *o);
/* syctl affinity: affinity store occupancy, counters and entries
 * (syctl_affinity.c). */
int syctl_cmd_affinity(struct statebus_region *r, const struct syctl_opts *o);

/* syctl queue: the router queue's rows per router process (syctl_queue.c,
 * which documents the JSON shape). */
int syctl_cmd_queue(struct statebus_region *r, const struct syctl_opts *o);

#endif
