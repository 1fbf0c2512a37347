/* cmdline.c — switchyard-router's command line over the common loader.
 *
 *   switchyard-router [--config FILE] [--check-config] [--FLAG VALUE]...
 *
 * Every flag goes through sy_config_apply_flag() in section "router"
 * (DESIGN.md §5: a flag's YAML key is its name, dashes → underscores), after
 * the file has been loaded, so flags win wherever they appear. A flag takes
 * the arguments up to the next "--..." as its value; --worker-urls accepts
 * several (SGLang style: --worker-urls http://a http://b). Legacy SGLang
 * spellings (--chat-routing reorg, --filter overloaded --max-in-flight N,
 * dropped options) are the common loader's (config_flags.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "router/core/buf.h"
#include "router/core/cmdline.h"
#include "router/core/generation.h"

static int apply(struct sy_config *cfg, const char *flag, const char *value, char *err,
		 size_t errcap)
{
	struct sy_config_error e;
	int rc = sy_config_apply_flag(cfg, "router", flag, value, &e);
	if (rc != SY_OK)
		snprintf(err, errcap, "%s", e.msg);
	return rc;
}

int router_config_from_args(int argc, char **argv, struct sy_config *cfg, int *check_only,
			    int *help, char *err, size_t errcap)
{
	struct sy_config_error e;
	const char *file = NULL;
	int rc;

	*check_only = 0;
	*help = 0;
	if ((rc = sy_config_init_defaults(cfg)) != SY_OK) {
		snprintf(err, errcap, "out of memory");
		return rc;
	}
	/* Pass 1: --config (the file goes under every flag). */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			file = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			file = argv[i] + 9;
		else if (strcmp(argv[i], "--config") == 0) {
			snprintf(err, errcap, "--config: needs a file");
			return SY_ECONFIG;
		}
	}
	if (file != NULL && (rc = sy_config_load_file(cfg, file, &e)) != SY_OK) {
		snprintf(err, errcap, "%s", e.msg);
		return rc;
	}
	/* Pass 2: flags. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2) != 0) {
			snprintf(err, errcap, "unexpected argument '%s' (flags start with --)", a);
			return SY_ECONFIG;
		}
		int j = i + 1;
		while (j < argc && strncmp(argv[j], "--", 2) != 0)
			j++;
		int nvals = j - i - 1;
		const char *val = nvals > 0 ? argv[i + 1] : NULL;
		if (strcmp(a, "--config") == 0 || strncmp(a, "--config=", 9) == 0) {
			i = j - 1;
			continue;
		}
		if (strcmp(a, "--check-config") == 0) {
			*check_only = 1;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			*help = 1;
		} else if (strcmp(a, "--worker-urls") == 0 && nvals > 1) {
			struct rt_buf b = {0};
			for (int k = i + 1; k < j; k++) {
				rt_buf_puts(&b, argv[k]);
				rt_buf_puts(&b, " ");
			}
			rc = b.oom ? SY_ENOMEM : apply(cfg, a, b.p, err, errcap);
			rt_buf_free(&b);
			if (rc != SY_OK)
				return rc;
		} else {
			char key[384];
			/* a refused option is named with its replacement, whatever it takes */
			if (nvals > 1 && sy_config_flag_to_key("router", a, key, sizeof(key)) ==
						 SY_EUNSUPPORTED)
				nvals = 1;
			if (nvals > 1) {
				snprintf(err, errcap, "%s: takes one value, got %d", a, nvals);
				return SY_ECONFIG;
			}
			if ((rc = apply(cfg, a, val, err, errcap)) != SY_OK)
				return rc;
		}
		i = j - 1;
	}
	if ((rc = sy_config_finish(cfg, &e)) != SY_OK) {
		snprintf(err, errcap, "%s", e.msg);
		return rc;
	}
	return SY_OK;
}

int router_gen_from_args(int argc, char **argv, uint64_t number, struct router_gen **out,
			 int *check_only, int *help, char *err, size_t errcap)
{
	struct sy_config cfg;
	struct sy_config_error e;
	*out = NULL;
	int rc = router_config_from_args(argc, argv, &cfg, check_only, help, err, errcap);
	if (rc != SY_OK || *help) {
		sy_config_free(&cfg);
		return rc;
	}
	if ((rc = router_gen_build(&cfg, number, out, &e)) != SY_OK)
		snprintf(err, errcap, "%s", e.msg[0] ? e.msg : "cannot build the configuration");
	return rc;
}
