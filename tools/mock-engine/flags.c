/* flags.c — getopt_long parsing with strict number checks. */
#include "tools/mock-engine/flags.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"

static const char usage[] =
	"usage: switchyard-mock-engine [flags]\n"
	"  --host ADDR                  bind address for HTTP, ZMQ, bootstrap (127.0.0.1)\n"
	"  --port N                     HTTP port (30000)\n"
	"  --model NAME                 served model name (mock-model)\n"
	"  --kv-port N                  KV-event PUB base port, rank r = N + r (0 = off)\n"
	"  --load-port N                LoadStat PUB base port (0 = off)\n"
	"  --replay-port N              replay ROUTER base port (0 = off)\n"
	"  --kv-topic S                 KV-event topic (\"\")\n"
	"  --event-encoding array|map   event encoding (array)\n"
	"  --replay-frames 3|4          replay answer form (4)\n"
	"  --replay-buffer-steps N      batches kept for replay (10000)\n"
	"  --medium GPU|none            medium on events (GPU)\n"
	"  --dp-size N                  attention DP ranks (1)\n"
	"  --block-size N               tokens per page (16)\n"
	"  --cache-tokens N             KV capacity per rank, tokens (65536)\n"
	"  --tokenizer bytes            tokenizer (bytes); --tokenizer-path DIR\n"
	"  --max-running N              running requests per rank; others queue (64)\n"
	"  --prefill-us-per-token N     prefill cost per uncached token, µs (0)\n"
	"  --decode-us-per-token N      decode cost per output token, µs (0)\n"
	"  --default-max-tokens N       output length when the request gives none (16)\n"
	"  --disaggregation-mode null|prefill|decode   PD role (null)\n"
	"  --disaggregation-bootstrap-port N           prefill: bootstrap listener (8998)\n"
	"  --pd-timeout-ms N            decode: wait for the prefill (5000)\n"
	"  --speculative-algorithm S    e.g. EAGLE (EAGLE, EAGLE3, FROZEN_KV_MTP → bigram pages)\n"
	"  --fail-rate F                fraction of requests answered 500 (0)\n"
	"  --stall-ms N                 delay before a request is queued (0)\n"
	"  --drop-after-tokens N        cut the connection after N streamed tokens (0 = off)\n"
	"  --skip-seq-every N           leave every N-th KV batch off the PUB (0 = off)\n"
	"  --kv-event-delay-ms N        publish each KV batch N ms after its step (0)\n"
	"  --seed N                     seed of the fault RNG\n"
	"  --request-log FILE           append a line per inference request as it arrives\n"
	"                               (wall time, HTTP port, x-request-id, path)\n"
	"  --load-interval-ms N         idle LoadStat resend interval (1000)\n"
	"  --max-body-bytes N           larger request bodies get 413 (67108864)\n"
	"  --engine sglang|vllm         engine to emulate (sglang); vllm: vLLM's HTTP API,\n"
	"                               /metrics, KV events (map form, 32-byte ids), no LoadStat\n"
	"  --lora-modules A[,B...]      vllm: LoRA adapter names served (at most 8)\n"
	"  --log-level L                debug|info|warn|error (info)\n"
	"  -h, --help                   this text;  -V, --version  the version\n";

static int num(const char *name, const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "--%s: expected an integer in [%lld, %lld], got '%s'\n", name, lo, hi, s);
		return SY_EINVAL;
	}
	*out = v;
	return 0;
}

enum {
	F_HOST = 256, F_PORT, F_MODEL, F_KV, F_LOAD, F_REPLAY, F_TOPIC, F_ENC, F_RFRAMES, F_RSTEPS,
	F_MEDIUM, F_DP, F_BS, F_CACHE, F_TOK, F_TOKPATH, F_MAXRUN, F_PREFILL, F_DECODE, F_MAXTOK,
	F_PD, F_BPORT, F_PDTO, F_SPEC, F_FAIL, F_STALL, F_DROP, F_SKIP, F_SEED, F_LOADINT, F_MAXBODY, F_LOG,
	F_ENGINE, F_LORA, F_REQLOG, F_HELP, F_VERSION, F_KVDELAY,
};

static const struct option opts[] = {
	{"host", 1, 0, F_HOST}, {"port", 1, 0, F_PORT}, {"model", 1, 0, F_MODEL},
	{"served-model-name", 1, 0, F_MODEL}, {"kv-port", 1, 0, F_KV}, {"load-port", 1, 0, F_LOAD},
	{"replay-port", 1, 0, F_REPLAY}, {"kv-topic", 1, 0, F_TOPIC}, {"event-encoding", 1, 0, F_ENC},
	{"replay-frames", 1, 0, F_RFRAMES}, {"replay-buffer-steps", 1, 0, F_RSTEPS},
	{"medium", 1, 0, F_MEDIUM}, {"dp-size", 1, 0, F_DP}, {"block-size", 1, 0, F_BS},
	{"page-size", 1, 0, F_BS}, {"cache-tokens", 1, 0, F_CACHE}, {"tokenizer", 1, 0, F_TOK},
	{"tokenizer-path", 1, 0, F_TOKPATH}, {"max-running", 1, 0, F_MAXRUN},
	{"max-running-requests", 1, 0, F_MAXRUN}, {"prefill-us-per-token", 1, 0, F_PREFILL},
	{"decode-us-per-token", 1, 0, F_DECODE}, {"default-max-tokens", 1, 0, F_MAXTOK},
	{"disaggregation-mode", 1, 0, F_PD}, {"disaggregation-bootstrap-port", 1, 0, F_BPORT},
	{"pd-timeout-ms", 1, 0, F_PDTO}, {"speculative-algorithm", 1, 0, F_SPEC},
	{"fail-rate", 1, 0, F_FAIL}, {"stall-ms", 1, 0, F_STALL},
	{"drop-after-tokens", 1, 0, F_DROP}, {"kv-event-delay-ms", 1, 0, F_KVDELAY}, {"skip-seq-every", 1, 0, F_SKIP}, {"seed", 1, 0, F_SEED},
	{"load-interval-ms", 1, 0, F_LOADINT}, {"max-body-bytes", 1, 0, F_MAXBODY}, {"log-level", 1, 0, F_LOG},
	{"engine", 1, 0, F_ENGINE}, {"lora-modules", 1, 0, F_LORA}, {"request-log", 1, 0, F_REQLOG},
	{"help", 0, 0, F_HELP},
	{"version", 0, 0, F_VERSION}, {0, 0, 0, 0},
};

int mock_flags_parse(struct mock_config *c, int argc, char **argv, const char **log_level)
{
	*c = (struct mock_config){
		.host = "127.0.0.1", .port = 30000, .model = "mock-model", .topic = "",
		.dp_size = 1, .block_size = 16, .cache_tokens = 65536, .encoding = KVEV_ENC_ARRAY,
		.replay_frames = 4, .replay_buffer_steps = 10000, .medium = "GPU",
		.tokenizer = "bytes", .max_running = 64, .default_max_tokens = 16,
		.bootstrap_port = 8998, .pd_timeout_ms = 5000, .load_interval_ms = 1000,
		.max_body_bytes = 64u << 20,
	};
	*log_level = "info";
	long long v;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		const char *a = optarg;
		if (o == 'h')
			o = F_HELP;
		else if (o == 'V')
			o = F_VERSION;
		const char *name = o >= F_HOST && o <= F_VERSION ? opts[0].name : "?";
		for (const struct option *p = opts; p->name; p++)
			if (p->val == o) {
				name = p->name;
				break;
			}
#define NUM(lo, hi)                                     \
	do {                                            \
		if (num(name, a, (lo), (hi), &v))       \
			return SY_EINVAL;               \
	} while (0)
		switch (o) {
		case F_HOST: c->host = a; break;
		case F_PORT: NUM(1, 65535); c->port = (int)v; break;
		case F_MODEL: c->model = a; break;
		case F_KV: NUM(0, 65535); c->kv_port = (int)v; break;
		case F_LOAD: NUM(0, 65535); c->load_port = (int)v; break;
		case F_REPLAY: NUM(0, 65535); c->replay_port = (int)v; break;
		case F_TOPIC: c->topic = a; break;
		case F_ENC:
			if (kvev_encoding_parse(a, &c->encoding)) {
				fprintf(stderr, "--event-encoding: array or map\n");
				return SY_EINVAL;
			}
			break;
		case F_RFRAMES: NUM(3, 4); c->replay_frames = (int)v; break;
		case F_RSTEPS: NUM(1, 10000000); c->replay_buffer_steps = (size_t)v; break;
		case F_MEDIUM: c->medium = strcasecmp(a, "none") == 0 ? NULL : a; break;
		case F_DP: NUM(1, 256); c->dp_size = (int)v; break;
		case F_BS: NUM(1, 65536); c->block_size = (uint32_t)v; break;
		case F_CACHE: NUM(0, 1LL << 40); c->cache_tokens = (size_t)v; break;
		case F_TOK: c->tokenizer = a; break;
		case F_TOKPATH: c->tokenizer_path = a; break;
		case F_MAXRUN: NUM(1, 1000000); c->max_running = (int)v; break;
		case F_PREFILL: NUM(0, 10000000); c->prefill_us = (uint64_t)v; break;
		case F_DECODE: NUM(0, 10000000); c->decode_us = (uint64_t)v; break;
		case F_MAXTOK: NUM(0, 1000000); c->default_max_tokens = (int)v; break;
		case F_PD:
			if (strcasecmp(a, "null") == 0 || strcasecmp(a, "none") == 0)
				c->pd_mode = MOCK_PD_NONE;
			else if (strcasecmp(a, "prefill") == 0)
				c->pd_mode = MOCK_PD_PREFILL;
			else if (strcasecmp(a, "decode") == 0)
				c->pd_mode = MOCK_PD_DECODE;
			else {
				fprintf(stderr, "--disaggregation-mode: null, prefill or decode\n");
				return SY_EINVAL;
			}
			break;
		case F_BPORT: NUM(1, 65535); c->bootstrap_port = (int)v; break;
		case F_PDTO: NUM(1, 3600000); c->pd_timeout_ms = (int)v; break;
		case F_SPEC: c->spec_algo = a; break;
		case F_FAIL: {
			char *end;
			double d = strtod(a, &end);
			if (end == a || *end || !(d >= 0 && d <= 1)) { /* also NaN */
				fprintf(stderr, "--fail-rate: a number in [0, 1]\n");
				return SY_EINVAL;
			}
			c->fail_rate = d;
			break;
		}
		case F_STALL: NUM(0, 3600000); c->stall_ms = (int)v; break;
		case F_DROP: NUM(0, 1000000); c->drop_after_tokens = (int)v; break;
		case F_SKIP: NUM(0, 1000000000); c->skip_seq_every = (unsigned)v; break;
		case F_KVDELAY: NUM(0, 600000); c->kv_event_delay_ms = (int)v; break;
		case F_SEED: NUM(0, INT64_MAX); c->seed = (uint64_t)v; break;
		case F_LOADINT: NUM(10, 60000); c->load_interval_ms = (int)v; break;
		case F_MAXBODY: NUM(1024, 1 << 30); c->max_body_bytes = (size_t)v; break;
		case F_LOG: *log_level = a; break;
		case F_REQLOG: c->request_log = a; break;
		case F_ENGINE:
			if (strcasecmp(a, "sglang") == 0)
				c->engine = MOCK_ENGINE_SGLANG;
			else if (strcasecmp(a, "vllm") == 0)
				c->engine = MOCK_ENGINE_VLLM;
			else {
				fprintf(stderr, "--engine: sglang or vllm\n");
				return SY_EINVAL;
			}
			break;
		case F_LORA: {
			static char names[1024];
			size_t l = strlen(a);
			if (l == 0 || l >= sizeof(names)) {
				fprintf(stderr, "--lora-modules: 1..1023 bytes of names\n");
				return SY_EINVAL;
			}
			memcpy(names, a, l + 1);
			c->n_lora = 0;
			for (char *sv, *t = strtok_r(names, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
				char *eq = strchr(t, '='); /* vLLM's name=path form */
				if (eq)
					*eq = '\0';
				if (c->n_lora == MOCK_MAX_LORA || t[0] == '\0') {
					fprintf(stderr, "--lora-modules: at most %d non-empty names\n",
						MOCK_MAX_LORA);
					return SY_EINVAL;
				}
				c->lora[c->n_lora++] = t;
			}
			break;
		}
		case F_HELP: fputs(usage, stdout); return 1;
		case F_VERSION: printf("switchyard-mock-engine %s\n", SY_VERSION); return 1;
		default: fputs(usage, stderr); return SY_EINVAL;
		}
#undef NUM
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n%s", argv[optind], usage);
		return SY_EINVAL;
	}
	if (c->engine == MOCK_ENGINE_VLLM) {
		/* vLLM: map-form events with bin ids, 3-frame replay answers
		 * ["", seq, payload] ending ["", END_SEQ, ""], no LoadStat */
		c->encoding = KVEV_ENC_VLLM;
		c->replay_frames = 3;
		c->load_port = 0;
	}
	if (c->spec_algo && (strcasecmp(c->spec_algo, "EAGLE") == 0 ||
			     strcasecmp(c->spec_algo, "EAGLE3") == 0 ||
			     strcasecmp(c->spec_algo, "FROZEN_KV_MTP") == 0))
		c->bigram = true;
	return 0;
}
