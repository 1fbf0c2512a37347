/* fuzz_config.c — fuzz target: bytes → YAML configuration loader.
 *
 * Loads the input as a configuration string over the defaults and, when it
 * loads, finishes it; then checks the loader's promises: a failure returns a
 * negative sy_err that matches err.code with a non-empty message; a success
 * leaves a complete fleet (normalised URL and model on every worker) and a
 * control endpoint. Everything is freed (LeakSanitizer checks that).
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sy_config cfg;
	struct sy_config_error err;

	if (sy_config_init_defaults(&cfg) != SY_OK) {
		sy_config_free(&cfg);
		return 0;
	}
	int rc = sy_config_load_string(&cfg, "fuzz.yaml", (const char *)data, size, &err);
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
