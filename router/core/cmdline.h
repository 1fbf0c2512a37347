/* cmdline.h — switchyard-router's command line over the common
 * configuration loader (DESIGN.md §5). */
#ifndef SY_ROUTER_CORE_CMDLINE_H
#define SY_ROUTER_CORE_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* Room for every error of one command line (one line each). */
#define ROUTER_CMDLINE_ERR_MAX 16384

/* What the command line asks besides the configuration. */
struct router_cmdline {
	bool check_only; /* --check-config */
	bool help;       /* --help, -h: nothing else is parsed */
	bool version;    /* --version, -V: nothing else is parsed */
};

/* Loads the configuration the way the command line says (argv: --config
 * FILE and flags, section "router") into *cfg, finished (sy_config_finish).
 * Returns 0, or a negative sy_err with the messages in `err` (capacity
 * errcap, ROUTER_CMDLINE_ERR_MAX fits any): every bad flag is reported, one
 * line each, before finish runs. Fills *cl. With --help or --version
 * nothing else is parsed (0 returned). The caller frees *cfg
 * (sy_config_free) or hands it to router_gen_build. */
int router_config_from_args(int argc, char **argv, struct sy_config *cfg,
			    struct router_cmdline *cl, char *err, size_t errcap);

struct router_gen;

/* router_config_from_args, then router_gen_build with sequence `number`:
 * on success *out holds one reference. With --help or --version nothing is
 * built (*out NULL, 0 returned). Errors: as the two steps, the message in
 * `err`. */
int router_gen_from_args(int argc, char **argv, uint64_t number, struct router_gen **out,
			 struct router_cmdline *cl, char *err, size_t errcap);

#endif
