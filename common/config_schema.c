/* config_schema.c — defaults, freeing and typed scalar parsing driven by the
 * schema tables (see config_schema.h). Both the YAML walk and the flag
 * parser store values through sy_cfg_set_scalar(), so a value means the same
 * in the file and on the command line, with the same error wording.
 */
#include "common/config_schema.h"
#include "common/errors.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AT(obj, off) ((char *)(obj) + (off))

static void store_int(void *p, size_t width, int64_t v)
{
	if (width == sizeof(int64_t))
		*(int64_t *)p = v;
	else
		*(int *)p = (int)v;
}

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

int sy_cfg_defaults(const struct sy_cfg_section *sec, void *obj)
{
	for (size_t i = 0; i < sec->n_fields; i++) {
		const struct sy_cfg_field *f = &sec->fields[i];
		void *p = AT(obj, f->off);
		switch (f->type) {
		case SY_CFG_STR:
			*(char **)p = NULL;
			if (f->def_s != NULL && (*(char **)p = strdup(f->def_s)) == NULL)
				return SY_ENOMEM;
			break;
		case SY_CFG_BOOL:
			*(bool *)p = f->def_i != 0;
			break;
		case SY_CFG_INT:
		case SY_CFG_ENUM:
			store_int(p, f->width, f->def_i);
			break;
		case SY_CFG_U64:
			*(uint64_t *)p = f->def_u;
			break;
		case SY_CFG_DOUBLE:
			*(double *)p = f->def_d;
			break;
		case SY_CFG_MAP: {
			int rc = sy_cfg_defaults(f->sub, p);
			if (rc != SY_OK)
				return rc;
			break;
		}
		case SY_CFG_SEQ:
		case SY_CFG_STRLIST:
			*(void **)p = NULL;
			*(size_t *)AT(obj, f->count_off) = 0;
			if (f->type == SY_CFG_STRLIST && f->marks_off != SY_CFG_NO_OFF)
				*(void **)AT(obj, f->marks_off) = NULL;
			if (f->flags & SY_CFG_GIVEN)
				*(bool *)AT(obj, f->given_off) = false;
			break;
		}
	}
	if (sec->mark_off != SY_CFG_NO_OFF)
		memset(AT(obj, sec->mark_off), 0, sizeof(struct sy_config_mark));
	return SY_OK;
}

void sy_cfg_clear_list(const struct sy_cfg_field *f, void *obj)
{
	void **items = (void **)AT(obj, f->off);
	size_t *n = (size_t *)AT(obj, f->count_off);

	if (*items != NULL) {
		for (size_t k = 0; k < *n; k++) {
			if (f->type == SY_CFG_SEQ)
				sy_cfg_free(f->sub, (char *)*items + k * f->sub->size);
			else
				free(((char **)*items)[k]);
		}
	}
	free(*items);
	*items = NULL;
	*n = 0;
	if (f->type == SY_CFG_STRLIST && f->marks_off != SY_CFG_NO_OFF) {
		void **marks = (void **)AT(obj, f->marks_off);
		free(*marks);
		*marks = NULL;
	}
}

void sy_cfg_free(const struct sy_cfg_section *sec, void *obj)
{
	for (size_t i = 0; i < sec->n_fields; i++) {
		const struct sy_cfg_field *f = &sec->fields[i];
		void *p = AT(obj, f->off);
		switch (f->type) {
		case SY_CFG_STR:
			free(*(char **)p);
			*(char **)p = NULL;
			break;
		case SY_CFG_MAP:
			sy_cfg_free(f->sub, p);
			break;
		case SY_CFG_SEQ:
		case SY_CFG_STRLIST:
			sy_cfg_clear_list(f, obj);
			break;
		default:
			break;
		}
	}
}

bool sy_cfg_is_set(const struct sy_cfg_field *f, const void *obj)
{
	const char *p = (const char *)obj + f->off;
	const char *s;

	switch (f->type) {
	case SY_CFG_STR:
		s = *(char *const *)(const void *)p;
		return s != NULL && (f->def_s == NULL || strcmp(s, f->def_s) != 0);
	case SY_CFG_BOOL:
		return *(const bool *)(const void *)p != (f->def_i != 0);
	case SY_CFG_INT:
	case SY_CFG_ENUM:
		return (f->width == sizeof(int64_t) ? *(const int64_t *)(const void *)p
						    : (int64_t) * (const int *)(const void *)p) != f->def_i;
	case SY_CFG_U64:
		return *(const uint64_t *)(const void *)p != f->def_u;
	case SY_CFG_DOUBLE:
		return *(const double *)(const void *)p != f->def_d;
	case SY_CFG_STRLIST:
		return *(const size_t *)(const void *)((const char *)obj + f->count_off) > 0;
	case SY_CFG_MAP:
	case SY_CFG_SEQ:
		break;
	}
	return false;
}

const struct sy_cfg_field *sy_cfg_find(const struct sy_cfg_section *sec, const char *key,
				       size_t len)
{
	for (size_t i = 0; i < sec->n_fields; i++) {
		const char *k = sec->fields[i].key;
		if (strlen(k) == len && memcmp(k, key, len) == 0)
			return &sec->fields[i];
	}
	return NULL;
}

void sy_cfg_expect(const struct sy_cfg_field *f, char *buf, size_t cap)
{
	size_t used;

	switch (f->type) {
	case SY_CFG_STR:
	case SY_CFG_STRLIST:
		snprintf(buf, cap, "must be a non-empty string");
		break;
	case SY_CFG_BOOL:
		snprintf(buf, cap, "must be true or false");
		break;
	case SY_CFG_INT:
		snprintf(buf, cap, "must be an integer in %" PRId64 "..%" PRId64, f->min, f->max);
		break;
	case SY_CFG_U64:
		snprintf(buf, cap, "must be an unsigned integer in %" PRIu64 "..%" PRIu64, f->umin,
			 f->umax);
		break;
	case SY_CFG_DOUBLE:
		snprintf(buf, cap, "must be a number in %g..%g", f->dmin, f->dmax);
		break;
	case SY_CFG_ENUM:
		snprintf(buf, cap, "must be one of ");
		used = strlen(buf);
		for (size_t k = 0; f->names[k] != NULL && used < cap; k++) {
			snprintf(buf + used, cap - used, "%s%s", k ? ", " : "", f->names[k]);
			used += strlen(buf + used);
		}
		break;
	case SY_CFG_MAP:
		snprintf(buf, cap, "must be a mapping");
		break;
	case SY_CFG_SEQ:
		snprintf(buf, cap, "must be a sequence of mappings");
		break;
	}
}

/* Strict decimal: optional '-', digits, no leading zeros, no overflow. */
static bool parse_i64(const char *s, size_t len, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	uint64_t v = 0, lim = (uint64_t)INT64_MAX;

	if (len > 0 && s[0] == '-') {
		neg = true;
		lim += 1;
		i = 1;
	}
	if (i == len || (s[i] == '0' && len - i > 1))
		return false;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

static bool parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || (s[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_double(const char *s, size_t len, double *out)
{
	char buf[64];
	char *end;

	if (len == 0 || len >= sizeof(buf))
		return false;
	for (size_t i = 0; i < len; i++) { /* no hex, inf, nan, spaces */
		char c = s[i];
		if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' ||
		      c == 'E'))
			return false;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	double v = strtod(buf, &end);
	if (end != buf + len || errno != 0 || !isfinite(v))
		return false;
	*out = v;
	return true;
}

static int bad(const struct sy_cfg_field *f, char *why, size_t cap)
{
	sy_cfg_expect(f, why, cap);
	return SY_ECONFIG;
}

static int set_string(const struct sy_cfg_field *f, char **dst, const char *text, size_t len,
		      bool is_null, char *why, size_t cap)
{
	char *val;

	if (is_null) {
		if (!(f->flags & SY_CFG_NULLABLE) || f->type == SY_CFG_STRLIST)
			return bad(f, why, cap);
		free(*dst);
		*dst = NULL;
		return SY_OK;
	}
	if (len == 0)
		return bad(f, why, cap);
	if (memchr(text, '\0', len) != NULL) {
		snprintf(why, cap, "must not contain NUL bytes");
		return SY_ECONFIG;
	}
	if (f->hook != NULL) {
		const char *reason = "is invalid";
		int rc = f->hook(text, len, &val, &reason);
		if (rc == SY_EINVAL) {
			snprintf(why, cap, "%s", reason);
			return SY_ECONFIG;
		}
		if (rc != SY_OK)
			return rc;
	} else if ((val = dup_n(text, len)) == NULL) {
		return SY_ENOMEM;
	}
	free(*dst);
	*dst = val;
	return SY_OK;
}

static int append_string(const struct sy_cfg_field *f, void *obj, const char *text, size_t len,
			 bool is_null, struct sy_config_mark mark, char *why, size_t cap)
{
	char ***items = (char ***)AT(obj, f->off);
	size_t *n = (size_t *)AT(obj, f->count_off);
	char *val = NULL;

	if ((int64_t)*n >= f->max) {
		snprintf(why, cap, "must have at most %" PRId64 " items", f->max);
		return SY_ECONFIG;
	}
	int rc = set_string(f, &val, text, len, is_null, why, cap);
	if (rc != SY_OK)
		return rc;
	char **grown = realloc(*items, (*n + 1) * sizeof(char *));
	if (grown == NULL) {
		free(val);
		return SY_ENOMEM;
	}
	*items = grown;
	if (f->marks_off != SY_CFG_NO_OFF) {
		struct sy_config_mark **marks = (struct sy_config_mark **)AT(obj, f->marks_off);
		struct sy_config_mark *gm = realloc(*marks, (*n + 1) * sizeof(**marks));
		if (gm == NULL) {
			free(val);
			return SY_ENOMEM;
		}
		*marks = gm;
		gm[*n] = mark;
	}
	grown[(*n)++] = val;
	return SY_OK;
}

int sy_cfg_set_scalar(const struct sy_cfg_field *f, void *obj, const char *text, size_t len,
		      bool is_null, struct sy_config_mark mark, char *why, size_t why_cap)
{
	void *p = AT(obj, f->off);
	int64_t i;
	uint64_t u;
	double d;

	if (is_null && (f->flags & SY_CFG_NULLABLE) && f->type != SY_CFG_STR) {
		switch (f->type) {
		case SY_CFG_INT:
			store_int(p, f->width, 0);
			return SY_OK;
		case SY_CFG_U64:
			*(uint64_t *)p = 0;
			return SY_OK;
		case SY_CFG_DOUBLE:
			*(double *)p = 0;
			return SY_OK;
		default:
			break;
		}
	}
	if (is_null && f->type != SY_CFG_STR && f->type != SY_CFG_STRLIST)
		return bad(f, why, why_cap);

	switch (f->type) {
	case SY_CFG_STR:
		return set_string(f, (char **)p, text, len, is_null, why, why_cap);
	case SY_CFG_STRLIST:
		return append_string(f, obj, text, len, is_null, mark, why, why_cap);
	case SY_CFG_BOOL:
		if (len == 4 && strncasecmp(text, "true", 4) == 0)
			*(bool *)p = true;
		else if (len == 5 && strncasecmp(text, "false", 5) == 0)
			*(bool *)p = false;
		else
			return bad(f, why, why_cap);
		return SY_OK;
	case SY_CFG_INT:
		if (!parse_i64(text, len, &i) || i < f->min || i > f->max)
			return bad(f, why, why_cap);
		store_int(p, f->width, i);
		return SY_OK;
	case SY_CFG_U64:
		if (!parse_u64(text, len, &u) || u < f->umin || u > f->umax)
			return bad(f, why, why_cap);
		*(uint64_t *)p = u;
		return SY_OK;
	case SY_CFG_DOUBLE:
		if (!parse_double(text, len, &d) || d < f->dmin || d > f->dmax)
			return bad(f, why, why_cap);
		*(double *)p = d;
		return SY_OK;
	case SY_CFG_ENUM:
		for (size_t k = 0; f->names[k] != NULL; k++) {
			if (strlen(f->names[k]) == len && memcmp(f->names[k], text, len) == 0) {
				store_int(p, f->width, (int64_t)k);
				return SY_OK;
			}
		}
		return bad(f, why, why_cap);
	case SY_CFG_MAP:
	case SY_CFG_SEQ:
		break;
	}
	return bad(f, why, why_cap);
}

void *sy_cfg_seq_push(const struct sy_cfg_field *f, void *obj, int *rc)
{
	void **items = (void **)AT(obj, f->off);
	size_t *n = (size_t *)AT(obj, f->count_off);
	size_t sz = f->sub->size;

	if ((int64_t)*n >= f->max) {
		*rc = SY_ECONFIG;
		return NULL;
	}
	char *grown = realloc(*items, (*n + 1) * sz);
	if (grown == NULL) {
		*rc = SY_ENOMEM;
		return NULL;
	}
	*items = grown;
	char *elem = grown + *n * sz;
	memset(elem, 0, sz);
	(*n)++; /* counted before defaults, so a partial element is still freed */
	*rc = sy_cfg_defaults(f->sub, elem);
	return *rc == SY_OK ? elem : NULL;
}

void sy_cfg_error(struct sy_config_error *err, int code, const char *file,
		  struct sy_config_mark mark, const char *key, const char *fmt, ...)
{
	char reason[384];
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	err->code = code;
	err->line = mark.line;
	err->col = mark.col;
	snprintf(err->key, sizeof(err->key), "%s", key != NULL ? key : "");
	bool pos = file != NULL && mark.line > 0;
	bool has_key = err->key[0] != '\0';
	/* Position, key and reason, each only when present. */
	size_t used = 0;
	err->msg[0] = '\0';
	if (pos)
		used = (size_t)snprintf(err->msg, sizeof(err->msg), "%s:%" PRIu32 ":%" PRIu32 ": ",
					file, mark.line, mark.col);
	if (used < sizeof(err->msg) && has_key)
		used += (size_t)snprintf(err->msg + used, sizeof(err->msg) - used, "%s: ",
					 err->key);
	if (used < sizeof(err->msg))
		snprintf(err->msg + used, sizeof(err->msg) - used, "%s", reason);
}
