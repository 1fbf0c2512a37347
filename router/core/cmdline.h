/* cmdline.h — switchyard-router's command line over the common
 * configuration loader (DESIGN.md §5). */
#ifndef SY_ROUTER_CORE_CMDLINE_H
#define SY_ROUTER_CORE_CMDLINE_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* Loads the configuration the way the command line says (argv: --config
 * FILE and flags, section "router") into *cfg, finished (sy_config_finish).
 * Returns 0, or a negative sy_err with a message in `err` (capacity errcap).
 * Sets *check_only for --check-config and *help for --help. The caller
 * frees *cfg (sy_config_free) or hands it to router_gen_build. */
int router_config_from_args(int argc, char **argv, struct sy_config *cfg, int *check_only,
			    int *help, char *err, size_t errcap);

struct router_gen;

/* router_config_from_args, then router_gen_build with sequence `number`:
 * on success *out holds one reference. With --help, *help is set and
 * nothing is built (*out NULL, 0 returned). Errors: as the two steps, the
 * message in `err`. */
int router_gen_from_args(int argc, char **argv, uint64_t number, struct router_gen **out,
			 int *check_only, int *help, char *err, size_t errcap);

#endif
