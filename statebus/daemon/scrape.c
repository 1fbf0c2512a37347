/* scrape.c — vLLM's Prometheus /metrics → scraped load records (ingest.h).
 *
 * The text exposition format, line by line: `# ...` comments are skipped;
 * a sample is `name{label="v",...} value [timestamp]`. Only the few vllm:
 * names below are read; every other line is skipped without parsing its
 * labels. A wanted sample whose value does not parse is counted as a bad
 * line. Work is linear in the body; nothing is allocated.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "ingest.h"
#include "statebus-t.h"

enum { M_RUNNING, M_WAITING, M_USAGE, M_GPU_USAGE, M_PROMPT, M_GENERATION, M_CACHE_INFO, M_N };

static const char *const names[M_N] = {
	"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
	"vllm:gpu_cache_usage_perc", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	"vllm:cache_config_info",
};

/* Value of label `key` in the label set [p, end) into out[cap]; false when
 * absent. Escapes (\" \\ \n) are kept as written: the labels read here are
 * numbers. */
static bool label(const char *p, const char *end, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	while (p < end) {
		while (p < end && (*p == ' ' || *p == ','))
			p++;
		const char *k = p;
		while (p < end && *p != '=')
			p++;
		if (p + 1 >= end || p[1] != '"')
			return false;
		bool match = (size_t)(p - k) == kl && memcmp(k, key, kl) == 0;
		p += 2;
		const char *v = p;
		while (p < end && *p != '"')
			p += *p == '\\' && p + 1 < end ? 2 : 1;
		if (p >= end)
			return false;
		if (match) {
			size_t n = (size_t)(p - v);
			if (n >= cap)
				return false;
			memcpy(out, v, n);
			out[n] = '\0';
			return true;
		}
		p++;
	}
	return false;
}

int sbd_vllm_metrics_parse(const char *body, size_t len, struct sbd_vllm_metrics *out)
{
	memset(out, 0, sizeof(*out));
	bool any = false;
	const char *p = body, *end = body + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *line = p;
		p = nl ? nl + 1 : end;
		if (le == line || *line == '#')
			continue;
		if ((size_t)(le - line) < 10 || memcmp(line, "vllm:", 5) != 0)
			continue;
		int m = -1;
		size_t nlen = 0;
		for (int i = 0; i < M_N; i++) {
			if (line[5] != names[i][5])
				continue; /* cheap reject: the first character after "vllm:" */
			size_t l = strlen(names[i]);
			if ((size_t)(le - line) > l && memcmp(line, names[i], l) == 0 &&
			    (line[l] == '{' || line[l] == ' ')) {
				m = i;
				nlen = l;
				break;
			}
		}
		if (m < 0)
			continue;
		const char *q = line + nlen, *lb = NULL, *lend = NULL;
		if (*q == '{') {
			lb = q + 1;
			lend = memchr(lb, '}', (size_t)(le - lb));
			if (lend == NULL) {
				out->bad_lines++;
				continue;
			}
			q = lend + 1;
		}
		char num[64];
		while (q < le && *q == ' ')
			q++;
		size_t vl = 0;
		while (q + vl < le && q[vl] != ' ' && vl < sizeof(num) - 1)
			vl++;
		memcpy(num, q, vl);
		num[vl] = '\0';
		char *e;
		double v = strtod(num, &e);
		if (vl == 0 || *e != '\0' || !isfinite(v)) {
			out->bad_lines++;
			continue;
		}
		if (m == M_CACHE_INFO) {
			char b[32];
			if (lb && label(lb, lend, "num_gpu_blocks", b, sizeof(b)))
				out->num_gpu_blocks = strtoull(b, NULL, 10);
			if (lb && label(lb, lend, "block_size", b, sizeof(b)))
				out->block_size = (uint32_t)strtoul(b, NULL, 10);
			continue;
		}
		uint32_t k = 0;
		char eng[16];
		if (lb && label(lb, lend, "engine", eng, sizeof(eng))) {
			char *ee;
			unsigned long r = strtoul(eng, &ee, 10);
			if (*ee != '\0' || r >= SBD_SCRAPE_MAX_RANKS) {
				out->bad_lines++;
				continue;
			}
			k = (uint32_t)r;
		}
		if (k + 1 > out->n_ranks)
			out->n_ranks = k + 1;
		typeof(out->rank[0]) *rk = &out->rank[k];
		switch (m) {
		case M_RUNNING: rk->running += v; rk->has_running = any = true; break;
		case M_WAITING: rk->waiting += v; rk->has_waiting = any = true; break;
		case M_USAGE: rk->usage += v; rk->has_usage = true; break;
		case M_GPU_USAGE: rk->gpu_usage += v; rk->has_gpu_usage = true; break;
		case M_PROMPT: rk->prompt += v; rk->has_prompt = true; break;
		case M_GENERATION: rk->generation += v; rk->has_generation = true; break;
		}
	}
	/* kv_cache_usage_perc (newer) wins over gpu_cache_usage_perc (older) */
	for (uint32_t k = 0; k < out->n_ranks; k++)
		if (!out->rank[k].has_usage && out->rank[k].has_gpu_usage) {
			out->rank[k].usage = out->rank[k].gpu_usage;
			out->rank[k].has_usage = true;
		}
	return any ? SY_OK : SY_EMALFORMED;
}

static uint32_t sat32d(double v)
{
	return v <= 0 ? 0 : v >= 4294967295.0 ? UINT32_MAX : (uint32_t)llround(v);
}

bool sbd_vllm_metrics_report(const struct sbd_vllm_metrics *m, uint32_t k, uint64_t now_ns,
			     struct statebus_load_report *out)
{
	memset(out, 0, sizeof(*out));
	if (k >= m->n_ranks || !m->rank[k].has_running || !m->rank[k].has_waiting)
		return false;
	const typeof(m->rank[0]) *rk = &m->rank[k];
	out->flags = STATEBUS_LOAD_HAS_REPORT | STATEBUS_LOAD_SCRAPED;
	out->num_running_reqs = sat32d(rk->running);
	out->num_waiting_reqs = sat32d(rk->waiting);
	double usage = rk->has_usage ? fmin(fmax(rk->usage, 0), 1) : 0;
	out->scraped.kv_usage_ppm = (uint32_t)llround(usage * 1e6);
	out->scraped.prompt_tokens = (uint32_t)(uint64_t)fmod(fmax(rk->prompt, 0), 4294967296.0);
	out->scraped.generation_tokens =
		(uint32_t)(uint64_t)fmod(fmax(rk->generation, 0), 4294967296.0);
	double cap = (double)m->num_gpu_blocks * m->block_size;
	if (cap > 0 && rk->has_usage) {
		out->max_total_num_tokens = sat32d(cap);
		out->num_tokens = sat32d(usage * cap);
	}
	out->recv_mono_ns = now_ns;
	return true;
}
