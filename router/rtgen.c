/* rtgen.c — configuration generations: build, reference counting, free. */
#include "router/rtgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/pick.h"

struct rt_gen *rt_gen_build(struct sy_config *cfg, uint64_t id, char *err, size_t errcap)
{
	struct rt_gen *g = calloc(1, sizeof(*g));
	if (g == NULL) {
		snprintf(err, errcap, "out of memory");
		sy_config_free(cfg);
		return NULL;
	}
	g->refs = 1;
	g->id = id;
	g->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	if (g->cfg.router.override_sampling_params != NULL) {
		json_error_t je;
		g->sampling_override = json_loads(g->cfg.router.override_sampling_params, 0, &je);
		if (g->sampling_override == NULL || !json_is_object(g->sampling_override)) {
			snprintf(err, errcap,
				 "router.override_sampling_params: must be a JSON object%s%s",
				 g->sampling_override ? "" : ": ",
				 g->sampling_override ? "" : je.text);
			rt_gen_unref(g);
			return NULL;
		}
	}
	if (rt_sel_build(g, err, errcap) != 0) {
		rt_gen_unref(g);
		return NULL;
	}
	return g;
}

void rt_gen_unref(struct rt_gen *g)
{
	if (g == NULL || --g->refs != 0)
		return;
	rt_sel_free(g);
	if (g->sampling_override)
		json_decref(g->sampling_override);
	sy_config_free(&g->cfg);
	free(g);
}
