/* hf-internal.h — the "hf" tokenizer's model, shared by its files (internal
 * to common/tokenizer/; callers use tokenizer.h).
 *
 * Source of the format: Hugging Face tokenizers' tokenizer.json (serialised
 * `Tokenizer`: normalizer, pre_tokenizer, model BPE, added_tokens,
 * post_processor, decoder). Only byte-level BPE models are accepted (the
 * family of GPT-2, Llama 3, Qwen 2/3): vocabulary strings are in the GPT-2
 * byte-to-unicode alphabet and are stored here as the raw bytes they stand
 * for, so BPE runs on bytes and decoding is concatenation.
 *
 * Pipeline of one encode (HF order): split the raw text at added tokens
 * (leftmost-longest) → normalise each remaining piece (NFC, ...) → split at
 * normalised added tokens → pre-tokenise (Split regex, ByteLevel) → BPE per
 * pre-token → ids. A model is immutable after load and shared by threads.
 */
#ifndef SY_COMMON_TOKENIZER_HF_INTERNAL_H
#define SY_COMMON_TOKENIZER_HF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tokenizer/tokenizer-impl.h"

#define HF_NO_ID UINT32_MAX

/* ---- vocabulary: id ↔ byte string ---- */

/* Token bytes live in one blob; id i is blob[span[i].off ..][.. span[i].len]
 * (an added token: its content). An id absent from the file has an empty
 * span and flag 0. */
enum {
	HF_TOK_PRESENT = 1,
	HF_TOK_ADDED = 2,
	HF_TOK_SPECIAL = 4,
	HF_TOK_WHOLE = 8, /* BPE of the token's own bytes gives this token back */
};

struct hf_span {
	uint32_t off, len;
};

/* A vocabulary hash slot: the token's first 8 bytes inline (so a lookup of
 * a word of ≤ 8 bytes touches one cache line), a 24-bit hash tag and the
 * length (≤ 255). id HF_NO_ID = empty. */
struct hf_vslot {
	uint64_t head;
	uint32_t id;
	uint32_t tag_len;
};

struct hf_vocab {
	uint32_t n_ids;      /* max id + 1 */
	struct hf_span *span; /* n_ids */
	uint8_t *blob;
	size_t blob_len, blob_cap;
	uint8_t *flags;      /* n_ids HF_TOK_* */
	/* open-addressing hash: bytes → id (model vocab only, not added) */
	struct hf_vslot *slots;
	uint32_t mask;
	uint32_t byte_id[256]; /* id of each single byte */
};

/* Hash of a byte string (slot choice). */
uint64_t hf_hash_bytes(const uint8_t *p, size_t n);

/* Id of bytes p[0..n) in the model vocabulary, or HF_NO_ID. */
uint32_t hf_vocab_find(const struct hf_vocab *v, const uint8_t *p, size_t n);

/* ---- merges: (left id, right id) → (rank, merged id) ---- */

struct hf_merge_slot {
	uint64_t key;   /* left << 32 | right; UINT64_MAX = empty */
	uint32_t rank;
	uint32_t id;
};

struct hf_merges {
	struct hf_merge_slot *slots;
	uint64_t mask;
	uint32_t count;
};

static inline uint64_t hf_pair_key(uint32_t a, uint32_t b)
{
	return (uint64_t)a << 32 | b;
}

static inline const struct hf_merge_slot *hf_merge_find(const struct hf_merges *m,
							 uint32_t a, uint32_t b)
{
	uint64_t key = hf_pair_key(a, b);
	uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 20 & m->mask;
	for (;;) {
		const struct hf_merge_slot *s = &m->slots[i];
		if (s->key == key)
			return s;
		if (s->key == UINT64_MAX)
			return NULL;
		i = (i + 1) & m->mask;
	}
}

/* ---- added tokens ---- */

struct hf_added {
	uint32_t id;
	uint32_t len;
	const uint8_t *content; /* points into the vocab blob */
};

/* A set of added tokens matched leftmost-longest on raw bytes. */
struct hf_added_set {
	struct hf_added *toks;  /* sorted by first byte, then length descending */
	uint32_t n;
	uint32_t first[257];    /* toks index range per first byte: first[b]..first[b+1] */
	bool can_start[256];
	bool has_len1[256];     /* a one-byte token starts with this byte */
	uint8_t pair[8192];     /* bit (b0 << 8 | b1): some token starts with b0 b1 */
};

/* Finds the leftmost-longest added token in p[0..n) at or after `from`.
 * Returns true and sets *at, *tok; false when none. */
bool hf_added_find(const struct hf_added_set *s, const uint8_t *p, size_t n,
		   size_t from, size_t *at, const struct hf_added **tok);

/* ---- normaliser ---- */

enum hf_norm_kind { HF_NORM_NONE = 0, HF_NORM_NFC, HF_NORM_NFD, HF_NORM_NFKC, HF_NORM_NFKD };

/* ---- pre-tokeniser ---- */

enum hf_split_kind {
	HF_SPLIT_SCAN_LLAMA3, /* hand-written scanner, \p{N}{1,3} (Llama 3) */
	HF_SPLIT_SCAN_QWEN2,  /* hand-written scanner, \p{N} (Qwen 2/3) */
	HF_SPLIT_ONIG,        /* general path: Oniguruma */
};

enum hf_split_behavior { HF_ISOLATED, HF_REMOVED };

struct hf_pretok_step {
	enum hf_split_kind kind;
	enum hf_split_behavior behavior;
	void *regex; /* OnigRegex for HF_SPLIT_ONIG (also compiled for scanners, for tests) */
};

#define HF_MAX_PRETOK_STEPS 4

/* ---- post-processor (add_special_tokens) ---- */

#define HF_MAX_TEMPLATE_IDS 8
struct hf_post {
	uint32_t prefix[HF_MAX_TEMPLATE_IDS], n_prefix; /* ids before sequence A */
	uint32_t suffix[HF_MAX_TEMPLATE_IDS], n_suffix; /* ids after sequence A */
};

/* ---- the model ---- */

struct hf_model {
	struct hf_vocab vocab;
	struct hf_merges merges;
	bool ignore_merges;         /* BPE: a pre-token in the vocab is one token */
	enum hf_norm_kind norm;
	struct hf_pretok_step steps[HF_MAX_PRETOK_STEPS];
	unsigned n_steps;
	struct hf_added_set added_raw;  /* normalized: false */
	struct hf_added_set added_norm; /* normalized: true */
	struct hf_added *added_store;
	struct hf_post post;
	uint64_t serial;            /* unique per load: keys thread-local caches */
	bool segment_cache;         /* reuse ids of repeated segments (hf.c) */
};

/* Loads tokenizer.json at `path` into m (zeroed by the caller). On failure
 * writes a reason naming the file and component to errbuf and returns
 * SY_EUNSUPPORTED (component not supported), SY_EMALFORMED, SY_EIO or
 * SY_ENOMEM; m is then released. */
int hf_model_load(struct hf_model *m, const char *path, char *errbuf, size_t errcap);
void hf_model_free(struct hf_model *m);

/* Appends the ids of text (no added-token handling, no normalisation: one
 * piece of the pipeline) to out. SY_EMALFORMED for invalid UTF-8. */
int hf_encode_piece(const struct hf_model *m, const uint8_t *p, size_t n,
		    struct sy_tokens *out);

/* Appends the ids of the whole pipeline (added tokens, normaliser,
 * pre-tokeniser, BPE) without post-processor. */
int hf_encode_text(const struct hf_model *m, const uint8_t *p, size_t n,
		   struct sy_tokens *out);

/* BPE merges only (no shortcuts, no cache), appended to out. */
int hf_bpe_merge(const struct hf_model *m, const uint8_t *p, size_t n,
		 struct sy_tokens *out);
/* At load: flags HF_TOK_WHOLE on every token whose own BPE is itself. */
int hf_bpe_mark_whole(struct hf_model *m);

/* BPE of one pre-token (raw bytes), appended to out. */
int hf_bpe_word(const struct hf_model *m, const uint8_t *p, size_t n,
		struct sy_tokens *out);

/* Normalises p[0..n) into a malloc'd buffer (*outp, *outn); the caller frees
 * *outp. When nothing changes, *outp is NULL (use the input). SY_EMALFORMED
 * for invalid UTF-8, SY_ENOMEM. */
int hf_normalize(enum hf_norm_kind k, const uint8_t *p, size_t n,
		 uint8_t **outp, size_t *outn);

/* Pre-tokenises p[0..n) with steps[from..] and calls fn for each piece. */
typedef int (*hf_piece_fn)(void *ctx, const uint8_t *p, size_t n);
int hf_pretokenize(const struct hf_model *m, unsigned from, const uint8_t *p,
		   size_t n, hf_piece_fn fn, void *ctx);

/* Compiles `pattern` (Oniguruma, UTF-8, the default syntax as HF's onig crate
 * uses; literal when `literal`) into *out. */
int hf_regex_compile(const char *pattern, size_t len, bool literal, void **out,
		     char *errbuf, size_t errcap);
void hf_regex_free(void *re);

/* Classifies which hand-written scanner implements `pattern`, if any:
 * returns HF_SPLIT_SCAN_* or HF_SPLIT_ONIG. */
enum hf_split_kind hf_scan_kind_for(const char *pattern);

/* End (byte offset) of the scanner's match at pos (< n) of valid UTF-8
 * p[0..n). The known patterns match at every position, so the pieces are
 * contiguous. */
size_t hf_scan_next(enum hf_split_kind kind, const uint8_t *p, size_t n, size_t pos);

/* Splits with an Oniguruma regex (Isolated or Removed), calling fn per piece. */
int hf_onig_split(void *regex, enum hf_split_behavior b, const uint8_t *p, size_t n,
		  hf_piece_fn fn, void *ctx);

/* Unicode classes as Oniguruma sees them (\p{L}, \p{N}, \s). */
enum hf_uclass { HF_UC_OTHER = 0, HF_UC_L = 1, HF_UC_N = 2, HF_UC_S = 3, HF_UC_NL = 4 /* \r \n */ };
/* flag in the table beside the class: NFC may change or combine this code
 * point (hf-uclass.c); the class is the low 3 bits */
#define HF_UC_NFC_UNSAFE 8
void hf_uclass_init(void); /* idempotent, thread-safe */
extern const uint16_t *hf_uclass_stage1; /* [0x1100] block index */
extern const uint8_t *hf_uclass_stage2; /* [blocks * 256] classes */
static inline enum hf_uclass hf_uclass_of(uint32_t cp)
{
	return (enum hf_uclass)(hf_uclass_stage2[(size_t)hf_uclass_stage1[cp >> 8] << 8 | (cp & 255)] & 7);
}

/* Validates UTF-8 (no overlongs, surrogates, > U+10FFFF). */
bool hf_utf8_valid(const uint8_t *p, size_t n);
/* Same, and sets *nfc_unsafe when some code point is not NFC-inert (so
 * NFC must run); a text of inert code points is its own NFC. */
bool hf_utf8_check(const uint8_t *p, size_t n, bool *nfc_unsafe);

/* GPT-2 byte-level alphabet: byte → code point, and back (-1 if none). */
uint32_t hf_byte_to_cp(uint8_t b);
int hf_cp_to_byte(uint32_t cp);

#endif
