/* bench/tokenize.c — single-core throughput of the "hf" tokenizer.
 *
 *   bench_tokenize TOKENIZER_DIR CORPUS.json [SECONDS [segment-cache]]
 *
 * Cold by default: the per-thread segment cache (tokenizer.h) is off, since
 * every pass repeats the same documents; "segment-cache" measures the warm
 * case (a conversation whose earlier turns were seen).
 * CORPUS.json is a JSON array of documents (bench/tokenize_corpus.mjs).
 * Every document is encoded (add_special_tokens=false) in a loop for about
 * SECONDS (default 3) after one warm-up pass; prints MB/s, ns/token and the
 * total token count of one pass (bench/tokenize.sh compares it with HF's).
 * Times are CPU seconds of the thread (CLOCK_THREAD_CPUTIME_ID). Run
 * pinned: taskset -c 1. The per-thread BPE word cache is warm after the
 * first pass, as it is in a long-running router.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/tokenizer/tokenizer.h"

/* CPU time of this thread: the machine is shared, so wall time would count
 * other processes' turns on the core. */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_tokenize TOKENIZER_DIR CORPUS.json [SECONDS]\n");
		return 2;
	}
	double secs = argc > 3 ? atof(argv[3]) : 3.0;
	struct sy_tokenizer *tok;
	char err[512];
	double t0 = now();
	bool warm = argc > 4 && strcmp(argv[4], "segment-cache") == 0;
	if (sy_tokenizer_open_ex("hf", argv[1], warm ? 0 : SY_TOKENIZER_NO_SEGMENT_CACHE, &tok,
				 err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	double t_open = now() - t0;
	json_error_t jerr;
	json_t *docs = json_load_file(argv[2], JSON_ALLOW_NUL, &jerr);
	if (!json_is_array(docs)) {
		fprintf(stderr, "%s: %s\n", argv[2], jerr.text);
		return 1;
	}
	size_t n = json_array_size(docs), bytes = 0, tokens = 0;
	struct sy_tokens ids = {0};
	for (size_t i = 0; i < n; i++) { /* warm-up pass, counts */
		json_t *d = json_array_get(docs, i);
		sy_tokens_reset(&ids);
		if (sy_tokenizer_encode_text(tok, json_string_value(d), json_string_length(d), &ids))
			return 1;
		bytes += json_string_length(d);
		tokens += ids.len;
	}
	size_t passes = 0;
	double start = now(), el;
	do {
		for (size_t i = 0; i < n; i++) {
			json_t *d = json_array_get(docs, i);
			sy_tokens_reset(&ids);
			sy_tokenizer_encode_text(tok, json_string_value(d), json_string_length(d), &ids);
		}
		passes++;
		el = now() - start;
	} while (el < secs);
	double mbs = (double)bytes * (double)passes / el / 1e6;
	double ns_tok = el * 1e9 / ((double)tokens * (double)passes);
	printf("switchyard hf%s: %.1f MB/s, %.1f ns/token (%zu docs, %zu bytes, %zu tokens/pass, "
	       "%zu passes; open %.2f s)\n",
	       warm ? " (segment cache)" : "", mbs, ns_tok, n, bytes, tokens, passes, t_open);
	sy_tokens_free(&ids);
	json_decref(docs);
	sy_tokenizer_close(tok);
	return 0;
}
