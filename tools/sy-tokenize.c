/* sy-tokenize — the switchyard tokenizer from the command line, and the
 * driver of the oracle tests (tests/tokenizer/).
 *
 *   sy-tokenize [--fallback] DIR encode    < text      ids of the text (JSON array)
 *   sy-tokenize [--fallback] DIR prompt    < text      with the post-processor's specials
 *   sy-tokenize [--fallback] DIR chat      < request   {"text", "tokens", "count"}
 *   sy-tokenize [--fallback] DIR decode ID...          the decoded text
 *   sy-tokenize [--fallback] DIR check GOLDEN.json     compare with goldens
 *
 * DIR holds tokenizer.json and tokenizer_config.json (kind "hf"); DIR
 * "bytes" uses the bytes kind. GOLDEN.json: {"cases": [{"name", "kind":
 * "text"|"prompt"|"chat", "text" | "request", "ids": [...], "rendered"}]};
 * a chat case with "expect_error" (the template raised) must fail to render.
 * check runs every case twice (the second time from the per-thread caches),
 * prints every mismatch (first differing position with context) and a
 * summary; exit 0 only when every case matches both times.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/chat-request.h"
#include "common/tokenizer/tokenizer.h"

static char *read_all(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	while (b) {
		size_t r = fread(b + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		char *nb = realloc(b, cap * 2);
		if (!nb) {
			free(b);
			return NULL;
		}
		b = nb;
		cap *= 2;
	}
	*len = n;
	return b;
}

static void print_ids(const struct sy_tokens *t)
{
	putchar('[');
	for (size_t i = 0; i < t->len; i++)
		printf(i ? ",%u" : "%u", t->ids[i]);
	putchar(']');
}

static int chat_encode(struct sy_tokenizer *tok, const char *body, size_t len,
		       struct sy_textbuf *text, struct sy_tokens *ids, char *err, size_t errcap)
{
	struct sy_chat_request req;
	int rc = sy_chat_request_parse(body, len, &req, err, errcap);
	if (rc)
		return rc;
	rc = sy_tokenizer_render_chat_ex(tok, req.msgs, req.n, &req.opts, text);
	if (rc == SY_OK)
		rc = sy_tokenizer_encode_text(tok, text->data, text->len, ids);
	sy_chat_request_free(&req);
	return rc;
}

static void show_diff(const char *name, const uint32_t *got, size_t ng, json_t *want)
{
	size_t nw = json_array_size(want), i = 0;
	while (i < ng && i < nw && got[i] == (uint32_t)json_integer_value(json_array_get(want, i)))
		i++;
	printf("MISMATCH %s: ids differ at %zu (got %zu ids, want %zu)\n  got :", name, i, ng, nw);
	for (size_t k = i > 3 ? i - 3 : 0; k < ng && k < i + 5; k++)
		printf(" %u", got[k]);
	printf("\n  want:");
	for (size_t k = i > 3 ? i - 3 : 0; k < nw && k < i + 5; k++)
		printf(" %lld", (long long)json_integer_value(json_array_get(want, k)));
	printf("\n");
}

static int check(struct sy_tokenizer *tok, const char *golden)
{
	json_error_t jerr;
	json_t *root = json_load_file(golden, JSON_ALLOW_NUL, &jerr);
	if (!root) {
		fprintf(stderr, "%s:%d: %s\n", golden, jerr.line, jerr.text);
		return 2;
	}
	json_t *cases = json_object_get(root, "cases"), *c;
	size_t i, ok = 0, bad = 0, text_ok = 0, text_cases = 0, bytes = 0, ntok = 0;
	struct sy_tokens ids = {0};
	struct sy_textbuf text = {0};
	/* two passes: the second one runs from the per-thread caches (word,
	 * long-word and segment caches) and must give the same ids */
	for (int pass = 0; pass < 2; pass++)
	json_array_foreach(cases, i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *kind = json_string_value(json_object_get(c, "kind"));
		json_t *want = json_object_get(c, "ids");
		sy_tokens_reset(&ids);
		sy_textbuf_reset(&text);
		int rc;
		char err[256] = "";
		if (strcmp(kind, "chat") == 0) {
			char *body = json_dumps(json_object_get(c, "request"), JSON_COMPACT);
			rc = chat_encode(tok, body, strlen(body), &text, &ids, err, sizeof err);
			free(body);
			json_t *r = json_object_get(c, "rendered");
			text_cases++;
			json_t *xerr = json_object_get(c, "expect_error");
			if (xerr) { /* the template raised: we must refuse too */
				if (rc != SY_OK) {
					text_ok++;
					ok++;
				} else {
					printf("MISMATCH %s: rendered, but the template raises: %s\n",
					       name, json_string_value(xerr));
					bad++;
				}
				continue;
			}
			if (rc == SY_OK && json_string_length(r) == text.len &&
			    memcmp(json_string_value(r), text.data, text.len) == 0) {
				text_ok++;
			} else if (rc == SY_OK) {
				size_t k = 0, rl = json_string_length(r);
				while (k < rl && k < text.len && json_string_value(r)[k] == text.data[k])
					k++;
				printf("MISMATCH %s: rendered text differs at byte %zu\n  got : %.80s\n  want: %.80s\n",
				       name, k, text.data + (k > 20 ? k - 20 : 0),
				       json_string_value(r) + (k > 20 ? k - 20 : 0));
			}
		} else {
			json_t *t = json_object_get(c, "text");
			const char *s = json_string_value(t);
			size_t n = json_string_length(t);
			bytes += n;
			rc = strcmp(kind, "prompt") == 0 ? sy_tokenizer_encode_prompt(tok, s, n, &ids)
							 : sy_tokenizer_encode_text(tok, s, n, &ids);
		}
		if (rc) {
			printf("ERROR %s: %s %s\n", name, sy_strerror(rc), err);
			bad++;
			continue;
		}
		ntok += ids.len;
		bool same = ids.len == json_array_size(want);
		for (size_t k = 0; same && k < ids.len; k++)
			same = ids.ids[k] == (uint32_t)json_integer_value(json_array_get(want, k));
		if (same) {
			ok++;
		} else {
			bad++;
			show_diff(name, ids.ids, ids.len, want);
		}
	}
	printf("%s: %zu/%zu cases equal (token ids; %zu text bytes, %zu tokens); "
	       "rendered chat text equal in %zu/%zu (each case twice: cold, then cached)\n",
	       golden, ok / 2, (ok + bad) / 2, bytes / 2, ntok / 2, text_ok / 2, text_cases / 2);
	sy_tokens_free(&ids);
	sy_textbuf_free(&text);
	json_decref(root);
	return bad == 0 && text_ok == text_cases ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned flags = 0;
	int a = 1;
	if (a < argc && strcmp(argv[a], "--fallback") == 0) {
		flags |= SY_TOKENIZER_CHAT_TEMPLATE_FALLBACK;
		a++;
	}
	if (argc - a < 2) {
		fprintf(stderr, "usage: sy-tokenize [--fallback] DIR encode|prompt|chat|decode|check ...\n");
		return 2;
	}
	const char *dir = argv[a], *mode = argv[a + 1];
	struct sy_tokenizer *tok;
	char err[512];
	bool bytes = strcmp(dir, "bytes") == 0;
	int rc = sy_tokenizer_open_ex(bytes ? "bytes" : "hf", bytes ? NULL : dir, flags, &tok,
				      err, sizeof err);
	if (rc) {
		fprintf(stderr, "sy-tokenize: %s (%s)\n", err, sy_strerror(rc));
		return 2;
	}
	struct sy_tokens ids = {0};
	struct sy_textbuf text = {0};
	int status = 0;
	if (strcmp(mode, "check") == 0 && argc - a >= 3) {
		status = check(tok, argv[a + 2]);
	} else if (strcmp(mode, "decode") == 0) {
		for (int i = a + 2; i < argc; i++) {
			uint32_t id = (uint32_t)strtoul(argv[i], NULL, 10);
			if (sy_tokens_append(&ids, &id, 1))
				return 2;
		}
		rc = sy_tokenizer_decode(tok, ids.ids, ids.len, &text);
		if (rc == SY_OK)
			fwrite(text.data, 1, text.len, stdout);
	} else {
		size_t len;
		char *in = read_all(stdin, &len);
		if (!in)
			return 2;
		if (strcmp(mode, "encode") == 0 || strcmp(mode, "prompt") == 0) {
			rc = mode[0] == 'e' ? sy_tokenizer_encode_text(tok, in, len, &ids)
					    : sy_tokenizer_encode_prompt(tok, in, len, &ids);
			if (rc == SY_OK) {
				print_ids(&ids);
				putchar('\n');
			}
		} else if (strcmp(mode, "chat") == 0) {
			rc = chat_encode(tok, in, len, &text, &ids, err, sizeof err);
			if (rc == SY_OK) {
				json_t *s = json_stringn(text.data, text.len);
				char *js = json_dumps(s, JSON_ENCODE_ANY);
				printf("{\"text\":%s,\"tokens\":", js);
				print_ids(&ids);
				printf(",\"count\":%zu}\n", ids.len);
				free(js);
				json_decref(s);
			}
		} else {
			fprintf(stderr, "sy-tokenize: unknown mode %s\n", mode);
			status = 2;
		}
		free(in);
	}
	if (rc) {
		fprintf(stderr, "sy-tokenize: %s %s\n", sy_strerror(rc), err);
		status = 1;
	}
	sy_tokens_free(&ids);
	sy_textbuf_free(&text);
	sy_tokenizer_close(tok);
	return status;
}
