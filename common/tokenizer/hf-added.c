/* hf-added.c — added tokens (HF tokenizers AddedVocabulary): the text is
 * split at added tokens before normalisation and BPE, matching
 * leftmost-longest as HF's Aho-Corasick (MatchKind::LeftmostLongest) does.
 * Tokens are grouped by first byte and sorted longest first, so the first
 * token that matches at the leftmost candidate position is the answer.
 * Models have tens to hundreds of added tokens sharing a few first bytes
 * ('<'), so a first-byte and a first-two-bytes filter (HTML's "<" is not
 * Llama's "<|") and memcmp are enough.
 */
#include <string.h>

#include "common/tokenizer/hf-internal.h"

bool hf_added_find(const struct hf_added_set *s, const uint8_t *p, size_t n,
		   size_t from, size_t *at, const struct hf_added **tok)
{
	if (s->n == 0)
		return false;
	for (size_t i = from; i < n; i++) {
		if (!s->can_start[p[i]])
			continue;
		if (i + 1 < n && !s->has_len1[p[i]]) { /* second-byte filter ("<" vs "<|") */
			unsigned pb = (unsigned)p[i] << 8 | p[i + 1];
			if (!(s->pair[pb >> 3] & (1u << (pb & 7))))
				continue;
		}
		for (uint32_t k = s->first[p[i]]; k < s->first[p[i] + 1]; k++) {
			const struct hf_added *a = &s->toks[k];
			if (a->len <= n - i && memcmp(p + i, a->content, a->len) == 0) {
				*at = i;
				*tok = a;
				return true;
			}
		}
	}
	return false;
}
