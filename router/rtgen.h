/* rtgen.h — the data plane's configuration generation (DESIGN.md §9).
 *
 * A generation bundles everything a request needs that a reload may change:
 * the parsed configuration, the selection core's generation (router/core/generation.h,
 * when built), and the parsed sampling override. It is refcounted: the
 * worker process holds one reference to its current generation, each
 * request one to the generation it started with; a SIGHUP reload builds a
 * new one and drops the process's reference to the old, which is freed
 * when its last request ends. Single-threaded (one per worker process), so
 * the count is a plain integer.
 */
#ifndef SY_ROUTER_RTGEN_H
#define SY_ROUTER_RTGEN_H

#include <jansson.h>
#include <stdint.h>

#include "common/config.h"

struct router_gen;

struct rt_gen {
	unsigned refs;
	uint64_t id;                 /* 1, 2, ... per process: reloads seen */
	struct sy_config cfg;        /* owned */
	struct router_gen *sel;      /* selection core generation (owned ref) */
	json_t *sampling_override;   /* router.override_sampling_params parsed; NULL off */
};

/* Builds a generation from a finished configuration (ownership of *cfg's
 * contents moves in; *cfg is zeroed). On failure writes a message to `err`
 * (capacity errcap), frees the configuration, and returns NULL. */
struct rt_gen *rt_gen_build(struct sy_config *cfg, uint64_t id, char *err, size_t errcap);

static inline struct rt_gen *rt_gen_ref(struct rt_gen *g)
{
	g->refs++;
	return g;
}

/* Drops one reference; the last frees the generation. NULL is a no-op. */
void rt_gen_unref(struct rt_gen *g);

/* Loads the configuration the way the command line says (argv: --config
 * FILE and flags, section "router"), finished. Returns 0, or a negative
 * sy_err with a message in `err`. Sets *check_only for --check-config and
 * *help for --help. */
int rt_config_from_args(int argc, char **argv, struct sy_config *cfg, int *check_only,
			int *help, char *err, size_t errcap);

#endif
