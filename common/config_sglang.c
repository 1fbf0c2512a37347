/* config_sglang.c — SGLang router family flags (config_sglang.h).
 *
 * Sources of the flag names, meanings and defaults: SMG model_gateway
 * main.rs, the sglang_router launcher's router_args.py and the slim
 * router's config/cli.rs (reference/sglang-router-compat.md §1.4). An entry
 * maps a flag to the key of the same meaning and unit (seconds given to a
 * key in ms are scaled), or refuses it: what switchyard does instead and
 * what to use. Where a default differs (body limit, health period, ...)
 * README "Coming from SGLang's router" says so.
 */
#include "common/config_sglang.h"

#include <string.h>

#define K(f, k) {f, SY_SGLANG_KEY, k, NULL, 0, NULL}
#define KS(f, k, s) {f, SY_SGLANG_KEY, k, NULL, s, NULL}
#define SET(f, k, v) {f, SY_SGLANG_SET, k, v, 0, NULL}
#define VAL(f, k, map, w) {f, SY_SGLANG_VALUES, k, map, 0, w}
#define RT(f, w) {f, SY_SGLANG_ROUTER, NULL, NULL, 0, w}
#define NO(f, w) {f, SY_SGLANG_REFUSE, NULL, NULL, 0, w}

/* Shared reasons. */
#define K8S "Kubernetes discovery is not offered; list the engines with --worker-urls " \
	    "(or workers[] in the configuration file) and add or remove them at run time " \
	    "with POST/DELETE /workers"
#define STORE "switchyard keeps no conversation, response or tenant storage (it forwards " \
	      "each request as sent); remove it"
#define MESH "there is no router mesh: the routers of a host share its state plane " \
	     "(one switchyard-statebus per host); remove it"
#define CLIENT_TLS "client certificates towards workers are not offered (workers are " \
		   "http:// URLs); remove it"
#define AUTHN "per-tenant keys and JWT are not offered; use --api-key KEY (one bearer key " \
	      "for the inference and model routes) and --admin-api-key KEY (the admin API)"
#define PREFIX_HASH "the prefix_hash policy is not offered; use --policy cache_aware"
#define LEAST_LOAD "the least_load policy is not offered; use --policy load_based " \
		   "(reported load, corrected by dispatches since the report)"
#define OVERLOAD "use the per-worker admission caps: --max-waiting-requests N, " \
		 "--max-running-requests N, --max-kv-tokens N"
#define STARTUP "the router starts at once and routes to a worker as soon as discovery " \
		"and its health probe succeed (retried every " \
		"--worker-startup-check-interval); remove it"
#define EPD "encode workers (EPD) are not offered; use plain workers or --prefill/--decode"
#define GRPC "gRPC and ZeroMQ engine connections are not offered; workers are http(s):// " \
	     "URLs"
#define TOKCACHE "tokenizer caches are not offered; chat prefixes share block hashes through " \
		 "the per-process digest memo; remove it"
#define TENANT "per-tenant rate limits are not offered (the queue shares capacity between " \
	       "tenants: --tenant-weights, --tenant-priorities); use per-worker " \
	       "admission caps (--max-inflight-requests N), or remove it"
#define TRACE "OpenTelemetry tracing is not offered; x-request-id and --access-log PATH " \
	      "correlate requests; remove it"
#define WASM "WebAssembly hooks and MCP are not offered; remove it"
#define PARSER "responses are passed through as the engine writes them; start the engine " \
	       "with this parser instead"
#define INDEX "the index is bounded by engine removals and the statebus arena, nothing " \
	      "replaces it: remove it"
#define CACHE_PLACE "cache placement comes from the engines' KV events (and predicted " \
		    "ownership, statebus.prediction_ttl_ms); remove it"

static const struct sy_sglang_flag table[] = {
	/* ---- SMG (model_gateway/src/main.rs) ---- */
	NO("--health-check-port", "probes are answered on the serving port (/health, "
				  "/liveness, /readiness); remove it"),
	RT("--prefill", "a prefill worker with its bootstrap port (--pd-disaggregation)"),
	RT("--decode", "a decode worker (--pd-disaggregation)"),
	NO("--encode", EPD),
	NO("--cache-match-threshold", "removed; use cache_aware's candidate thresholds "
				      "--cache-affinity-min-matched-tokens N / "
				      "--cache-affinity-min-match-ratio R"),
	NO("--spill-abs-threshold",
	   "removed; use the pressure guard (--pressure-abs-threshold-tokens, "
	   "--pressure-rel-threshold) and --worker-queue-limit"),
	NO("--spill-rel-threshold",
	   "removed; use the pressure guard (--pressure-abs-threshold-tokens, "
	   "--pressure-rel-threshold) and --worker-queue-limit"),
	NO("--balance-token-usage-threshold",
	   "cache_aware's pressure guard replaces it: --pressure-rel-threshold, "
	   "--pressure-abs-threshold-tokens; or cap KV use with --max-kv-tokens"),
	NO("--overload-token-usage-threshold", "cap KV use per worker with --max-kv-tokens N"),
	NO("--worker-overload-protection", OVERLOAD),
	NO("--worker-overload-waiting-requests", OVERLOAD),
	NO("--worker-overload-token-usage", OVERLOAD),
	NO("--overlap-decay", "cache_aware ranks candidates by matched tokens with the "
			      "pressure guard (--pressure-rel-threshold); remove it"),
	NO("--selection-temperature", "cache_aware picks deterministically among candidates "
				      "(--cache-switch-margin-tokens); remove it"),
	NO("--eviction-interval", INDEX),
	NO("--block-size", "the block size is each engine's (its /server_info page_size or "
			   "kv_events.block_size), agreed per model; remove it"),
	NO("--cache-boundaries", CACHE_PLACE),
	NO("--cache-index", CACHE_PLACE),
	NO("--cache-ttl-secs", CACHE_PLACE),
	K("--max-idle-secs", "policy.affinity_idle_timeout_secs"),
	K("--sticky-key-idle-secs", "policy.affinity_idle_timeout_secs"),
	NO("--assignment-mode", "with --policy sticky, --sticky-fallback (round_robin, random, "
				"power_of_two, power_of_n, load_based) picks a new key's worker"),
	NO("--prefix-token-count", PREFIX_HASH),
	NO("--prefix-hash-load-factor", PREFIX_HASH),
	NO("--prefix-hash-balance-abs-threshold", PREFIX_HASH),
	NO("--least-load-kv-pressure-weight", LEAST_LOAD),
	NO("--least-load-default-throughput", LEAST_LOAD),
	NO("--least-load-mean-prefill-tokens", LEAST_LOAD),
	NO("--least-load-max-waiting-requests", LEAST_LOAD),
	NO("--routing-key-override", "use --policy sticky: the routing-key header "
				     "(--routing-key-header, default x-sgl-routing-key) pins a "
				     "conversation to a worker"),
	NO("--sticky-sessions", "use --policy sticky: the routing-key header "
				"(--routing-key-header, default x-sgl-routing-key) pins a "
				"conversation to a worker"),
	K("--routing-key-headers", "router.routing_key_header"),
	NO("--enable-igw", "not needed: every request goes to the workers of its model "
			   "(several models are always served); remove it"),
	NO("--dp-minimum-tokens-scheduler", "DP ranks are scheduled by the engine; remove it"),
	SET("--pd-disaggregation", "router.pd_disaggregation", "true"),
	NO("--epd-disaggregation", EPD),
	NO("--encode-policy", EPD),
	NO("--worker-startup-timeout-secs", STARTUP),
	NO("--worker-startup-delay", STARTUP),
	KS("--worker-startup-check-interval", "statebus.discovery_retry_ms", 1000),
	NO("--job-queue-capacity", "worker changes apply at once (no control-plane job "
				   "queue); remove it"),
	NO("--job-queue-concurrency", "worker changes apply at once (no control-plane job "
				      "queue); remove it"),
	NO("--zmq-engine-count", GRPC),
	NO("--upstream-http2", "workers are spoken to in HTTP/1.1 with keep-alive; remove it"),
	NO("--load-monitor-interval", "load comes from the engines' LoadStat stream (the "
				      "statebus), vLLM /metrics every statebus.metrics_interval_ms, "
				      "and router-local in-flight counts; remove it"),
	NO("--disable-load-monitoring", "load is read from the state plane only when a policy "
					"uses it; remove it"),
	NO("--engine-metrics", "the engines' load is exported on /metrics "
			       "(switchyard_worker_* families); remove it"),
	NO("--kv-indexer-ttl-secs", INDEX),
	NO("--kv-indexer-max-entries", INDEX),
	NO("--multimodal-tensor-transport", "multimodal inputs are forwarded in the request "
					    "body as sent; remove it"),
	NO("--multimodal-shm-min-bytes", "multimodal inputs are forwarded in the request body "
					 "as sent; remove it"),
	NO("--service-discovery-port", K8S),
	NO("--encode-selector", K8S),
	NO("--router-selector", MESH),
	NO("--model-id-from", "the model of a worker is the one its engine serves "
			      "(/server_info, /get_model_info, /v1/models), or workers[].model"),
	NO("--model-alias", "a model is served under one name: the engine's served model "
			    "name, or workers[].model / --model-id"),
	NO("--log-dir", "logs go to stderr (the journal under systemd); redirect it, and "
			"use --access-log PATH for one line per request"),
	SET("--log-json", "log.format", "json"),
	NO("--prometheus-duration-buckets", "the duration histograms have fixed buckets "
					    "(5 ms .. 300 s); remove it"),
	K("--request-id-headers", "router.request_id_headers"),
	NO("--storage-context-headers", STORE),
	NO("--trust-tenant-header", "the header named by --tenant-header-name "
				    "(router.tenant_header) is trusted whenever it is set; remove it"),
	K("--tenant-header-name", "router.tenant_header"),
	K("--shutdown-grace-period-secs", "router.shutdown_drain_secs"),
	K("--max-payload-size", "router.max_body_bytes"),
	NO("--stream-request-bodies-over", "request bodies are read whole (up to "
					   "--max-payload-size) before selection; remove it"),
	NO("--stream-body-stall-timeout-secs", "request bodies are read whole (up to "
					       "--max-payload-size) before selection; remove it"),
	K("--cors-allowed-origins", "router.cors_allowed_origins"),
	K("--max-concurrent-requests", "router.max_concurrent_requests"),
	K("--queue-size", "router.queue_size"),
	K("--queue-timeout-secs", "router.queue_timeout_secs"),
	NO("--priority-scheduler-enabled", "the priority classes are always on: the class "
					   "comes from x-smg-priority (--priority-header), "
					   "clamped by --tenant-max-priority; remove it"),
	K("--priority-scheduler-default-max-class", "router.tenant_max_priority"),
	NO("--priority-scheduler-config", "per-tenant classes and weights are configuration "
					  "keys: router.tenant_priorities, router.tenant_weights "
					  "(--tenant-priorities, --tenant-weights); remove it"),
	NO("--priority-scheduler-tenant-metric-top-n", "the tenant label of the queue metrics "
						       "is bounded (16 tenants, then \"other\"); "
						       "remove it"),
	NO("--tenant-rate-limit-enabled", TENANT),
	NO("--tenant-rate-limit-config", TENANT),
	NO("--rate-limit-tokens-per-second", TENANT),
	K("--cb-failure-threshold", "router.cb_threshold"),
	VAL("--cb-success-threshold", "router.cb_threshold", "1=",
	    "one successful half-open probe closes the breaker: give 1, or remove it"),
	K("--cb-timeout-duration-secs", "router.cb_cool_down_secs"),
	NO("--cb-window-duration-secs", "the breaker counts consecutive failures "
					"(--cb-failure-threshold), with no window; remove it"),
	SET("--disable-circuit-breaker", "router.cb_threshold", "0"),
	K("--health-failure-threshold", "statebus.health_failure_threshold"),
	K("--health-success-threshold", "statebus.health_success_threshold"),
	KS("--health-check-timeout-secs", "statebus.health_timeout_ms", 1000),
	KS("--health-check-interval-secs", "statebus.health_interval_ms", 1000),
	K("--health-check-endpoint", "statebus.health_endpoint"),
	SET("--disable-health-check", "statebus.disable_health_check", "true"),
	NO("--remove-unhealthy-workers", "an unhealthy worker stays registered and returns "
					 "after --health-success-threshold good probes; remove it "
					 "with DELETE /workers/ID"),
	NO("--worker-auto-recovery", "an unhealthy worker stays registered and returns after "
				     "--health-success-threshold good probes; remove it with "
				     "DELETE /workers/ID"),
	NO("--drain-settle-secs", "a removed worker finishes its requests in flight and takes "
				  "no new ones; remove it"),
	K("--model-path", "router.tokenizer.model_path"),
	K("--model", "router.tokenizer.model_path"),
	K("--chat-template", "router.tokenizer.chat_template"),
	NO("--disable-tokenizer-autoload", "not needed: the tokenizer is loaded only from "
					   "--tokenizer-path / --model-path; remove it"),
	NO("--tokenizer-cache-enable-l0", TOKCACHE),
	NO("--tokenizer-cache-l0-max-entries", TOKCACHE),
	NO("--tokenizer-cache-enable-l1", TOKCACHE),
	NO("--tokenizer-cache-l1-max-memory", TOKCACHE),
	NO("--reasoning-parser", PARSER),
	NO("--tool-call-parser", PARSER),
	NO("--mcp-config-path", WASM),
	NO("--backend", "the engine kind is discovered per worker (workers[].engine sglang or "
			"vllm forces it); remove it"),
	NO("--runtime", "the engine kind is discovered per worker (workers[].engine sglang or "
			"vllm forces it); remove it"),
	NO("--history-backend", STORE),
	NO("--enable-wasm", WASM),
	NO("--storage-hook-wasm-path", WASM),
	NO("--schema-config", STORE),
	NO("--oracle-wallet-path", STORE),
	NO("--oracle-tns-alias", STORE),
	NO("--oracle-dsn", STORE),
	NO("--oracle-user", STORE),
	NO("--oracle-password", STORE),
	NO("--oracle-external-auth", STORE),
	NO("--oracle-pool-min", STORE),
	NO("--oracle-pool-max", STORE),
	NO("--oracle-pool-timeout-secs", STORE),
	NO("--postgres-db-url", STORE),
	NO("--postgres-pool-max-size", STORE),
	NO("--redis-url", STORE),
	NO("--redis-pool-max-size", STORE),
	NO("--redis-retention-days", STORE),
	NO("--enable-trace", TRACE),
	NO("--otlp-traces-endpoint", TRACE),
	NO("--tenant-api-key", AUTHN),
	NO("--jwt-issuer", AUTHN),
	NO("--jwt-audience", AUTHN),
	NO("--jwt-jwks-uri", AUTHN),
	NO("--jwt-role-claim", AUTHN),
	NO("--jwt-role-mapping", AUTHN),
	NO("--control-plane-api-keys", "the admin API takes one bearer key: --admin-api-key KEY"),
	NO("--disable-audit-logging", "admin changes are logged at info, with no separate audit "
				      "log; remove it"),
	NO("--enable-mesh", MESH),
	NO("--mesh-server-name", MESH),
	NO("--mesh-host", MESH),
	NO("--mesh-advertise-host", MESH),
	NO("--mesh-port", MESH),
	NO("--mesh-peer-urls", MESH),
	NO("--webrtc-bind-addr", "realtime (WebRTC) routes are not offered; remove it"),
	NO("--webrtc-stun-server", "realtime (WebRTC) routes are not offered; remove it"),
	NO("--runtime-worker-threads", "use --processes N (one single-threaded event loop per "
				       "process)"),
	/* ---- the sglang_router launcher (router_args.py) ---- */
	NO("--mini-lb", "the mini load balancer is not offered; use --pd-disaggregation "
			"--prefill URL --decode URL (with any --prefill-policy/--decode-policy)"),
	NO("--bucket-adjust-interval-secs", "the bucket policy is not offered; use `buckets` "
					    "in the configuration file"),
	NO("--redis-key-prefix", STORE),
	NO("--bootstrap-port-annotation", K8S),
	NO("--client-cert-path", CLIENT_TLS),
	NO("--client-key-path", CLIENT_TLS),
	NO("--ca-cert-paths", CLIENT_TLS),
	K("--server-cert-path", "router.tls_cert_path"),
	K("--server-key-path", "router.tls_key_path"),
	NO("--control-plane-audit-enabled", "admin changes are logged at info, with no "
					    "separate audit log; remove it"),
	NO("--oracle-connect-descriptor", STORE),
	NO("--oracle-username", STORE),
	NO("--postgres-pool-max", STORE),
	NO("--redis-pool-max", STORE),
	NO("--router-disable-arg-fallback", "not needed: switchyard reads no environment "
					    "fallbacks; remove it"),
	/* ---- the slim router (experimental/sgl-router config/cli.rs) ---- */
	K("--kv-indexer-query-timeout-ms", "policy.kv_indexer_timeout_ms"),
	K("--kv-indexer-query-max-inflight", "policy.kv_indexer_max_inflight"),
	K("--session-idle-secs", "policy.affinity_idle_timeout_secs"),
	K("--session-eviction-interval-secs", "statebus.affinity_sweep_interval_secs"),
	K("--sticky-fallback-policy", "policy.sticky_fallback"),
	K("--sticky-idle-secs", "policy.affinity_idle_timeout_secs"),
	K("--sticky-eviction-interval-secs", "statebus.affinity_sweep_interval_secs"),
	K("--max-concurrent-requests-per-worker", "policy.admission.max_inflight_requests"),
	K("--max-queued-requests", "router.queue_size"),
	SET("--enable-retry", "router.retry_once", "true"),
	NO("--tokenizer-shards", "every router process tokenizes its own requests "
				 "(--processes N); remove it"),
};

const struct sy_sglang_flag *sy_sglang_flag(const char *flag)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].flag, flag) == 0)
			return &table[i];
	return NULL;
}

const struct sy_sglang_flag *sy_sglang_flags(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}
