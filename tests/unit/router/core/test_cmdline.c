/* test_cmdline.c — switchyard-router's command line against the flags of
 * SGLang's router family (reference/sglang-router-compat.md §1.4: SMG, the
 * sglang_router launcher, the slim router): every flag is accepted with its
 * meaning or refused with a reason naming what to use instead, never
 * "unknown flag"; every bad flag is reported in one run. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/errors.h"
#include "router/core/cmdline.h"
#include "router/core/generation.h"
#include "tests/unit/sy_check.h"

enum expect { ACCEPT, REFUSE };

/* flag, its value(s) (space-separated; @DIR is a directory holding a
 * tokenizer.json), the flags it needs beside it, the outcome. One row per
 * flag of the compatibility tables. */
static const struct row {
	const char *flag, *value, *context;
	enum expect expect;
} rows[] = {
	{"--affinity-mode", "strict", "--policy session_aware", ACCEPT},
	{"--api-key", "secret", "", ACCEPT},
	{"--assignment-mode", "random", "", REFUSE},
	{"--backend", "sglang", "", REFUSE},
	{"--balance-abs-threshold", "64", "", REFUSE},
	{"--balance-rel-threshold", "1.5", "", REFUSE},
	{"--balance-token-usage-threshold", "0.5", "", REFUSE},
	{"--block-size", "5", "", REFUSE},
	{"--bootstrap-port-annotation", "sglang.ai/bootstrap-port", "", REFUSE},
	{"--bucket-adjust-interval-secs", "5", "", REFUSE},
	{"--bucket-config", "/tmp/b.yaml", "", REFUSE},
	{"--ca-cert-paths", "/tmp/ca", "", REFUSE},
	{"--cache-affinity-min-match-ratio", "0.5", "--policy cache_aware", ACCEPT},
	{"--cache-affinity-min-matched-tokens", "5", "--policy cache_aware", ACCEPT},
	{"--cache-boundaries", "1024", "", REFUSE},
	{"--cache-candidate-max-workers", "16", "--policy cache_aware", ACCEPT},
	{"--cache-candidate-min-workers", "5", "--policy cache_aware", ACCEPT},
	{"--cache-candidate-ratio", "0.05", "--policy cache_aware", ACCEPT},
	{"--cache-index", "tree", "", REFUSE},
	{"--cache-match-threshold", "0.3", "", REFUSE},
	{"--cache-prefix-provider", "local", "--policy cache_aware", ACCEPT},
	{"--cache-switch-margin-tokens", "5", "--policy cache_aware", ACCEPT},
	{"--cache-threshold", "0.3", "", REFUSE},
	{"--cache-ttl-secs", "5", "", REFUSE},
	{"--cb-cool-down-secs", "30", "--cb-threshold 3", ACCEPT},
	{"--cb-failure-threshold", "5", "", ACCEPT},
	{"--cb-success-threshold", "5", "", REFUSE},
	{"--cb-threshold", "5", "", ACCEPT},
	{"--cb-timeout-duration-secs", "5", "--cb-threshold 3", ACCEPT},
	{"--cb-window-duration-secs", "5", "", REFUSE},
	{"--chat-routing", "reorg", "", ACCEPT},
	{"--chat-template", "@DIR/tmpl.jinja", "--tokenizer-path @DIR", ACCEPT},
	{"--client-cert-path", "/tmp/c", "", REFUSE},
	{"--client-key-path", "/tmp/k", "", REFUSE},
	{"--control-plane-api-keys", "id:name:admin:key", "", REFUSE},
	{"--control-plane-audit-enabled", "", "", REFUSE},
	{"--cors-allowed-origins", "http://localhost:3000 https://a.example", "", ACCEPT},
	{"--decode", "http://127.0.0.1:2", "--pd-disaggregation", ACCEPT},
	{"--decode-policy", "power_of_two", "--pd-disaggregation --prefill http://127.0.0.1:1 --decode http://127.0.0.1:2", ACCEPT},
	{"--decode-selector", "role=decode", "", REFUSE},
	{"--disable-audit-logging", "", "", REFUSE},
	{"--disable-circuit-breaker", "", "", ACCEPT},
	{"--disable-health-check", "", "", ACCEPT},
	{"--disable-input-ids-forwarding", "", "", ACCEPT},
	{"--disable-load-monitoring", "", "", REFUSE},
	{"--disable-pressure-guard", "", "--policy cache_aware", ACCEPT},
	{"--disable-retries", "", "", ACCEPT},
	{"--disable-tokenizer-autoload", "", "", REFUSE},
	{"--dp-aware", "", "", REFUSE},
	{"--dp-minimum-tokens-scheduler", "", "", REFUSE},
	{"--drain-settle-secs", "5", "", REFUSE},
	{"--enable-igw", "", "", REFUSE},
	{"--enable-mesh", "", "", REFUSE},
	{"--enable-retry", "", "", ACCEPT},
	{"--enable-trace", "", "", REFUSE},
	{"--enable-wasm", "", "", REFUSE},
	{"--encode", "http://127.0.0.1:2", "", REFUSE},
	{"--encode-policy", "random", "", REFUSE},
	{"--encode-selector", "role=enc", "", REFUSE},
	{"--engine-metrics", "", "", REFUSE},
	{"--epd-disaggregation", "", "", REFUSE},
	{"--eviction-interval", "120", "", REFUSE},
	{"--eviction-interval-secs", "120", "", REFUSE},
	{"--filter", "overloaded", "--max-in-flight 4", ACCEPT},
	{"--fuse", "prefix_cache=2.0,load_based=0.3", "", REFUSE},
	{"--health-check-endpoint", "/health", "", ACCEPT},
	{"--health-check-interval-secs", "5", "", ACCEPT},
	{"--health-check-port", "5", "", REFUSE},
	{"--health-check-timeout-secs", "5", "", ACCEPT},
	{"--health-failure-threshold", "5", "", ACCEPT},
	{"--health-success-threshold", "5", "", ACCEPT},
	{"--history-backend", "memory", "", REFUSE},
	{"--host", "127.0.0.1", "", ACCEPT},
	{"--job-queue-capacity", "5", "", REFUSE},
	{"--job-queue-concurrency", "5", "", REFUSE},
	{"--jwt-audience", "x", "", REFUSE},
	{"--jwt-issuer", "x", "", REFUSE},
	{"--jwt-jwks-uri", "x", "", REFUSE},
	{"--jwt-role-claim", "roles", "", REFUSE},
	{"--jwt-role-mapping", "a=admin", "", REFUSE},
	{"--kv-indexer-endpoint", "tcp://127.0.0.1:50051", "--policy cache_aware --cache-prefix-provider indexer", ACCEPT},
	{"--kv-indexer-max-entries", "5", "", REFUSE},
	{"--kv-indexer-query-max-inflight", "32", "--policy cache_aware --cache-prefix-provider indexer --kv-indexer-endpoint tcp://127.0.0.1:5", ACCEPT},
	{"--kv-indexer-query-timeout-ms", "100", "--policy cache_aware --cache-prefix-provider indexer --kv-indexer-endpoint tcp://127.0.0.1:5", ACCEPT},
	{"--kv-indexer-ttl-secs", "5", "", REFUSE},
	{"--least-load-default-throughput", "0.5", "", REFUSE},
	{"--least-load-kv-pressure-weight", "0.5", "", REFUSE},
	{"--least-load-max-waiting-requests", "5", "", REFUSE},
	{"--least-load-mean-prefill-tokens", "5", "", REFUSE},
	{"--load-monitor-interval", "5", "", REFUSE},
	{"--log-dir", "/tmp/logs", "", REFUSE},
	{"--log-format", "json", "", ACCEPT},
	{"--log-json", "", "", ACCEPT},
	{"--log-level", "info", "", ACCEPT},
	{"--max-concurrent-requests", "64", "", ACCEPT},
	{"--max-concurrent-requests-per-worker", "5", "", ACCEPT},
	{"--max-idle-secs", "5", "--policy sticky", ACCEPT},
	{"--max-in-flight", "8", "--filter overloaded", ACCEPT},
	{"--max-payload-size", "536870912", "--max-pending-body-bytes 1073741824", ACCEPT},
	{"--max-queued-requests", "5", "", ACCEPT},
	{"--max-tree-size", "67108864", "", REFUSE},
	{"--mcp-config-path", "x", "", REFUSE},
	{"--mesh-advertise-host", "x", "", REFUSE},
	{"--mesh-host", "127.0.0.1", "", REFUSE},
	{"--mesh-peer-urls", "127.0.0.1:39528", "", REFUSE},
	{"--mesh-port", "5", "", REFUSE},
	{"--mesh-server-name", "x", "", REFUSE},
	{"--min-load-choices", "5", "--policy cache_aware", ACCEPT},
	{"--mini-lb", "", "", REFUSE},
	{"--model", "@DIR", "", ACCEPT},
	{"--model-alias", "a=b", "", REFUSE},
	{"--model-id", "m", "", ACCEPT},
	{"--model-id-from", "namespace", "", REFUSE},
	{"--model-path", "@DIR", "", ACCEPT},
	{"--multimodal-shm-min-bytes", "5", "", REFUSE},
	{"--multimodal-tensor-transport", "inline", "", REFUSE},
	{"--oracle-connect-descriptor", "x", "", REFUSE},
	{"--oracle-dsn", "x", "", REFUSE},
	{"--oracle-external-auth", "", "", REFUSE},
	{"--oracle-password", "x", "", REFUSE},
	{"--oracle-pool-max", "5", "", REFUSE},
	{"--oracle-pool-min", "5", "", REFUSE},
	{"--oracle-pool-timeout-secs", "5", "", REFUSE},
	{"--oracle-tns-alias", "x", "", REFUSE},
	{"--oracle-user", "x", "", REFUSE},
	{"--oracle-username", "u", "", REFUSE},
	{"--oracle-wallet-path", "x", "", REFUSE},
	{"--otlp-traces-endpoint", "localhost:4317", "", REFUSE},
	{"--overlap-decay", "0.5", "", REFUSE},
	{"--overload-token-usage-threshold", "0.5", "", REFUSE},
	{"--override-sampling-params", "{\"temperature\":1}", "", ACCEPT},
	{"--pd-disaggregation", "", "", ACCEPT},
	{"--policy", "cache_aware", "", ACCEPT},
	{"--port", "30123", "", ACCEPT},
	{"--postgres-db-url", "postgres://x", "", REFUSE},
	{"--postgres-pool-max", "5", "", REFUSE},
	{"--postgres-pool-max-size", "5", "", REFUSE},
	{"--power-of-n-choices", "2", "", ACCEPT},
	{"--prefill", "http://127.0.0.1:1 8998", "--pd-disaggregation", ACCEPT},
	{"--prefill-policy", "cache_aware", "--pd-disaggregation --prefill http://127.0.0.1:1 --decode http://127.0.0.1:2", ACCEPT},
	{"--prefill-selector", "role=prefill", "", REFUSE},
	{"--prefix-cache-min-share", "0.5", "", REFUSE},
	{"--prefix-hash-balance-abs-threshold", "5", "", REFUSE},
	{"--prefix-hash-load-factor", "0.5", "", REFUSE},
	{"--prefix-token-count", "5", "", REFUSE},
	{"--pressure-abs-threshold-ms", "10", "--policy cache_aware", ACCEPT},
	{"--pressure-abs-threshold-tokens", "5", "--policy cache_aware", ACCEPT},
	{"--pressure-rel-threshold", "1.5", "--policy cache_aware", ACCEPT},
	{"--priority-scheduler-config", "x", "", REFUSE},
	{"--priority-scheduler-default-max-class", "default", "", ACCEPT},
	{"--priority-scheduler-enabled", "", "", REFUSE},
	{"--priority-scheduler-tenant-metric-top-n", "5", "", REFUSE},
	{"--prometheus-duration-buckets", "0.1 1 10", "", REFUSE},
	{"--prometheus-host", "127.0.0.1", "", ACCEPT},
	{"--prometheus-port", "29123", "", ACCEPT},
	{"--queue-size", "100", "", ACCEPT},
	{"--queue-timeout-secs", "60", "", ACCEPT},
	{"--rate-limit-tokens-per-second", "5", "", REFUSE},
	{"--reasoning-parser", "x", "", REFUSE},
	{"--redis-key-prefix", "p", "", REFUSE},
	{"--redis-pool-max", "5", "", REFUSE},
	{"--redis-pool-max-size", "5", "", REFUSE},
	{"--redis-retention-days", "5", "", REFUSE},
	{"--redis-url", "redis://127.0.0.1:6379", "", REFUSE},
	{"--remove-unhealthy-workers", "", "", REFUSE},
	{"--request-id-headers", "x-request-id x-trace-id", "", ACCEPT},
	{"--request-timeout-secs", "1800", "", ACCEPT},
	{"--retry-backoff-multiplier", "2", "--retry-max-retries 3", ACCEPT},
	{"--retry-initial-backoff-ms", "5", "--retry-max-retries 3", ACCEPT},
	{"--retry-jitter-factor", "0.5", "--retry-max-retries 3", ACCEPT},
	{"--retry-max-backoff-ms", "500", "--retry-max-retries 3", ACCEPT},
	{"--retry-max-retries", "5", "", ACCEPT},
	{"--router-disable-arg-fallback", "", "", REFUSE},
	{"--router-selector", "app=router", "", REFUSE},
	{"--routing-key-header", "x-sgl-routing-key", "--policy sticky", ACCEPT},
	{"--routing-key-headers", "x-smg-routing-key", "--policy sticky", ACCEPT},
	{"--routing-key-override", "", "", REFUSE},
	{"--runtime", "sglang", "", REFUSE},
	{"--runtime-worker-threads", "5", "", REFUSE},
	{"--sampling-param-conflict", "reject", "", ACCEPT},
	{"--saturation-queue-floor", "5", "--policy cache_aware --worker-queue-limit 8", ACCEPT},
	{"--schema-config", "x", "", REFUSE},
	{"--selection-temperature", "0.5", "", REFUSE},
	{"--selector", "app=sglang", "", REFUSE},
	{"--server-cert-path", "/tmp/c", "--server-key-path /tmp/k", ACCEPT},
	{"--server-key-path", "/tmp/k", "--server-cert-path /tmp/c", ACCEPT},
	{"--service-discovery", "", "", REFUSE},
	{"--service-discovery-namespace", "default", "", REFUSE},
	{"--service-discovery-port", "5", "", REFUSE},
	{"--session-affinity-mode", "bucket", "--policy session_aware", ACCEPT},
	{"--session-eviction-interval-secs", "5", "", ACCEPT},
	{"--session-id-header", "x-session-id", "--policy session_aware", ACCEPT},
	{"--session-idle-secs", "5", "--policy session_aware", ACCEPT},
	{"--shutdown-drain-secs", "5", "", ACCEPT},
	{"--shutdown-grace-period-secs", "5", "", ACCEPT},
	{"--spill-abs-threshold", "64", "", REFUSE},
	{"--spill-rel-threshold", "1.5", "", REFUSE},
	{"--stable-pair", "", "", REFUSE},
	{"--stale-request-timeout-secs", "5", "", REFUSE},
	{"--sticky-eviction-interval-secs", "5", "", ACCEPT},
	{"--sticky-fallback-policy", "round_robin", "--policy sticky", ACCEPT},
	{"--sticky-idle-secs", "5", "--policy sticky", ACCEPT},
	{"--sticky-key-idle-secs", "5", "--policy sticky", ACCEPT},
	{"--sticky-sessions", "", "", REFUSE},
	{"--storage-context-headers", "x-a=b", "", REFUSE},
	{"--storage-hook-wasm-path", "x", "", REFUSE},
	{"--stream-body-stall-timeout-secs", "5", "", REFUSE},
	{"--stream-idle-timeout-secs", "5", "", ACCEPT},
	{"--stream-request-bodies-over", "5", "", REFUSE},
	{"--tenant-api-key", "t:k", "", REFUSE},
	{"--tenant-header-name", "x-smg-tenant-id", "", ACCEPT},
	{"--tenant-rate-limit-config", "x", "", REFUSE},
	{"--tenant-rate-limit-enabled", "", "", REFUSE},
	{"--termination-grace-secs", "5", "", ACCEPT},
	{"--tls-cert-path", "x", "--tls-key-path x", ACCEPT},
	{"--tls-key-path", "x", "--tls-cert-path x", ACCEPT},
	{"--tokenizer-cache-enable-l0", "", "", REFUSE},
	{"--tokenizer-cache-enable-l1", "", "", REFUSE},
	{"--tokenizer-cache-l0-max-entries", "5", "", REFUSE},
	{"--tokenizer-cache-l1-max-memory", "5", "", REFUSE},
	{"--tokenizer-path", "@DIR", "", ACCEPT},
	{"--tokenizer-shards", "5", "", REFUSE},
	{"--tool-call-parser", "x", "", REFUSE},
	{"--trust-tenant-header", "", "", REFUSE},
	{"--upstream-http2", "", "", REFUSE},
	{"--upstream-pool-idle-timeout-secs", "5", "", ACCEPT},
	{"--webrtc-bind-addr", "127.0.0.1", "", REFUSE},
	{"--webrtc-stun-server", "x", "", REFUSE},
	{"--worker-auto-recovery", "", "", REFUSE},
	{"--worker-overload-protection", "", "", REFUSE},
	{"--worker-overload-token-usage", "0.5", "", REFUSE},
	{"--worker-overload-waiting-requests", "5", "", REFUSE},
	{"--worker-queue-limit", "5", "--policy cache_aware", ACCEPT},
	{"--worker-startup-check-interval", "5", "", ACCEPT},
	{"--worker-startup-delay", "5", "", REFUSE},
	{"--worker-startup-timeout-secs", "5", "", REFUSE},
	{"--worker-urls", "http://127.0.0.1:53410 http://127.0.0.1:38615", "", ACCEPT},
	{"--zmq-engine-count", "5", "", REFUSE},
};

static char dir[64];

static void make_dir(void)
{
	strcpy(dir, "/tmp/sy_test_cmdline_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{}", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/tmpl.jinja", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{{ messages }}", f);
	fclose(f);
}

static void remove_dir(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/tmpl.jinja", dir);
	unlink(path);
	rmdir(dir);
}

/* Splits `s` at spaces into argv (copies in `store`), replacing @DIR. */
static int split(const char *s, char **argv, int argc, char store[][160])
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *sv, *t = strtok_r(buf, " ", &sv); t; t = strtok_r(NULL, " ", &sv)) {
		if (strncmp(t, "@DIR", 4) == 0)
			snprintf(store[argc], 160, "%s%s", dir, t + 4);
		else
			snprintf(store[argc], 160, "%s", t);
		argv[argc] = store[argc];
		argc++;
	}
	return argc;
}

/* Runs the command line of row `r`; returns the result, the messages in err. */
static int run_row(const struct row *r, char *err, size_t cap, bool build)
{
	static char store[32][160];
	char *argv[32] = {"switchyard-router"};
	int argc = 1;
	/* a plain worker, unless the row builds its own (PD) fleet */
	if (strcmp(r->flag, "--worker-urls") != 0 && strstr(r->context, "--pd-disaggregation") == NULL &&
	    strstr(r->context, "--prefill") == NULL && strcmp(r->flag, "--prefill") != 0 &&
	    strcmp(r->flag, "--decode") != 0)
		argc = split("--worker-urls http://127.0.0.1:9", argv, argc, store);
	argc = split(r->context, argv, argc, store);
	argc = split(r->flag, argv, argc, store);
	argc = split(r->value, argv, argc, store);
	argv[argc] = NULL;
	struct sy_config cfg;
	struct router_cmdline cl;
	int rc = router_config_from_args(argc, argv, &cfg, &cl, err, cap);
	if (rc == SY_OK && build) {
		struct router_gen *g = NULL;
		struct sy_config_error e;
		rc = router_gen_build(&cfg, 1, &g, &e);
		if (rc != SY_OK)
			snprintf(err, cap, "%s", e.msg);
		router_gen_unref(g);
	}
	sy_config_free(&cfg);
	return rc;
}

static bool is_tokenizer_flag(const char *f)
{
	return strcmp(f, "--model") == 0 || strcmp(f, "--model-path") == 0 ||
	       strcmp(f, "--tokenizer-path") == 0 || strcmp(f, "--chat-template") == 0;
}

START_TEST(test_every_sglang_flag_is_accepted_or_refused_with_a_reason)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	make_dir();
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		/* The tokenizer rows point at a stand-in tokenizer.json: the
		 * configuration is checked, the tokenizer is not opened. */
		int rc = run_row(r, err, sizeof err, !is_tokenizer_flag(r->flag));
		if (r->expect == ACCEPT) {
			ck_assert_msg(rc == SY_OK, "%s %s: refused: %s", r->flag, r->value, err);
			continue;
		}
		ck_assert_msg(rc != SY_OK, "%s %s: accepted, expected a refusal", r->flag, r->value);
		ck_assert_msg(strstr(err, "unknown flag") == NULL && strstr(err, "takes one value") == NULL,
			      "%s: %s", r->flag, err);
		ck_assert_msg(strstr(err, r->flag) != NULL, "%s: message does not name it: %s", r->flag,
			      err);
		ck_assert_msg(strstr(err, "use ") || strstr(err, "remove it") || strstr(err, "give ") ||
				      strstr(err, "not needed") || strstr(err, "--"),
			      "%s: no replacement named: %s", r->flag, err);
	}
	remove_dir();
}
END_TEST

START_TEST(test_all_bad_flags_are_reported_in_one_run)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	char *argv[] = {"switchyard-router", "stray", "--cache-threshold", "0.3", "--no-such-flag",
			"1", "--jwt-issuer", "k", "--port", "0", NULL};
	struct sy_config cfg;
	struct router_cmdline cl;
	int rc = router_config_from_args(10, argv, &cfg, &cl, err, sizeof err);
	sy_config_free(&cfg);
	ck_assert_int_ne(rc, SY_OK);
	int lines = 1;
	for (const char *p = err; *p; p++)
		lines += *p == '\n';
	ck_assert_msg(lines == 5, "expected 5 lines, got %d: %s", lines, err);
	ck_assert_ptr_nonnull(strstr(err, "--cache-threshold:"));
	ck_assert_ptr_nonnull(strstr(err, "--no-such-flag: unknown flag"));
	ck_assert_ptr_nonnull(strstr(err, "--jwt-issuer:"));
	ck_assert_ptr_nonnull(strstr(err, "--port: must be an integer in 1..65535"));
	ck_assert_ptr_nonnull(strstr(err, "unexpected argument 'stray'"));
}
END_TEST

START_TEST(test_prefill_and_decode_flags_build_a_pd_fleet)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	char *argv[] = {"switchyard-router", "--pd-disaggregation", "--prefill",
			"http://127.0.0.1:7001", "8998", "--prefill", "http://127.0.0.1:7002",
			"--decode", "http://127.0.0.1:7003", "--prefill-policy", "cache_aware",
			"--decode-policy", "round_robin", NULL};
	struct sy_config cfg;
	struct router_cmdline cl;
	ck_assert_msg(router_config_from_args(13, argv, &cfg, &cl, err, sizeof err) == SY_OK, "%s",
		      err);
	ck_assert_uint_eq(cfg.n_workers, 3);
	ck_assert_int_eq(cfg.workers[0].role, SY_ROLE_PREFILL);
	ck_assert_int_eq(cfg.workers[0].bootstrap_port, 8998);
	ck_assert_int_eq(cfg.workers[1].role, SY_ROLE_PREFILL);
	ck_assert_int_eq(cfg.workers[1].bootstrap_port, 0); /* from /server_info */
	ck_assert_int_eq(cfg.workers[2].role, SY_ROLE_DECODE);
	struct router_gen *g = NULL;
	struct sy_config_error e;
	ck_assert_msg(router_gen_build(&cfg, 1, &g, &e) == SY_OK, "%s", e.msg);
	bool pd = false;
	for (size_t i = 0; i < g->n_buckets; i++)
		if (g->buckets[i].pd) {
			pd = true;
			ck_assert_str_eq(g->buckets[i].prefill.policy.ops->name, "cache_aware");
			ck_assert_str_eq(g->buckets[i].decode.policy.ops->name, "round_robin");
		}
	ck_assert(pd);
	router_gen_unref(g);
}
END_TEST

START_TEST(test_prefill_needs_pd_disaggregation_and_a_port)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct sy_config cfg;
	struct router_cmdline cl;
	char *a1[] = {"switchyard-router", "--prefill", "http://127.0.0.1:7001", NULL};
	ck_assert_int_ne(router_config_from_args(3, a1, &cfg, &cl, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert_ptr_nonnull(strstr(err, "needs --pd-disaggregation"));
	char *a2[] = {"switchyard-router", "--pd-disaggregation", "--prefill",
		      "http://127.0.0.1:7001", "99999", "--decode", "http://a:1", "http://b:2", NULL};
	ck_assert_int_ne(router_config_from_args(8, a2, &cfg, &cl, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert_ptr_nonnull(strstr(err, "--prefill: bootstrap port \"99999\""));
	ck_assert_ptr_nonnull(strstr(err, "--decode: takes one URL, got 2 value(s)"));
}
END_TEST

START_TEST(test_help_and_version_parse_nothing_else)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct sy_config cfg;
	struct router_cmdline cl;
	char *a1[] = {"switchyard-router", "--no-such-flag", "-h", NULL};
	ck_assert_int_eq(router_config_from_args(3, a1, &cfg, &cl, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert(cl.help);
	char *a2[] = {"switchyard-router", "--version", NULL};
	ck_assert_int_eq(router_config_from_args(2, a2, &cfg, &cl, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert(cl.version && !cl.help);
}
END_TEST

START_TEST(test_sglang_seconds_become_milliseconds_and_bare_flags_set_their_value)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct sy_config cfg;
	struct router_cmdline cl;
	char *a1[] = {"switchyard-router", "--health-check-interval-secs", "7",
		      "--health-check-timeout-secs", "2", "--log-json", "--disable-circuit-breaker",
		      "--cb-threshold", "3", "--max-payload-size", "1048576",
		      "--max-concurrent-requests", "64", "--retry-max-retries", "1", NULL};
	/* --disable-circuit-breaker then --cb-threshold 3: the later flag wins */
	ck_assert_msg(router_config_from_args(15, a1, &cfg, &cl, err, sizeof err) == SY_OK, "%s",
		      err);
	ck_assert_int_eq(cfg.statebus.health_interval_ms, 7000);
	ck_assert_int_eq(cfg.statebus.health_timeout_ms, 2000);
	ck_assert_int_eq(cfg.log.format, 1 /* json */);
	ck_assert_int_eq(cfg.router.cb_threshold, 3);
	ck_assert_uint_eq(cfg.router.max_body_bytes, 1048576);
	ck_assert_int_eq(cfg.policy.admission.max_inflight_requests, -1);
	ck_assert_int_eq(cfg.router.max_concurrent_requests, 64); /* router-wide, SMG's */
	ck_assert_int_eq(cfg.router.retry_max_retries, 1);
	sy_config_free(&cfg);
	char *a2[] = {"switchyard-router", "--health-check-interval-secs", "0", NULL};
	ck_assert_int_ne(router_config_from_args(3, a2, &cfg, &cl, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert_msg(strstr(err, "--health-check-interval-secs: must be an integer in 1..3600") !=
			      NULL,
		      "%s", err);
}
END_TEST

/* Runs argv (NULL-terminated) through the command line; returns its result. */
static int run_args(char **argv, struct sy_config *cfg, char *err, size_t cap)
{
	int argc = 0;
	while (argv[argc] != NULL)
		argc++;
	struct router_cmdline cl;
	return router_config_from_args(argc, argv, cfg, &cl, err, cap);
}

START_TEST(test_tokenizer_paths_imply_hf_and_a_hub_id_is_refused)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct sy_config cfg;
	char file[128];
	make_dir();
	snprintf(file, sizeof file, "%s/tokenizer.json", dir);
	char *a1[] = {"switchyard-router", "--tokenizer-path", file, NULL};
	ck_assert_msg(run_args(a1, &cfg, err, sizeof err) == SY_OK, "%s", err);
	ck_assert_int_eq(cfg.router.tokenizer.kind, SY_TOKENIZER_HF);
	ck_assert_str_eq(cfg.router.tokenizer.path, file);
	sy_config_free(&cfg);
	char *a2[] = {"switchyard-router", "--model-path", dir, NULL};
	ck_assert_msg(run_args(a2, &cfg, err, sizeof err) == SY_OK, "%s", err);
	ck_assert_int_eq(cfg.router.tokenizer.kind, SY_TOKENIZER_HF);
	ck_assert_str_eq(cfg.router.tokenizer.path, dir); /* the model's tokenizer */
	sy_config_free(&cfg);
	char *a3[] = {"switchyard-router", "--model-path", "/nonexistent/m", "--tokenizer-path", dir,
		      NULL};
	ck_assert_msg(run_args(a3, &cfg, err, sizeof err) == SY_OK, "%s", err);
	ck_assert_str_eq(cfg.router.tokenizer.path, dir); /* the tokenizer path wins */
	sy_config_free(&cfg);
	char *a4[] = {"switchyard-router", "--model-path", "Qwen/Qwen3-8B", NULL};
	ck_assert_int_ne(run_args(a4, &cfg, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert_msg(strstr(err, "router.tokenizer.model_path: \"Qwen/Qwen3-8B\" looks like a "
				  "Hugging Face hub id") != NULL, "%s", err);
	char *a5[] = {"switchyard-router", "--tokenizer", "bytes", "--tokenizer-path", dir, NULL};
	ck_assert_int_ne(run_args(a5, &cfg, err, sizeof err), SY_OK);
	sy_config_free(&cfg);
	ck_assert_msg(strstr(err, "the bytes tokenizer reads no file") != NULL, "%s", err);
	char *a6[] = {"switchyard-router", NULL};
	ck_assert_int_eq(run_args(a6, &cfg, err, sizeof err), SY_OK);
	ck_assert_int_eq(cfg.router.tokenizer.kind, SY_TOKENIZER_BYTES);
	sy_config_free(&cfg);
	remove_dir();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cmdline");
	TCase *t = tcase_create("core");
	tcase_add_test(t, test_every_sglang_flag_is_accepted_or_refused_with_a_reason);
	tcase_add_test(t, test_all_bad_flags_are_reported_in_one_run);
	tcase_add_test(t, test_prefill_and_decode_flags_build_a_pd_fleet);
	tcase_add_test(t, test_prefill_needs_pd_disaggregation_and_a_port);
	tcase_add_test(t, test_help_and_version_parse_nothing_else);
	tcase_add_test(t, test_sglang_seconds_become_milliseconds_and_bare_flags_set_their_value);
	tcase_add_test(t, test_tokenizer_paths_imply_hf_and_a_hub_id_is_refused);
	suite_add_tcase(s, t);
	return s;
}

int main(void) { return sy_check_run(suite()); }
