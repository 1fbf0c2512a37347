/* test_config.c — the YAML configuration loader, flags and finish (common/config.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/config_schema.h"
#include "common/errors.h"
#include "sy_check.h"

static struct sy_config cfg;
static struct sy_config_error err;

static void setup(void)
{
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(sy_config_init_defaults(&cfg), SY_OK);
}

static void teardown(void) { sy_config_free(&cfg); }

static int load(const char *yaml)
{
	return sy_config_load_string(&cfg, "t.yaml", yaml, strlen(yaml), &err);
}

/* Loads `yaml`, expects failure `code` and exactly `msg`. */
#define ck_load_fails(yaml, want_rc, want_msg)                 \
	do {                                                   \
		ck_assert_int_eq(load(yaml), (want_rc));       \
		ck_assert_int_eq(err.code, (want_rc));         \
		ck_assert_str_eq(err.msg, (want_msg));         \
	} while (0)

static int flag(const char *section, const char *f, const char *v)
{
	return sy_config_apply_flag(&cfg, section, f, v, &err);
}

/* ---- defaults and valid files ----------------------------------------------- */

START_TEST(test_defaults_match_the_design_sketch)
{
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_str_eq(cfg.model_id, "default-model");
	ck_assert_int_eq(cfg.log.level, 1); /* SY_LOG_INFO */
	ck_assert_int_eq(cfg.log.format, 0); /* SY_LOG_TEXT */
	ck_assert_str_eq(cfg.state.shm_path, "/dev/shm/switchyard");
	ck_assert_ptr_null(cfg.state.group);
	ck_assert_uint_eq(cfg.n_workers, 0);
	ck_assert_str_eq(cfg.router.host, "127.0.0.1");
	ck_assert_int_eq(cfg.router.port, 30000);
	ck_assert_int_eq(cfg.router.processes, 1);
	ck_assert_int_eq(cfg.router.request_timeout_secs, 1800);
	ck_assert_int_eq(cfg.router.header_timeout_secs, 300);
	ck_assert_int_eq(cfg.router.shutdown_drain_secs, 30);
	ck_assert_uint_eq(cfg.router.max_body_bytes, 32u << 20);
	ck_assert_uint_eq(cfg.router.max_pending_body_bytes, 256u << 20);
	ck_assert_int_eq(cfg.router.tokenizer.kind, SY_TOKENIZER_BYTES);
	ck_assert_ptr_null(cfg.router.tokenizer.path);
	ck_assert_ptr_null(cfg.router.access_log);
	ck_assert_ptr_null(cfg.router.admin_api_key);
	ck_assert_str_eq(cfg.statebus.control_endpoint, "ipc:///dev/shm/switchyard.ctl");
	ck_assert_ptr_null(cfg.statebus.query_endpoint);
	ck_assert_int_eq(cfg.statebus.health_interval_ms, 1000);
}
END_TEST

START_TEST(test_empty_comment_only_and_null_documents_give_all_defaults)
{
	static const char *const docs[] = {"", "\n\n", "# nothing here\n", "---\n", "--- ~\n",
					   "---\n...\n"};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		ck_assert_msg(load(docs[i]) == SY_OK, "doc %zu: %s", i, err.msg);
		ck_assert_str_eq(cfg.model_id, "default-model");
		ck_assert_int_eq(cfg.router.port, 30000);
	}
}
END_TEST

static const char full_yaml[] =
	"# every key of the schema\n"
	"model_id: llama-3\n"
	"log: {level: debug, format: json}\n"
	"state: {group: switchyard,\n"
	"  shm_path: /dev/shm/sy-test}\n"
	"workers:\n"
	"  - url: HTTP://10.0.0.1:30001/\n"
	"    role: plain\n"
	"  - url: http://10.0.0.2:30001\n"
	"    role: prefill\n"
	"    bootstrap_port: 8998\n"
	"    model: other-model\n"
	"    kv_events:\n"
	"      endpoint_host: 10.0.0.2\n"
	"      endpoint_port_base: 5557\n"
	"      topic: kv\n"
	"      block_size: 16\n"
	"      dp_size: 2\n"
	"      replay_port_base: 5560\n"
	"      load_endpoint_port_base: 5570\n"
	"  - {url: 'http://10.0.0.3:30001', role: decode, model: other-model}\n"
	"worker_urls: [http://10.0.0.4:30001]\n"
	"router:\n"
	"  host: 0.0.0.0\n"
	"  port: 8080\n"
	"  processes: 4\n"
	"  request_timeout_secs: 60\n"
	"  shutdown_drain_secs: 5\n"
	"  max_body_bytes: 1048576\n"
	"  tokenizer: {kind: hf, path: /models/llama}\n"
	"  access_log: /var/log/switchyard/access.log\n"
	"  admin_api_key: \"s3cret\"\n"
	"statebus:\n"
	"  control_endpoint: tcp://127.0.0.1:5555\n"
	"  query_endpoint: tcp://0.0.0.0:5556\n"
	"  health_interval_ms: 250\n";

START_TEST(test_full_valid_file_sets_every_key)
{
	ck_assert_msg(load(full_yaml) == SY_OK, "%s", err.msg);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_str_eq(cfg.model_id, "llama-3");
	ck_assert_int_eq(cfg.log.level, 0);
	ck_assert_int_eq(cfg.log.format, 1);
	ck_assert_str_eq(cfg.state.shm_path, "/dev/shm/sy-test");
	ck_assert_str_eq(cfg.state.group, "switchyard");
	ck_assert_uint_eq(cfg.n_workers, 4);
	ck_assert_str_eq(cfg.workers[0].url, "http://10.0.0.1:30001");
	ck_assert_int_eq(cfg.workers[0].role, SY_ROLE_PLAIN);
	ck_assert_str_eq(cfg.workers[0].model, "llama-3");
	ck_assert_int_eq(cfg.workers[0].bootstrap_port, 0);
	ck_assert_uint_eq(cfg.workers[0].mark.line, 7);
	const struct sy_config_worker *w = &cfg.workers[1];
	ck_assert_int_eq(w->role, SY_ROLE_PREFILL);
	ck_assert_str_eq(w->model, "other-model");
	ck_assert_int_eq(w->bootstrap_port, 8998);
	ck_assert_str_eq(w->kv_events.endpoint_host, "10.0.0.2");
	ck_assert_int_eq(w->kv_events.endpoint_port_base, 5557);
	ck_assert_str_eq(w->kv_events.topic, "kv");
	ck_assert_int_eq(w->kv_events.block_size, 16);
	ck_assert_int_eq(w->kv_events.dp_size, 2);
	ck_assert_int_eq(w->kv_events.replay_port_base, 5560);
	ck_assert_int_eq(w->kv_events.load_endpoint_port_base, 5570);
	ck_assert_int_eq(cfg.workers[2].role, SY_ROLE_DECODE);
	ck_assert_str_eq(cfg.workers[3].url, "http://10.0.0.4:30001");
	ck_assert_int_eq(cfg.workers[3].role, SY_ROLE_PLAIN);
	ck_assert_str_eq(cfg.workers[3].model, "llama-3");
	ck_assert_uint_eq(cfg.workers[3].mark.line, 22);
	ck_assert_uint_eq(cfg.n_worker_urls, 0);
	ck_assert_str_eq(cfg.router.host, "0.0.0.0");
	ck_assert_int_eq(cfg.router.port, 8080);
	ck_assert_int_eq(cfg.router.processes, 4);
	ck_assert_int_eq(cfg.router.request_timeout_secs, 60);
	ck_assert_int_eq(cfg.router.shutdown_drain_secs, 5);
	ck_assert_uint_eq(cfg.router.max_body_bytes, 1048576);
	ck_assert_int_eq(cfg.router.tokenizer.kind, SY_TOKENIZER_HF);
	ck_assert_str_eq(cfg.router.tokenizer.path, "/models/llama");
	ck_assert_str_eq(cfg.router.access_log, "/var/log/switchyard/access.log");
	ck_assert_str_eq(cfg.router.admin_api_key, "s3cret");
	ck_assert_str_eq(cfg.statebus.control_endpoint, "tcp://127.0.0.1:5555");
	ck_assert_str_eq(cfg.statebus.query_endpoint, "tcp://0.0.0.0:5556");
	ck_assert_int_eq(cfg.statebus.health_interval_ms, 250);
	ck_assert_str_eq(sy_worker_role_name(cfg.workers[1].role), "prefill");
	ck_assert_str_eq(sy_tokenizer_kind_name(cfg.router.tokenizer.kind), "hf");
}
END_TEST

START_TEST(test_null_values_reset_optional_keys_and_empty_lists)
{
	ck_assert_int_eq(load("router: {access_log: /tmp/a}\nworker_urls: [http://a]\n"), SY_OK);
	ck_assert_int_eq(load("router:\n  access_log: ~\n  tokenizer:\nworkers:\nworker_urls: null\n"),
			 SY_OK);
	ck_assert_ptr_null(cfg.router.access_log);
	ck_assert_uint_eq(cfg.n_worker_urls, 0);
	ck_assert_uint_eq(cfg.n_workers, 0);
}
END_TEST

START_TEST(test_load_file_reads_the_file_and_names_it_in_messages)
{
	char path[] = "/tmp/sy-test-config-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	const char text[] = "router:\n  port: 8081\n  porrt: 1\n";
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	ck_assert_int_eq(sy_config_load_file(&cfg, path, &err), SY_ECONFIG);
	char want[128];
	snprintf(want, sizeof(want), "%s:3:3: router.porrt: unknown key", path);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(cfg.router.port, 8081);
	ck_assert_str_eq(cfg.source, path);
	unlink(path);

	ck_assert_int_eq(sy_config_load_file(&cfg, "/nonexistent/sy.yaml", &err), SY_EIO);
	ck_assert_str_eq(err.msg, "/nonexistent/sy.yaml: cannot open: No such file or directory");
}
END_TEST

/* ---- errors: FILE:LINE:COL: key.path: reason ---------------------------------- */

START_TEST(test_unknown_key_gives_file_line_col_and_dotted_path)
{
	ck_load_fails("model_id: m\nrouter:\n  host: a\n  prot: 1\n", SY_ECONFIG,
		      "t.yaml:4:3: router.prot: unknown key");
	ck_assert_uint_eq(err.line, 4);
	ck_assert_uint_eq(err.col, 3);
	ck_assert_str_eq(err.key, "router.prot");
	ck_load_fails("bucketz: []\n", SY_ECONFIG, "t.yaml:1:1: bucketz: unknown key");
}
END_TEST

START_TEST(test_unknown_key_in_second_worker_kv_events_has_indexed_path)
{
	ck_load_fails("workers:\n"
		      "  - url: http://a\n"
		      "  - url: http://b\n"
		      "    kv_events: {block_size: 16, blok_size: 4}\n",
		      SY_ECONFIG, "t.yaml:4:33: workers[1].kv_events.blok_size: unknown key");
}
END_TEST

START_TEST(test_out_of_range_values_name_the_range)
{
	ck_load_fails("workers:\n"
		      "  - url: http://a\n"
		      "  - url: http://b\n"
		      "    kv_events:\n"
		      "      block_size: 0\n",
		      SY_ECONFIG,
		      "t.yaml:5:19: workers[1].kv_events.block_size: must be an integer in 1..1048576");
	ck_load_fails("router: {port: 65536}\n", SY_ECONFIG,
		      "t.yaml:1:16: router.port: must be an integer in 1..65535");
	ck_load_fails("router:\n  processes: 99999999999999999999\n", SY_ECONFIG,
		      "t.yaml:2:14: router.processes: must be an integer in 1..256");
	ck_load_fails("router:\n  max_body_bytes: 0\n", SY_ECONFIG,
		      "t.yaml:2:19: router.max_body_bytes: must be an unsigned integer in "
		      "1..4294967296");
	ck_load_fails("router:\n  port: 08080\n", SY_ECONFIG,
		      "t.yaml:2:9: router.port: must be an integer in 1..65535");
}
END_TEST

START_TEST(test_sequence_where_scalar_expected_is_a_wrong_type)
{
	ck_load_fails("router:\n  port: [1, 2]\n", SY_ECONFIG,
		      "t.yaml:2:9: router.port: must be an integer in 1..65535, not a sequence");
	ck_load_fails("model_id: {a: b}\n", SY_ECONFIG,
		      "t.yaml:1:11: model_id: must be a non-empty string, not a mapping");
	ck_load_fails("router: 8080\n", SY_ECONFIG,
		      "t.yaml:1:9: router: must be a mapping, not a scalar");
	ck_load_fails("workers: {url: http://a}\n", SY_ECONFIG,
		      "t.yaml:1:10: workers: must be a sequence of mappings, not a mapping");
	ck_load_fails("workers: [http://a]\n", SY_ECONFIG,
		      "t.yaml:1:11: workers[0]: must be a mapping, not a scalar");
	ck_load_fails("worker_urls: [[http://a]]\n", SY_ECONFIG,
		      "t.yaml:1:15: worker_urls[0]: must be a string, not a sequence");
	ck_load_fails("router: {port: \"8080\"}\n", SY_ECONFIG,
		      "t.yaml:1:16: router.port: must be an integer in 1..65535, not a quoted string");
	ck_load_fails("{[a]: 1}\n", SY_ECONFIG, "t.yaml:1:2: keys must be scalars, not a sequence");
}
END_TEST

START_TEST(test_enum_value_outside_the_set_lists_the_names)
{
	ck_load_fails("workers:\n  - {url: http://a, role: mixed}\n", SY_ECONFIG,
		      "t.yaml:2:27: workers[0].role: must be one of plain, prefill, decode");
	ck_load_fails("log: {level: verbose}\n", SY_ECONFIG,
		      "t.yaml:1:14: log.level: must be one of debug, info, warn, error, off");
	ck_load_fails("router: {tokenizer: {kind: HF}}\n", SY_ECONFIG,
		      "t.yaml:1:28: router.tokenizer.kind: must be one of bytes, hf, off");
}
END_TEST

START_TEST(test_worker_engine_is_auto_sglang_or_vllm)
{
	ck_assert_int_eq(load("workers:\n"
			      "  - {url: http://a:1}\n"
			      "  - {url: http://b:1, engine: sglang}\n"
			      "  - url: http://c:1\n"
			      "    engine: vllm\n"
			      "    kv_events: {endpoint_port_base: 5557, replay_port_base: 5558,\n"
			      "                topic: kv, block_size: 16, dp_size: 2}\n"
			      "statebus: {vllm_map_blocks: 4096}\n"), SY_OK);
	ck_assert_uint_eq(cfg.n_workers, 3);
	ck_assert_int_eq(cfg.workers[0].engine, SY_ENGINE_AUTO);
	ck_assert_int_eq(cfg.workers[1].engine, SY_ENGINE_SGLANG);
	ck_assert_int_eq(cfg.workers[2].engine, SY_ENGINE_VLLM);
	ck_assert_int_eq(cfg.workers[2].kv_events.replay_port_base, 5558);
	ck_assert_str_eq(cfg.workers[2].kv_events.topic, "kv");
	ck_assert_int_eq(cfg.statebus.vllm_map_blocks, 4096);
	ck_assert_str_eq(sy_engine_kind_name(SY_ENGINE_VLLM), "vllm");
	ck_load_fails("workers:\n  - {url: http://a:1, engine: trtllm}\n", SY_ECONFIG,
		      "t.yaml:2:31: workers[0].engine: must be one of auto, sglang, vllm");
	ck_load_fails("statebus: {vllm_map_blocks: 8}\n", SY_ECONFIG,
		      "t.yaml:1:29: statebus.vllm_map_blocks: must be an integer in 16..67108864");
}
END_TEST

START_TEST(test_duplicate_key_names_the_first_line)
{
	ck_load_fails("router:\n  port: 1\n  host: a\n  port: 2\n", SY_ECONFIG,
		      "t.yaml:4:3: router.port: duplicate key (first at line 2)");
	ck_load_fails("model_id: a\nmodel_id: b\n", SY_ECONFIG,
		      "t.yaml:2:1: model_id: duplicate key (first at line 1)");
}
END_TEST

START_TEST(test_missing_required_url_points_at_the_entry)
{
	ck_load_fails("workers:\n  - url: http://a\n  - role: decode\n    model: m\n", SY_ECONFIG,
		      "t.yaml:3:5: workers[1].url: required key is missing");
	ck_load_fails("workers: [{}]\n", SY_ECONFIG,
		      "t.yaml:1:11: workers[0].url: required key is missing");
}
END_TEST

START_TEST(test_yaml_syntax_error_reports_its_line)
{
	ck_load_fails("router:\n  port: 1\n host: a\n", SY_EMALFORMED,
		      "t.yaml:3:2: YAML syntax error: did not find expected key while parsing a "
		      "block mapping");
	ck_load_fails("router:\n\tport: 1\n", SY_EMALFORMED,
		      "t.yaml:2:1: YAML syntax error: found character that cannot start any token "
		      "while scanning for the next token");
	ck_load_fails("model_id: a\n  b: c\n", SY_EMALFORMED,
		      "t.yaml:2:4: YAML syntax error: mapping values are not allowed in this "
		      "context");
	ck_load_fails("model_id: \"abc\n", SY_EMALFORMED,
		      "t.yaml:2:1: YAML syntax error: found unexpected end of stream while "
		      "scanning a quoted scalar");
}
END_TEST

START_TEST(test_anchors_aliases_and_tags_are_refused)
{
	ck_load_fails("model_id: &m x\n", SY_ECONFIG,
		      "t.yaml:1:11: model_id: anchors are not supported");
	ck_load_fails("workers:\n  - url: http://a\n    model: *m\n", SY_ECONFIG,
		      "t.yaml:3:12: workers[0].model: aliases are not supported");
	ck_load_fails("router: {port: !!int 80}\n", SY_ECONFIG,
		      "t.yaml:1:16: router.port: tags are not supported");
	ck_load_fails("router: !custom {}\n", SY_ECONFIG,
		      "t.yaml:1:9: router: tags are not supported");
	ck_load_fails("<<: {model_id: x}\n", SY_ECONFIG, "t.yaml:1:1: <<: unknown key");
}
END_TEST

START_TEST(test_root_must_be_one_mapping)
{
	ck_load_fails("- a\n- b\n", SY_ECONFIG,
		      "t.yaml:1:1: the top level must be a mapping, not a sequence");
	ck_load_fails("hello\n", SY_ECONFIG,
		      "t.yaml:1:1: the top level must be a mapping, not a scalar");
	ck_load_fails("model_id: a\n---\nmodel_id: b\n", SY_ECONFIG,
		      "t.yaml:2:1: only one YAML document is supported");
}
END_TEST

START_TEST(test_string_values_must_be_non_empty_without_nul)
{
	ck_load_fails("model_id: \"\"\n", SY_ECONFIG, "t.yaml:1:11: model_id: must be a non-empty string");
	ck_load_fails("model_id:\n", SY_ECONFIG, "t.yaml:1:10: model_id: must be a non-empty string");
	ck_load_fails("model_id: \"a\\0b\"\n", SY_ECONFIG,
		      "t.yaml:1:11: model_id: must not contain NUL bytes");
}
END_TEST

START_TEST(test_bad_worker_url_and_zmq_endpoint_give_reasons)
{
	ck_load_fails("workers:\n  - url: ftp://a\n", SY_ECONFIG,
		      "t.yaml:2:10: workers[0].url: must start with http:// or https://");
	ck_load_fails("worker_urls: [http://a, 'http://b c']\n", SY_ECONFIG,
		      "t.yaml:1:25: worker_urls[1]: must not contain spaces or control characters");
	ck_load_fails("statebus: {control_endpoint: /tmp/x}\n", SY_ECONFIG,
		      "t.yaml:1:30: statebus.control_endpoint: must be a ZeroMQ endpoint "
		      "(ipc://PATH, tcp://HOST:PORT or inproc://NAME)");
}
END_TEST

START_TEST(test_prediction_keys_default_parse_flag_and_range_check)
{
	ck_assert_int_eq(cfg.statebus.prediction_ttl_ms, 30000);
	ck_assert_int_eq(cfg.statebus.prediction_drain_ms, 2);
	ck_assert_int_eq(cfg.statebus.prediction_capacity_tokens, 0);
	ck_assert_msg(load("statebus: {prediction_ttl_ms: 1500, prediction_drain_ms: 5,\n"
			   "           prediction_capacity_tokens: 8000000000}\n") == SY_OK,
		      "%s", err.msg);
	ck_assert_int_eq(cfg.statebus.prediction_ttl_ms, 1500);
	ck_assert_int_eq(cfg.statebus.prediction_drain_ms, 5);
	ck_assert_int_eq(cfg.statebus.prediction_capacity_tokens, INT64_C(8000000000));
	ck_assert_int_eq(flag("statebus", "--prediction-ttl-ms", "250"), SY_OK);
	ck_assert_int_eq(cfg.statebus.prediction_ttl_ms, 250);
	ck_load_fails("statebus: {prediction_ttl_ms: 0}\n", SY_ECONFIG,
		      "t.yaml:1:31: statebus.prediction_ttl_ms: must be an integer in 10..86400000");
	ck_load_fails("statebus: {prediction_drain_ms: 1001}\n", SY_ECONFIG,
		      "t.yaml:1:33: statebus.prediction_drain_ms: must be an integer in 1..1000");
	ck_load_fails("statebus: {prediction_capacity_tokens: -1}\n", SY_ECONFIG,
		      "t.yaml:1:40: statebus.prediction_capacity_tokens: must be an integer in "
		      "0..9223372036854775807");
}
END_TEST

START_TEST(test_kv_events_fleet_and_worker_switches)
{
	ck_assert_int_eq(cfg.statebus.kv_events, SY_KV_EVENTS_ON);
	ck_assert_msg(load("statebus: {kv_events: off}\n"
			   "workers: [{url: http://a:1}, {url: http://b:1, kv_events: {subscribe: on,\n"
			   "  endpoint_port_base: 5557}}, {url: http://c:1, kv_events: {block_size: 32}}]\n") ==
			      SY_OK,
		      "%s", err.msg);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_int_eq(cfg.statebus.kv_events, SY_KV_EVENTS_OFF);
	ck_assert(!sy_config_kv_events_on(&cfg, &cfg.workers[0].kv_events));
	ck_assert(sy_config_kv_events_on(&cfg, &cfg.workers[1].kv_events));
	ck_assert(!sy_config_kv_events_on(&cfg, &cfg.workers[2].kv_events)); /* block size kept */
	struct sy_config_kv_events added = {0}; /* a worker added at run time */
	ck_assert(!sy_config_kv_events_on(&cfg, &added));
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("statebus", "--kv-events", "off"), SY_OK);
	ck_assert_int_eq(cfg.statebus.kv_events, SY_KV_EVENTS_OFF);
	ck_load_fails("statebus: {kv_events: maybe}\n", SY_ECONFIG,
		      "t.yaml:1:23: statebus.kv_events: must be one of on, off");
	/* the endpoint of a worker whose events are off: refused with the way out */
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(load("workers: [{url: http://a:1, kv_events: {subscribe: off,\n"
			      "  endpoint_port_base: 5557}}]\n"),
			 SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.key, "workers[0].kv_events.endpoint_port_base");
	ck_assert_ptr_nonnull(strstr(err.msg, "use workers[0].kv_events.subscribe: on"));
}
END_TEST

START_TEST(test_retry_flags_map_and_contradictions_are_refused)
{
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_int_eq(cfg.router.retry_max_retries, 0); /* opt-in */
	ck_assert_int_eq(cfg.router.retry_initial_backoff_ms, 50);
	ck_assert_int_eq(cfg.router.retry_max_backoff_ms, 30000);
	ck_assert(cfg.router.retry_backoff_multiplier == 1.5);
	ck_assert(cfg.router.retry_jitter_factor == 0.2);
	ck_assert_int_eq(cfg.router.upstream_pool_idle_timeout_secs, 3);
	ck_assert_int_eq(cfg.router.stall_timeout_secs, 5);
	ck_assert_int_eq(cfg.router.health_unknown_grace_secs, 0);
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("router", "--retry-once", NULL), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_int_eq(cfg.router.retry_max_retries, 1);
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("router", "--retry-max-retries", "3"), SY_OK);
	ck_assert_int_eq(flag("router", "--retry-once", NULL), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "router.retry_once: means retry_max_retries 1 but "
				  "retry_max_retries is 3; keep one of them");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("router", "--disable-retries", NULL), SY_OK);
	ck_assert_int_eq(flag("router", "--retry-max-retries", "2"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "router.disable_retries: conflicts with router.retry_max_retries; "
				  "keep one of them");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("router", "--retry-initial-backoff-ms", "500"), SY_OK);
	ck_assert_int_eq(flag("router", "--retry-max-backoff-ms", "100"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "router.retry_max_backoff_ms: 100 is below "
				  "router.retry_initial_backoff_ms 500; raise it or lower the initial backoff");
	ck_assert_int_eq(flag("router", "--retry-max-retries", "16"), SY_ECONFIG);
	/* health probe flags work on the router too (the master probes) */
	ck_assert_int_eq(flag("router", "--health-interval-ms", "200"), SY_OK);
	ck_assert_int_eq(cfg.statebus.health_interval_ms, 200);
}
END_TEST

START_TEST(test_oversized_input_is_refused)
{
	size_t n = SY_CONFIG_MAX_BYTES + 1;
	char *big = malloc(n);
	ck_assert_ptr_nonnull(big);
	memset(big, '\n', n);
	ck_assert_int_eq(sy_config_load_string(&cfg, "big.yaml", big, n, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "big.yaml: larger than 1048576 bytes");
	free(big);
}
END_TEST

/* ---- finish: the fleet, derived defaults, cross-field checks -------------------- */

START_TEST(test_duplicate_worker_after_normalisation_names_both_lines)
{
	ck_assert_int_eq(load("workers:\n"
			      "  - url: http://a:1\n"
			      "  - url: http://b:1\n"
			      "  - url: HTTP://A:1/\n"),
			 SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:4:5: workers[2].url: duplicate worker \"http://a:1\" "
				  "(first at line 2, workers[0].url)");
}
END_TEST

START_TEST(test_duplicate_between_workers_and_worker_urls_is_refused)
{
	ck_assert_int_eq(load("workers: [{url: http://a}]\nworker_urls:\n  - http://b\n  - http://A/\n"),
			 SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:4:5: worker_urls[1]: duplicate worker \"http://a\" "
				  "(first at line 1, workers[0].url)");
}
END_TEST

START_TEST(test_worker_model_defaults_to_model_id_after_flags)
{
	ck_assert_int_eq(load("workers: [{url: http://a}, {url: http://b, model: own}]\n"), SY_OK);
	ck_assert_int_eq(flag("router", "--model-id", "flag-model"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_str_eq(cfg.workers[0].model, "flag-model");
	ck_assert_str_eq(cfg.workers[1].model, "own");
}
END_TEST

START_TEST(test_control_endpoint_derives_from_shm_path_unless_given)
{
	ck_assert_int_eq(load("state: {shm_path: /dev/shm/t1}\n"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_str_eq(cfg.statebus.control_endpoint, "ipc:///dev/shm/t1.ctl");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("statebus", "--shm", "/dev/shm/t2"), SY_OK);
	ck_assert_int_eq(flag("statebus", "--control-endpoint", "ipc:///run/sy.ctl"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_str_eq(cfg.statebus.control_endpoint, "ipc:///run/sy.ctl");
}
END_TEST

START_TEST(test_shm_path_must_be_absolute_and_fit_the_region_path)
{
	ck_assert_int_eq(load("state: {shm_path: dev/shm/x}\n"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:1:19: state.shm_path: must be an absolute path");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	char longp[300];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	ck_assert_int_eq(flag("statebus", "--shm", longp), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--shm: must be at most 255 bytes long");
	longp[255] = '\0';
	ck_assert_int_eq(flag("statebus", "--shm", longp), SY_OK);
}
END_TEST

START_TEST(test_state_group_from_file_and_flag_must_be_a_group_name)
{
	ck_assert_int_eq(load("state: {shm_path: /dev/shm/t1, group: switchyard}\n"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_str_eq(cfg.state.group, "switchyard");
	ck_assert_int_eq(flag("statebus", "--shm-group", "sy-readers"), SY_OK);
	ck_assert_str_eq(cfg.state.group, "sy-readers");
	ck_assert_int_eq(flag("router", "--shm-group", "machine$"), SY_OK);
	ck_assert_str_eq(cfg.state.group, "machine$");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(load("state: {group: ~}\n"), SY_OK);
	ck_assert_ptr_null(cfg.state.group);
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(load("state: {group: ../etc}\n"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:1:16: state.group: must be a group name (letters, "
				  "digits, '_', '-', '.'; at most 32 bytes)");
	static const char *const bad[] = {"-x", "a b", "a:b", "a$b",
					  "abcdefghijklmnopqrstuvwxyz0123456"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(flag("statebus", "--shm-group", bad[i]) == SY_ECONFIG, "%s", bad[i]);
}
END_TEST

START_TEST(test_cross_field_checks_fail_with_key_and_position)
{
	ck_assert_int_eq(load("router:\n  tokenizer:\n    kind: hf\n"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "t.yaml:3:5: router.tokenizer.path: required when "
				  "router.tokenizer.kind is hf (or give router.tokenizer.model_path)");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("statebus", "--query-endpoint", "ipc:///dev/shm/switchyard.ctl"),
			 SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg,
			 "statebus.query_endpoint: must differ from statebus.control_endpoint");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("router", "--max-pending-body-bytes", "1048576"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "router.max_pending_body_bytes: 1048576 is below "
				  "router.max_body_bytes 33554432: a body of the allowed size could "
				  "never be held; raise it to at least 33554432 or lower max_body_bytes");
}
END_TEST

/* ---- flags -------------------------------------------------------------------- */

START_TEST(test_flag_to_key_follows_the_naming_rule)
{
	char key[96];
	ck_assert_int_eq(sy_config_flag_to_key("router", "--request-timeout-secs", key, sizeof(key)),
			 SY_OK);
	ck_assert_str_eq(key, "router.request_timeout_secs");
	ck_assert_int_eq(sy_config_flag_to_key("router", "--max-body-bytes", key, sizeof(key)), SY_OK);
	ck_assert_str_eq(key, "router.max_body_bytes");
	ck_assert_int_eq(sy_config_flag_to_key("statebus", "--health-interval-ms", key, sizeof(key)),
			 SY_OK);
	ck_assert_str_eq(key, "statebus.health_interval_ms");
	ck_assert_int_eq(sy_config_flag_to_key(NULL, "--model-id", key, sizeof(key)), SY_OK);
	ck_assert_str_eq(key, "model_id");
	/* The rule gives a candidate even when the schema has no such key. */
	ck_assert_int_eq(sy_config_flag_to_key("statebus", "--port", key, sizeof(key)), SY_ENOENT);
	ck_assert_str_eq(key, "statebus.port");
	ck_assert_int_eq(sy_config_flag_to_key("router", "--Port", key, sizeof(key)), SY_EINVAL);
	ck_assert_int_eq(sy_config_flag_to_key("router", "port", key, sizeof(key)), SY_EINVAL);
	ck_assert_int_eq(sy_config_flag_to_key("router", "---port", key, sizeof(key)), SY_EINVAL);
	ck_assert_int_eq(sy_config_flag_to_key("nosuch", "--port", key, sizeof(key)), SY_EINVAL);
	ck_assert_int_eq(sy_config_flag_to_key("router", "--request-timeout-secs", key, 8),
			 SY_ENOSPC);
}
END_TEST

START_TEST(test_flag_to_key_uses_the_settled_exceptions_in_any_section)
{
	static const char *const pairs[][2] = {
		{"--shm", "state.shm_path"},
		{"--control-endpoint", "statebus.control_endpoint"},
		{"--query-endpoint", "statebus.query_endpoint"},
		{"--tokenizer", "router.tokenizer.kind"},
		{"--tokenizer-path", "router.tokenizer.path"},
		{"--log-level", "log.level"},
		{"--log-format", "log.format"},
		{"--worker-urls", "worker_urls"},
		{"--model-id", "model_id"},
	};
	static const char *const sections[] = {"router", "statebus", NULL};
	char key[96];
	for (size_t s = 0; s < 3; s++) {
		for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
			ck_assert_int_eq(sy_config_flag_to_key(sections[s], pairs[i][0], key,
							       sizeof(key)),
					 SY_OK);
			ck_assert_str_eq(key, pairs[i][1]);
		}
	}
}
END_TEST

START_TEST(test_legacy_flag_is_refused_naming_its_replacement)
{
	char key[256];
	ck_assert_int_eq(sy_config_flag_to_key("router", "--max-tree-size", key, sizeof(key)),
			 SY_EUNSUPPORTED);
	ck_assert_int_eq(flag("router", "--cache-threshold", "0.5"), SY_EUNSUPPORTED);
	ck_assert_str_eq(err.msg, "--cache-threshold: removed; use cache_aware's candidate "
				  "thresholds --cache-affinity-min-matched-tokens N / "
				  "--cache-affinity-min-match-ratio R");
}
END_TEST

START_TEST(test_flag_overrides_the_file)
{
	ck_assert_int_eq(load("router: {port: 8080, request_timeout_secs: 10}\nlog: {level: warn}\n"),
			 SY_OK);
	ck_assert_int_eq(flag("router", "--request-timeout-secs", "60"), SY_OK);
	ck_assert_int_eq(flag("router", "--port=9090", NULL), SY_OK);
	ck_assert_int_eq(flag("router", "--log-level", "error"), SY_OK);
	ck_assert_int_eq(flag("router", "--tokenizer", "off"), SY_OK);
	ck_assert_int_eq(flag("router", "--access-log", "/tmp/acc"), SY_OK);
	ck_assert_int_eq(cfg.router.request_timeout_secs, 60);
	ck_assert_int_eq(cfg.router.port, 9090);
	ck_assert_int_eq(cfg.log.level, 3);
	ck_assert_int_eq(cfg.router.tokenizer.kind, SY_TOKENIZER_OFF);
	ck_assert_str_eq(cfg.router.access_log, "/tmp/acc");
}
END_TEST

START_TEST(test_flag_errors_name_the_flag)
{
	ck_assert_int_eq(flag("router", "--port", "0"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--port: must be an integer in 1..65535");
	ck_assert_str_eq(err.key, "--port");
	ck_assert_uint_eq(err.line, 0);
	ck_assert_int_eq(flag("router", "--port", "80x"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--port: must be an integer in 1..65535");
	ck_assert_int_eq(flag("router", "--port", NULL), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--port: needs a value");
	ck_assert_int_eq(flag("router", "--tokenizer", "sentencepiece"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--tokenizer: must be one of bytes, hf, off");
	ck_assert_int_eq(flag("router", "--frobnicate", "1"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--frobnicate: unknown flag (no key router.frobnicate)");
	ck_assert_int_eq(flag(NULL, "--router", "x"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--router: router is a section; set its keys in the "
				  "configuration file");
	ck_assert_int_eq(flag("router", "-p", "1"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "-p: not a valid flag name in section router");
	ck_assert_int_eq(cfg.router.port, 30000);
}
END_TEST

START_TEST(test_upstream_client_accepts_lean_only_and_refuses_h2o_with_its_reason)
{
	ck_assert_str_eq(cfg.router.upstream_client, "lean");
	ck_assert_int_eq(flag("router", "--upstream-client", "lean"), SY_OK);
	ck_assert_str_eq(cfg.router.upstream_client, "lean");
	ck_assert_int_eq(flag("router", "--upstream-client", "h2o"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--upstream-client: h2o is no longer offered: h2o 2.2's client "
				  "passes a peer close after a whole chunk on as a complete "
				  "response; use lean (the default)");
	ck_assert_int_eq(flag("router", "--upstream-client", "curl"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--upstream-client: must be lean");
	ck_assert_int_eq(load("router: {upstream_client: lean}\n"), SY_OK);
	ck_assert_str_eq(cfg.router.upstream_client, "lean");
	sy_config_free(&cfg);
	setup();
	ck_load_fails("router: {upstream_client: h2o}\n", SY_ECONFIG,
		      "t.yaml:1:27: router.upstream_client: h2o is no longer offered: h2o 2.2's "
		      "client passes a peer close after a whole chunk on as a complete response; "
		      "use lean (the default)");
}
END_TEST

START_TEST(test_worker_urls_flag_repeats_splits_and_replaces_the_file_fleet)
{
	ck_assert_int_eq(load("workers:\n"
			      "  - {url: http://a:1, role: prefill, bootstrap_port: 8998, model: pd}\n"
			      "  - {url: http://gone:1}\n"
			      "worker_urls: [http://also-gone:1]\n"),
			 SY_OK);
	ck_assert_int_eq(flag("router", "--worker-urls", "HTTP://B:2/, http://c:3"), SY_OK);
	ck_assert_int_eq(flag("router", "--worker-urls", "http://A:1"), SY_OK);
	ck_assert_uint_eq(cfg.n_worker_urls, 3);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_uint_eq(cfg.n_workers, 3);
	ck_assert_str_eq(cfg.workers[0].url, "http://b:2");
	ck_assert_str_eq(cfg.workers[1].url, "http://c:3");
	ck_assert_str_eq(cfg.workers[2].url, "http://a:1");
	/* The file's entry of the same ID lends its settings. */
	ck_assert_int_eq(cfg.workers[2].role, SY_ROLE_PREFILL);
	ck_assert_int_eq(cfg.workers[2].bootstrap_port, 8998);
	ck_assert_int_eq(cfg.workers[0].role, SY_ROLE_PLAIN);
	ck_assert_str_eq(cfg.workers[0].model, "default-model");
	ck_assert_uint_eq(cfg.n_worker_urls, 0);
	/* A second finish keeps the fleet built by the first. */
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_OK);
	ck_assert_uint_eq(cfg.n_workers, 3);
	ck_assert_str_eq(cfg.workers[2].url, "http://a:1");
}
END_TEST

START_TEST(test_worker_urls_flag_rejects_bad_and_duplicate_urls)
{
	ck_assert_int_eq(flag("router", "--worker-urls", "http://a ftp://b"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--worker-urls: \"ftp://b\": must start with http:// or https://");
	ck_assert_int_eq(flag("router", "--worker-urls", " , "), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--worker-urls: needs at least one URL");
	sy_config_free(&cfg);
	sy_config_init_defaults(&cfg);
	ck_assert_int_eq(flag("router", "--worker-urls", "http://a,http://A/"), SY_OK);
	ck_assert_int_eq(sy_config_finish(&cfg, &err), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "--worker-urls: duplicate worker \"http://a\"");
}
END_TEST

/* ---- the schema engine with types switchyard's sections do not use yet -------- */

struct toy {
	bool enabled;
	double ratio;
	int64_t big;
	uint64_t count;
	char *name;
};
static const struct sy_cfg_field toy_fields[] = {
	SY_CFG_BOOL_F(struct toy, enabled, true),
	SY_CFG_DOUBLE_F(struct toy, ratio, 0.0, 1.0, 0.5),
	SY_CFG_INT_F(struct toy, big, -5000000000ll, 5000000000ll, -1, 0),
	SY_CFG_U64_F(struct toy, count, 0, UINT64_MAX, 7),
	SY_CFG_STR_F(struct toy, name, "toy", SY_CFG_REQUIRED, NULL),
};
static const struct sy_cfg_section toy_section =
	SY_CFG_SECTION("toy", struct toy, SY_CFG_NO_OFF, toy_fields);

static int toy_load(struct toy *t, const char *yaml)
{
	return sy_cfg_load_yaml(&toy_section, t, "toy.yaml", yaml, strlen(yaml), &err);
}

START_TEST(test_schema_engine_parses_bool_double_int64_and_u64)
{
	struct toy t;
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(sy_cfg_defaults(&toy_section, &t), SY_OK);
	ck_assert(t.enabled);
	ck_assert_double_eq(t.ratio, 0.5);
	ck_assert_int_eq(t.big, -1);
	ck_assert_uint_eq(t.count, 7);
	ck_assert_int_eq(toy_load(&t, "{enabled: FALSE, ratio: 0.25, big: -4000000000, "
				      "count: 18446744073709551615, name: n}"),
			 SY_OK);
	ck_assert(!t.enabled);
	ck_assert_double_eq(t.ratio, 0.25);
	ck_assert_int_eq(t.big, -4000000000ll);
	ck_assert_uint_eq(t.count, UINT64_MAX);
	ck_assert_str_eq(t.name, "n");

	ck_assert_int_eq(toy_load(&t, "{name: n, enabled: yes}"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "toy.yaml:1:20: enabled: must be true or false");
	ck_assert_int_eq(toy_load(&t, "{name: n, ratio: 1.5}"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "toy.yaml:1:18: ratio: must be a number in 0..1");
	ck_assert_int_eq(toy_load(&t, "{name: n, ratio: .nan}"), SY_ECONFIG);
	ck_assert_int_eq(toy_load(&t, "{name: n, ratio: 0x1p-2}"), SY_ECONFIG);
	ck_assert_int_eq(toy_load(&t, "{name: n, count: 18446744073709551616}"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "toy.yaml:1:18: count: must be an unsigned integer in "
				  "0..18446744073709551615");
	ck_assert_int_eq(toy_load(&t, "{name: n, count: -1}"), SY_ECONFIG);
	ck_assert_int_eq(toy_load(&t, "{ratio: 0.1}"), SY_ECONFIG);
	ck_assert_str_eq(err.msg, "toy.yaml:1:1: name: required key is missing");
	sy_cfg_free(&toy_section, &t);
	ck_assert_ptr_null(t.name);
}
END_TEST

START_TEST(test_every_section_fits_the_duplicate_key_bitmap)
{
	const struct sy_cfg_section *root = sy_config_schema();
	ck_assert_uint_le(root->n_fields, SY_CFG_MAX_FIELDS);
	for (size_t i = 0; i < root->n_fields; i++) {
		const struct sy_cfg_section *sub = root->fields[i].sub;
		if (sub != NULL)
			ck_assert_uint_le(sub->n_fields, SY_CFG_MAX_FIELDS);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("load");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_defaults_match_the_design_sketch);
	tcase_add_test(tc, test_empty_comment_only_and_null_documents_give_all_defaults);
	tcase_add_test(tc, test_full_valid_file_sets_every_key);
	tcase_add_test(tc, test_null_values_reset_optional_keys_and_empty_lists);
	tcase_add_test(tc, test_load_file_reads_the_file_and_names_it_in_messages);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_unknown_key_gives_file_line_col_and_dotted_path);
	tcase_add_test(tc, test_worker_engine_is_auto_sglang_or_vllm);
	tcase_add_test(tc, test_unknown_key_in_second_worker_kv_events_has_indexed_path);
	tcase_add_test(tc, test_out_of_range_values_name_the_range);
	tcase_add_test(tc, test_sequence_where_scalar_expected_is_a_wrong_type);
	tcase_add_test(tc, test_enum_value_outside_the_set_lists_the_names);
	tcase_add_test(tc, test_duplicate_key_names_the_first_line);
	tcase_add_test(tc, test_missing_required_url_points_at_the_entry);
	tcase_add_test(tc, test_yaml_syntax_error_reports_its_line);
	tcase_add_test(tc, test_anchors_aliases_and_tags_are_refused);
	tcase_add_test(tc, test_root_must_be_one_mapping);
	tcase_add_test(tc, test_string_values_must_be_non_empty_without_nul);
	tcase_add_test(tc, test_bad_worker_url_and_zmq_endpoint_give_reasons);
	tcase_add_test(tc, test_oversized_input_is_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("finish");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_duplicate_worker_after_normalisation_names_both_lines);
	tcase_add_test(tc, test_duplicate_between_workers_and_worker_urls_is_refused);
	tcase_add_test(tc, test_worker_model_defaults_to_model_id_after_flags);
	tcase_add_test(tc, test_control_endpoint_derives_from_shm_path_unless_given);
	tcase_add_test(tc, test_shm_path_must_be_absolute_and_fit_the_region_path);
	tcase_add_test(tc, test_state_group_from_file_and_flag_must_be_a_group_name);
	tcase_add_test(tc, test_cross_field_checks_fail_with_key_and_position);
	suite_add_tcase(s, tc);

	tc = tcase_create("flags");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_flag_to_key_follows_the_naming_rule);
	tcase_add_test(tc, test_flag_to_key_uses_the_settled_exceptions_in_any_section);
	tcase_add_test(tc, test_legacy_flag_is_refused_naming_its_replacement);
	tcase_add_test(tc, test_flag_overrides_the_file);
	tcase_add_test(tc, test_flag_errors_name_the_flag);
	tcase_add_test(tc, test_upstream_client_accepts_lean_only_and_refuses_h2o_with_its_reason);
	tcase_add_test(tc, test_worker_urls_flag_repeats_splits_and_replaces_the_file_fleet);
	tcase_add_test(tc, test_worker_urls_flag_rejects_bad_and_duplicate_urls);
	suite_add_tcase(s, tc);

	tc = tcase_create("schema");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_schema_engine_parses_bool_double_int64_and_u64);
	tcase_add_test(tc, test_every_section_fits_the_duplicate_key_bitmap);
	tcase_add_test(tc, test_prediction_keys_default_parse_flag_and_range_check);
	tcase_add_test(tc, test_retry_flags_map_and_contradictions_are_refused);
	tcase_add_test(tc, test_kv_events_fleet_and_worker_switches);
	suite_add_tcase(s, tc);

	return sy_check_run(s);
}
