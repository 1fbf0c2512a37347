/* fuzz_config.c — fuzz target: bytes → YAML configuration loader.
 *
 * Input: YAML, optionally followed by "\n%%\n" and flag lines
 * "SECTION --flag [VALUE]" ("-" for the top-level section). Loads the YAML
 * over the defaults, applies the flags, finishes; then checks the loader's
 * promises: a failure returns a negative sy_err that matches err.code with a
 * non-empty message; a success leaves a complete fleet (normalised URL and
 * model on every worker) and a control endpoint. Everything is freed
 * (LeakSanitizer checks that).
 */
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/errors.h"
#include "common/url.h"
#include "tests/fuzz/fuzz.h"

static void check_failure(int rc, const struct sy_config_error *err)
{
	if (rc >= 0 || err->code != rc || err->msg[0] == '\0' ||
	    memchr(err->msg, '\0', sizeof(err->msg)) == NULL)
		abort();
}

/* Applies "SECTION --flag [VALUE]" lines; stops at the first failure. */
static int apply_flags(struct sy_config *cfg, const char *p, const char *end,
		       struct sy_config_error *err)
{
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char line[512], *save = NULL;
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl ? nl + 1 : end;
		char *section = strtok_r(line, " ", &save);
		char *flag = strtok_r(NULL, " ", &save);
		char *value = strtok_r(NULL, "", &save);
		if (section == NULL || flag == NULL)
			continue;
		int rc = sy_config_apply_flag(cfg, strcmp(section, "-") ? section : NULL, flag,
					      value, err);
		if (rc != SY_OK)
			return rc;
	}
	return SY_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *end = text + size;
	const char *sep = memmem(text, size, "\n%%\n", 4);
	size_t yaml_len = sep ? (size_t)(sep - text) : size;

	struct sy_config cfg;
	struct sy_config_error err;

	if (sy_config_init_defaults(&cfg) != SY_OK) {
		sy_config_free(&cfg);
		return 0;
	}
	int rc = sy_config_load_string(&cfg, "fuzz.yaml", text, yaml_len, &err);
	if (rc == SY_OK && sep != NULL)
		rc = apply_flags(&cfg, sep + 4, end, &err);
	if (rc == SY_OK)
		rc = sy_config_finish(&cfg, &err);
	if (rc != SY_OK) {
		check_failure(rc, &err);
	} else {
		if (cfg.statebus.control_endpoint == NULL || cfg.n_worker_urls != 0)
			abort();
		for (size_t i = 0; i < cfg.n_workers; i++) {
			const struct sy_config_worker *w = &cfg.workers[i];
			char again[SY_URL_MAX + 1];
			if (w->url == NULL || w->model == NULL)
				abort();
			/* A worker ID is already normal: normalising it is the identity. */
			int n = sy_url_normalize(w->url, strlen(w->url), again, sizeof(again), NULL);
			if (n < 0 || strcmp(again, w->url) != 0)
				abort();
			for (size_t j = 0; j < i; j++)
				if (strcmp(cfg.workers[j].url, w->url) == 0)
					abort();
		}
	}
	sy_config_free(&cfg);
	return 0;
}
