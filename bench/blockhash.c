/* bench/blockhash.c — ns per SGLang block-hash chain (DESIGN.md §8).
 *
 * Hashes a 4,096-token prompt in 16-token pages (and a few neighbours) with
 * sy_blockhash_chain(), ITERS chains per run, best of RUNS runs, one core.
 * Prints one line per case: ns per chain, ns per page, pages, and the budget
 * line of DESIGN.md §8 (≈ 30 µs per 4,096-token chain). Not a test: the
 * figures depend on the machine and its load.
 *
 * Usage: bench_blockhash [iters-per-run [runs]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/blockhash.h"
#include "common/clock.h"

#define N_TOKENS 4096
#define MAX_PAGES N_TOKENS

struct bench_case {
	const char *name;
	uint32_t block_size;
	bool bigram;
	const char *salt;
};

static const struct bench_case cases[] = {
	{"unigram  bs=16", 16, false, NULL},
	{"bigram   bs=16", 16, true, NULL},
	{"unigram  bs=16 salted", 16, false, "tenant-a"},
	{"unigram  bs=64", 64, false, NULL},
	{"bigram   bs=64", 64, true, NULL},
};

static uint32_t tokens[N_TOKENS];
static int64_t ids[MAX_PAGES];

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 300;
	long runs = argc > 2 ? atol(argv[2]) : 9;
	if (iters <= 0 || runs <= 0) {
		fprintf(stderr, "usage: %s [iters-per-run [runs]]\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < N_TOKENS; i++)
		tokens[i] = (uint32_t)(((uint64_t)i * 2654435761u + 12345u) % 151936u);

	printf("# SGLang block-hash chain, %d tokens, best of %ld runs x %ld chains\n",
	       N_TOKENS, runs, iters);
	printf("%-24s %12s %10s %6s\n", "case", "ns/chain", "ns/page", "pages");
	int64_t sink = 0;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const struct bench_case *bc = &cases[c];
		struct sy_blockhash_params p;
		size_t salt_len = 0;
		if (bc->salt)
			for (const char *s = bc->salt; *s; s++)
				salt_len++;
		if (sy_blockhash_params_init(&p, bc->block_size, bc->bigram, bc->salt,
					     salt_len) != 0)
			return 1;
		ssize_t pages = 0;
		uint64_t best = UINT64_MAX;
		for (long r = 0; r < runs; r++) {
			uint64_t t0 = sy_mono_ns();
			for (long i = 0; i < iters; i++) {
				pages = sy_blockhash_chain(tokens, N_TOKENS, &p, ids,
							   MAX_PAGES, NULL);
				sink ^= ids[pages - 1];
			}
			uint64_t dt = sy_mono_ns() - t0;
			if (dt < best)
				best = dt;
		}
		double per_chain = (double)best / (double)iters;
		printf("%-24s %12.0f %10.1f %6zd\n", bc->name, per_chain,
		       per_chain / (double)pages, pages);
	}
	printf("# budget (DESIGN.md §8): ~30000 ns/chain, unigram bs=16 (sink %lld)\n",
	       (long long)(sink & 1));
	return 0;
}
