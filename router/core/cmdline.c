/* cmdline.c — switchyard-router's command line over the common loader.
 *
 *   switchyard-router [--config FILE] [--check-config] [--FLAG VALUE]...
 *
 * Every flag goes through sy_config_apply_flag() in section "router"
 * (DESIGN.md §5: a flag's YAML key is its name, dashes → underscores), after
 * the file has been loaded, so flags win wherever they appear. A flag takes
 * the arguments up to the next "--..." as its value. List flags
 * (--worker-urls, --cors-allowed-origins, --request-id-headers) take
 * several, SGLang style; --prefill URL [BOOTSTRAP_PORT] and --decode URL
 * add PD workers (sy_config_add_pd_worker). SGLang router family
 * spellings are mapped or refused by the common loader (config_sglang.c).
 * Every bad flag is reported, one line each, in one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "router/core/buf.h"
#include "router/core/cmdline.h"
#include "router/core/generation.h"

/* Appends one error line to err (capacity errcap). */
static void add_error(char *err, size_t errcap, unsigned *n_errors, const char *msg)
{
	size_t used = strnlen(err, errcap);
	if (used + 2 < errcap)
		snprintf(err + used, errcap - used, "%s%s", *n_errors ? "\n" : "", msg);
	(*n_errors)++;
}

static int apply(struct sy_config *cfg, const char *flag, const char *value, char *err,
		 size_t errcap, unsigned *n_errors)
{
	struct sy_config_error e;
	int rc = sy_config_apply_flag(cfg, "router", flag, value, &e);
	if (rc != SY_OK)
		add_error(err, errcap, n_errors, e.msg);
	return rc;
}

/* One flag occurrence argv[i] with its nvals values argv[i+1 .. i+nvals]. */
static int one_flag(struct sy_config *cfg, char **argv, int i, int nvals, char *err,
		    size_t errcap, unsigned *n_errors)
{
	const char *a = argv[i];
	char msg[512], key[512];
	int rc;

	if (strcmp(a, "--prefill") == 0 || strcmp(a, "--decode") == 0) {
		bool pre = a[2] == 'p';
		struct sy_config_error e;
		if (nvals < 1 || nvals > (pre ? 2 : 1)) {
			snprintf(msg, sizeof(msg), "%s: takes %s, got %d value(s)", a,
				 pre ? "URL [BOOTSTRAP_PORT]" : "one URL", nvals);
			add_error(err, errcap, n_errors, msg);
			return SY_ECONFIG;
		}
		rc = sy_config_add_pd_worker(cfg, a, pre ? SY_ROLE_PREFILL : SY_ROLE_DECODE,
					     argv[i + 1], nvals > 1 ? argv[i + 2] : NULL, &e);
		if (rc != SY_OK)
			add_error(err, errcap, n_errors, e.msg);
		return rc;
	}
	if (nvals > 1 && sy_config_flag_is_list("router", a)) {
		struct rt_buf b = {0};
		for (int k = i + 1; k <= i + nvals; k++) {
			rt_buf_puts(&b, argv[k]);
			rt_buf_puts(&b, " ");
		}
		rc = b.oom ? SY_ENOMEM : apply(cfg, a, b.p, err, errcap, n_errors);
		if (b.oom)
			add_error(err, errcap, n_errors, "out of memory");
		rt_buf_free(&b);
		return rc;
	}
	/* A refused option is named with its replacement, whatever it takes. */
	if (nvals > 1 && sy_config_flag_to_key("router", a, key, sizeof(key)) != SY_EUNSUPPORTED) {
		if (strcmp(a, "--routing-key-headers") == 0)
			snprintf(msg, sizeof(msg), "%s: switchyard reads one routing-key header; "
				 "give one (--routing-key-header NAME)", a);
		else
			snprintf(msg, sizeof(msg), "%s: takes one value, got %d", a, nvals);
		add_error(err, errcap, n_errors, msg);
		return SY_ECONFIG;
	}
	return apply(cfg, a, nvals > 0 ? argv[i + 1] : NULL, err, errcap, n_errors);
}

int router_config_from_args(int argc, char **argv, struct sy_config *cfg,
			    struct router_cmdline *cl, char *err, size_t errcap)
{
	struct sy_config_error e;
	const char *file = NULL;
	unsigned n_errors = 0;
	int rc;

	memset(cl, 0, sizeof(*cl));
	if (errcap > 0)
		err[0] = '\0';
	if ((rc = sy_config_init_defaults(cfg)) != SY_OK) {
		snprintf(err, errcap, "out of memory");
		return rc;
	}
	/* Pass 1: --config (the file goes under every flag), --help, --version. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			cl->help = true;
		else if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0)
			cl->version = true;
		else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc &&
			 strncmp(argv[i + 1], "--", 2) != 0)
			file = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			file = argv[i] + 9;
		else if (strcmp(argv[i], "--config") == 0)
			add_error(err, errcap, &n_errors, "--config: needs a file");
	}
	if (cl->help || cl->version)
		return SY_OK;
	if (file != NULL && (rc = sy_config_load_file(cfg, file, &e)) != SY_OK) {
		add_error(err, errcap, &n_errors, e.msg);
		return rc;
	}
	/* Pass 2: flags; every error is collected. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2) != 0) {
			char msg[320];
			snprintf(msg, sizeof(msg), "unexpected argument '%.200s' (flags start with --)",
				 a);
			add_error(err, errcap, &n_errors, msg);
			continue;
		}
		int j = i + 1;
		while (j < argc && strncmp(argv[j], "--", 2) != 0)
			j++;
		int nvals = j - i - 1;
		if (strcmp(a, "--config") == 0 || strncmp(a, "--config=", 9) == 0) {
			i = j - 1;
			continue;
		}
		if (strcmp(a, "--check-config") == 0)
			cl->check_only = true;
		else
			(void)one_flag(cfg, argv, i, nvals, err, errcap, &n_errors);
		i = j - 1;
	}
	if (n_errors > 0)
		return SY_ECONFIG;
	if ((rc = sy_config_finish(cfg, &e)) != SY_OK) {
		snprintf(err, errcap, "%s", e.msg);
		return rc;
	}
	return SY_OK;
}

int router_gen_from_args(int argc, char **argv, uint64_t number, struct router_gen **out,
			 struct router_cmdline *cl, char *err, size_t errcap)
{
	struct sy_config cfg;
	struct sy_config_error e;
	*out = NULL;
	int rc = router_config_from_args(argc, argv, &cfg, cl, err, errcap);
	if (rc != SY_OK || cl->help || cl->version) {
		sy_config_free(&cfg);
		return rc;
	}
	if ((rc = router_gen_build(&cfg, number, out, &e)) != SY_OK)
		snprintf(err, errcap, "%s", e.msg[0] ? e.msg : "cannot build the configuration");
	return rc;
}
