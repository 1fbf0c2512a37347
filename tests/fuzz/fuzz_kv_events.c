/* fuzz_kv_events.c — fuzz target: bytes → the KV-event and LoadStat
 * decoders (statebus/daemon/decode_kv.c, decode_load.c).
 *
 * The first byte picks the decoder (even: LoadStat, odd: KV batch); the rest
 * is the payload. Properties: never crashes, never reads outside the input
 * (the copy is exact-size for ASan), never allocates more scratch than one
 * hash and one event per input byte (forged lengths must not inflate
 * memory), and every decoded event stays within the caps with hashes inside
 * the scratch. A successful decode is deterministic (decoding twice gives
 * the same events).
 */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "tests/fuzz/fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	uint8_t *buf = malloc(size - 1 ? size - 1 : 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data + 1, size - 1);
	size_t len = size - 1;
	if ((data[0] & 1u) == 0) {
		struct sbd_load_stat s;
		int rc = sbd_load_decode(buf, len, &s);
		if (rc != SY_OK && rc != SY_EMALFORMED && rc != SY_ETRUNC)
			abort();
		if (rc == SY_OK && (s.n_fields < 5 || (s.v3 && s.partial_v3)))
			abort();
		free(buf);
		return 0;
	}
	struct sbd_kv_decoder d = {0};
	struct sbd_kv_batch b;
	int rc = sbd_kv_decode(&d, buf, len, &b);
	if (rc != SY_OK && rc != SY_EMALFORMED && rc != SY_ETRUNC)
		abort();
	if (d.hashes_cap > 64 && d.hashes_cap > 2 * len + 64)
		abort();
	if (d.events_cap > 64 && d.events_cap > 2 * len + 64)
		abort();
	if (rc == SY_OK) {
		size_t total = 0;
		for (uint32_t i = 0; i < b.n_events; i++) {
			const struct sbd_kv_event *e = &b.events[i];
			if (e->type < SBD_EV_STORED || e->type > SBD_EV_CLEARED ||
			    e->n_hashes > SBD_MAX_HASHES_PER_EVENT ||
			    e->n_tokens > SBD_MAX_TOKENS_PER_EVENT)
				abort();
			if (e->n_hashes && (e->hashes < d.hashes || e->hashes + e->n_hashes > d.hashes + d.hashes_cap))
				abort();
			total += e->n_hashes;
		}
		struct sbd_kv_decoder d2 = {0};
		struct sbd_kv_batch b2;
		if (sbd_kv_decode(&d2, buf, len, &b2) != SY_OK || b2.n_events != b.n_events ||
		    (total && memcmp(d.hashes, d2.hashes, total * sizeof(int64_t)) != 0))
			abort();
		sbd_kv_decoder_free(&d2);
	}
	sbd_kv_decoder_free(&d);
	free(buf);
	return 0;
}
