/* chat-json.c — the JSON pieces of chat templates: `tojson` as transformers
 * defines it (Python json.dumps(ensure_ascii=False), default separators
 * ", " / ": ", insertion order — jansson keeps it), the tool function model
 * SGLang hands to templates, tool-call arguments after SGLang's json.loads,
 * and Python's str.strip family.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/tokenizer/chat-template.h"

#include "common/lit.h"

static int put(struct sy_textbuf *o, const char *p, size_t n)
{
	return sy_textbuf_append(o, p, n);
}

static int put_string(const char *s, size_t n, struct sy_textbuf *o)
{
	int rc = put(o, SY_LIT("\""));
	size_t start = 0;
	for (size_t i = 0; rc == SY_OK && i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char ubuf[8];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			if (c < 0x20) {
				snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
				esc = ubuf;
			}
		}
		if (!esc)
			continue;
		if ((rc = put(o, s + start, i - start)) == SY_OK)
			rc = put(o, esc, strlen(esc));
		start = i + 1;
	}
	if (rc == SY_OK)
		rc = put(o, s + start, n - start);
	if (rc == SY_OK)
		rc = put(o, SY_LIT("\""));
	return rc;
}

/* Python float repr: shortest round-trip digits; fixed notation when the
 * decimal exponent is in [-4, 16), with ".0" for integral values. */
static int put_real(double d, struct sy_textbuf *o)
{
	char buf[64];
	int p;
	for (p = 1; p <= 17; p++) {
		snprintf(buf, sizeof buf, "%.*e", p - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	/* buf = [-]D.DDDe±XX with p significant digits */
	char digits[32];
	size_t nd = 0;
	const char *q = buf;
	bool neg = *q == '-';
	if (neg)
		q++;
	for (; *q && *q != 'e'; q++)
		if (*q != '.')
			digits[nd++] = *q;
	int exp = atoi(q + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	char outb[64];
	size_t k = 0;
	if (neg)
		outb[k++] = '-';
	if (exp >= -4 && exp < 16) {
		if (exp < 0) {
			outb[k++] = '0';
			outb[k++] = '.';
			for (int z = -1; z > exp; z--)
				outb[k++] = '0';
			for (size_t i = 0; i < nd; i++)
				outb[k++] = digits[i];
		} else {
			for (int i = 0; i <= exp; i++)
				outb[k++] = (size_t)i < nd ? digits[i] : '0';
			outb[k++] = '.';
			if ((size_t)exp + 1 < nd)
				for (size_t i = (size_t)exp + 1; i < nd; i++)
					outb[k++] = digits[i];
			else
				outb[k++] = '0';
		}
	} else {
		outb[k++] = digits[0];
		if (nd > 1) {
			outb[k++] = '.';
			for (size_t i = 1; i < nd; i++)
				outb[k++] = digits[i];
		}
		k += (size_t)snprintf(outb + k, sizeof outb - k, "e%c%02d", exp < 0 ? '-' : '+',
				      exp < 0 ? -exp : exp);
	}
	return put(o, outb, k);
}

/* newline + indent * depth spaces (Python json.dumps with indent) */
static int put_pad(struct sy_textbuf *o, int indent, int depth)
{
	int rc = put(o, SY_LIT("\n"));
	for (int i = 0; rc == SY_OK && i < indent * depth; i++)
		rc = put(o, SY_LIT(" "));
	return rc;
}

/* json.dumps(v, ensure_ascii=False, indent=indent or None): with an indent,
 * items are separated by "," + newline + padding (Python's default item
 * separator becomes "," when indent is set), empty containers stay "[]" /
 * "{}"; without one, ", " / ": " on one line. */
static int tojson_at(const json_t *v, int indent, int depth, struct sy_textbuf *o)
{
	char buf[32];
	int rc = SY_OK;
	switch (json_typeof(v)) {
	case JSON_NULL: return put(o, SY_LIT("null"));
	case JSON_TRUE: return put(o, SY_LIT("true"));
	case JSON_FALSE: return put(o, SY_LIT("false"));
	case JSON_INTEGER:
		return put(o, buf, (size_t)snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
						    json_integer_value(v)));
	case JSON_REAL:
		return put_real(json_real_value(v), o);
	case JSON_STRING:
		return put_string(json_string_value(v), json_string_length(v), o);
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		rc = put(o, SY_LIT("["));
		for (size_t i = 0; rc == SY_OK && i < n; i++) {
			if (i)
				rc = indent ? put(o, SY_LIT(",")) : put(o, SY_LIT(", "));
			if (rc == SY_OK && indent)
				rc = put_pad(o, indent, depth + 1);
			if (rc == SY_OK)
				rc = tojson_at(json_array_get(v, i), indent, depth + 1, o);
		}
		if (rc == SY_OK && indent && n)
			rc = put_pad(o, indent, depth);
		return rc ? rc : put(o, SY_LIT("]"));
	}
	case JSON_OBJECT: {
		rc = put(o, SY_LIT("{"));
		bool first = true;
		const char *key;
		size_t klen;
		json_t *val;
		json_object_keylen_foreach((json_t *)v, key, klen, val) {
			if (rc == SY_OK && !first)
				rc = indent ? put(o, SY_LIT(",")) : put(o, SY_LIT(", "));
			first = false;
			if (rc == SY_OK && indent)
				rc = put_pad(o, indent, depth + 1);
			if (rc == SY_OK)
				rc = put_string(key, klen, o);
			if (rc == SY_OK)
				rc = put(o, SY_LIT(": "));
			if (rc == SY_OK)
				rc = tojson_at(val, indent, depth + 1, o);
		}
		if (rc == SY_OK && indent && !first)
			rc = put_pad(o, indent, depth);
		return rc ? rc : put(o, SY_LIT("}"));
	}
	}
	return SY_EINVAL;
}

int sy_chat_tojson(const json_t *v, struct sy_textbuf *o)
{
	return tojson_at(v, 0, 0, o);
}

int sy_chat_tojson_indent(const json_t *v, int indent, struct sy_textbuf *o)
{
	if (indent < 0)
		return SY_EINVAL;
	return tojson_at(v, indent, 0, o);
}

int sy_chat_parse(const struct sy_chat_span *s, json_t **out)
{
	*out = NULL;
	if (s->len == 0)
		return SY_OK;
	json_error_t err;
	*out = json_loadb(s->ptr, s->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	return *out ? SY_OK : SY_EMALFORMED;
}

int sy_chat_tool_function_json(const json_t *tool, struct sy_textbuf *o)
{
	json_t *f = json_object_get(tool, "function");
	if (!json_is_object(f))
		return SY_EMALFORMED;
	static const char *const keys[] = {"description", "name", "parameters"};
	int rc = put(o, SY_LIT("{"));
	for (size_t i = 0; rc == SY_OK && i < 3; i++) {
		json_t *v = json_object_get(f, keys[i]);
		char kb[32];
		int kl = snprintf(kb, sizeof kb, "\"%s\": ", keys[i]);
		rc = put(o, kb, (size_t)kl);
		if (rc == SY_OK)
			rc = v ? sy_chat_tojson(v, o) : put(o, SY_LIT("null"));
		if (rc == SY_OK)
			rc = put(o, SY_LIT(", "));
	}
	if (rc == SY_OK)
		rc = put(o, SY_LIT("\"strict\": "));
	if (rc == SY_OK)
		rc = json_is_true(json_object_get(f, "strict")) ? put(o, SY_LIT("true"))
							       : put(o, SY_LIT("false"));
	return rc ? rc : put(o, SY_LIT("}"));
}

int sy_chat_tool_function_model(const json_t *tool, json_t **out)
{
	*out = NULL;
	json_t *f = json_object_get(tool, "function");
	if (!json_is_object(f))
		return SY_EMALFORMED;
	json_t *m = json_object();
	static const char *const keys[] = {"description", "name", "parameters"};
	int rc = m ? SY_OK : SY_ENOMEM;
	for (size_t i = 0; rc == SY_OK && i < 3; i++) {
		json_t *v = json_object_get(f, keys[i]);
		if (json_object_set(m, keys[i], v ? v : json_null()) != 0)
			rc = SY_ENOMEM;
	}
	if (rc == SY_OK &&
	    json_object_set_new(m, "strict", json_boolean(json_is_true(json_object_get(f, "strict")))))
		rc = SY_ENOMEM;
	if (rc) {
		json_decref(m);
		return rc;
	}
	*out = m;
	return SY_OK;
}

int sy_chat_tool_arguments(const json_t *args, struct sy_textbuf *o)
{
	if (!args)
		return put(o, SY_LIT("null"));
	if (!json_is_string(args))
		return sy_chat_tojson(args, o);
	json_error_t err;
	json_t *v = json_loadb(json_string_value(args), json_string_length(args),
			       JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	int rc;
	if (!v || json_is_string(v)) {
		const json_t *s = v ? v : args;
		rc = put(o, json_string_value(s), json_string_length(s));
	} else {
		rc = sy_chat_tojson(v, o);
	}
	json_decref(v);
	return rc;
}

/* Python str.isspace() code points */
static bool py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
	       c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* decode one code point forward (valid UTF-8 assumed; a stray byte is itself) */
static uint32_t cp_at(const unsigned char *p, size_t n, size_t *len)
{
	if (p[0] < 0x80 || n < 2) {
		*len = 1;
		return p[0];
	}
	if (p[0] < 0xE0) {
		*len = 2;
		return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
	}
	if (p[0] < 0xF0 && n >= 3) {
		*len = 3;
		return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
	}
	*len = n >= 4 ? 4 : 1;
	return *len == 4 ? (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
				   (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F)
			 : p[0];
}

static bool strip_match(uint32_t c, const char *chars)
{
	if (!chars)
		return py_space(c);
	return c < 0x80 && c && strchr(chars, (int)c) != NULL;
}

struct sy_chat_span sy_chat_strip(struct sy_chat_span s, const char *chars, bool left,
				  bool right)
{
	const unsigned char *p = (const unsigned char *)s.ptr;
	size_t b = 0, e = s.len;
	if (left) {
		while (b < e) {
			size_t l;
			if (!strip_match(cp_at(p + b, e - b, &l), chars))
				break;
			b += l;
		}
	}
	if (right) {
		while (e > b) {
			size_t s0 = e - 1;
			while (s0 > b && (p[s0] & 0xC0) == 0x80)
				s0--;
			size_t l;
			if (!strip_match(cp_at(p + s0, e - s0, &l), chars))
				break;
			e = s0;
		}
	}
	return (struct sy_chat_span){s.ptr ? s.ptr + b : NULL, e - b};
}
