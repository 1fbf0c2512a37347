/* index_probe — test-only reader of the radix index for the statebus
 * integration test (until `syctl match` exists it prints the same shape):
 *
 *   index_probe --shm PATH HASH[,HASH...]
 *   → {"blocks": N, "matches": [{"worker": URL, "dp_rank": R, "depth": D}, ...],
 *      "nodes": live index nodes}
 * Attaches read-only (a tool process slot), never writes the index.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statebus.h"

int main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "--shm") != 0) {
		fprintf(stderr, "usage: index_probe --shm PATH HASH[,HASH...]\n");
		return 2;
	}
	int64_t hashes[256];
	size_t n = 0;
	for (char *p = argv[3]; *p && n < 256;) {
		char *end;
		hashes[n++] = strtoll(p, &end, 10);
		p = *end == ',' ? end + 1 : end;
		if (end == p && *p)
			return 2;
	}
	struct statebus_region *r;
	char err[256];
	if (statebus_region_open(argv[2], NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)) != SY_OK) {
		fprintf(stderr, "index_probe: %s\n", err);
		return 1;
	}
	uint32_t slot;
	statebus_proc_claim(r, STATEBUS_PROC_TOOL, &slot);
	struct statebus_index_match m[64];
	int k = statebus_index_match(r, hashes, n, m, 64);
	struct statebus_index_stats st;
	statebus_index_stats(r, &st);
	printf("{\"blocks\": %zu, \"nodes\": %u, \"matches\": [", n, st.nodes);
	for (int i = 0; i < k; i++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, m[i].worker, &w) != SY_OK)
			snprintf(w.id, sizeof(w.id), "slot-%u", m[i].worker);
		printf("%s{\"worker\": \"%s\", \"dp_rank\": %u, \"depth\": %u, \"tiers\": %u}",
		       i ? ", " : "", w.id, m[i].rank, m[i].depth, m[i].tiers);
	}
	printf("]}\n");
	statebus_region_close(r);
	return k < 0 ? 1 : 0;
}
