/* config_schema.h — the table-driven schema engine behind config.c.
 *
 * A schema is a tree of sections (struct sy_cfg_section), one per C struct /
 * YAML mapping; each section is an array of fields (struct sy_cfg_field) that
 * say a key's type, where its value lives (offsetof), its default, its range
 * and its flags. The same tables drive: defaults (sy_cfg_defaults), freeing
 * (sy_cfg_free), the YAML walk (sy_cfg_load_yaml, config_yaml.c) and flag
 * values (sy_cfg_set_scalar, shared with config_flags.c) — so a new section
 * is added by adding a struct, a field array and one row in its parent,
 * never a code path.
 *
 * Types and storage:
 *   STR      char *            owned, non-empty; NULL only if NULLABLE
 *   BOOL     bool              true|false (any case)
 *   INT      int or int64_t    decimal, range [min, max]
 *   U64      uint64_t          decimal, range [umin, umax]
 *   DOUBLE   double            finite decimal, range [dmin, dmax]
 *   ENUM     int               index into `names` (NULL-terminated)
 *   MAP      struct (sub)      nested mapping, in place
 *   SEQ      T * + size_t      sequence of mappings (sub), ≤ max items
 *   STRLIST  char ** + size_t  sequence of strings, ≤ max items (+ marks)
 * Invariant: a section has at most SY_CFG_MAX_FIELDS fields (the YAML walk
 * keeps one bit and one mark per field to find duplicate and missing keys).
 */
#ifndef SY_COMMON_CONFIG_SCHEMA_H
#define SY_COMMON_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config-t.h"

#define SY_CFG_MAX_FIELDS 64
#define SY_CFG_NO_OFF ((size_t)-1)

enum sy_cfg_type {
	SY_CFG_STR,
	SY_CFG_BOOL,
	SY_CFG_INT,
	SY_CFG_U64,
	SY_CFG_DOUBLE,
	SY_CFG_ENUM,
	SY_CFG_MAP,
	SY_CFG_SEQ,
	SY_CFG_STRLIST,
};

#define SY_CFG_REQUIRED 0x1u /* the key must appear in its mapping */
#define SY_CFG_NULLABLE 0x2u /* null (~, null, empty) resets to absent: NULL / 0 */
#define SY_CFG_GIVEN 0x4u    /* SEQ / STRLIST: a bool at given_off is set when the
				key holds a sequence (tells `[]` from absent) */

/* A string hook validates and rewrites a STR / STRLIST value (e.g. the URL
 * normaliser). It returns 0 and a malloc'd *out, SY_ENOMEM, or SY_EINVAL with
 * a static reason in *why. */
typedef int (*sy_cfg_str_hook)(const char *in, size_t len, char **out, const char **why);

struct sy_cfg_section;

struct sy_cfg_field {
	const char *key;          /* YAML key (= the C member name) */
	enum sy_cfg_type type;
	unsigned flags;           /* SY_CFG_REQUIRED | SY_CFG_NULLABLE */
	size_t off;               /* offset of the member in its section struct */
	size_t width;             /* sizeof the member (INT: 4 or 8) */
	size_t count_off;         /* SEQ / STRLIST: offset of the size_t count */
	size_t marks_off;         /* STRLIST: offset of a struct sy_config_mark *
				     array parallel to the strings, or SY_CFG_NO_OFF */
	int64_t min, max;         /* INT range; SEQ / STRLIST: max = item limit */
	uint64_t umin, umax;      /* U64 range */
	double dmin, dmax;        /* DOUBLE range */
	const char *def_s;        /* STR default (NULL: absent) */
	int64_t def_i;            /* INT / ENUM / BOOL default */
	uint64_t def_u;           /* U64 default */
	double def_d;             /* DOUBLE default */
	const char *const *names; /* ENUM names, NULL-terminated */
	const struct sy_cfg_section *sub; /* MAP / SEQ element section */
	sy_cfg_str_hook hook;     /* STR / STRLIST: optional validator */
	size_t given_off;         /* SY_CFG_GIVEN: offset of the bool */
};

struct sy_cfg_section {
	const char *name;   /* for diagnostics only */
	size_t size;        /* sizeof the struct (SEQ elements are this big) */
	size_t mark_off;    /* offset of a struct sy_config_mark set to where the
			       mapping starts, or SY_CFG_NO_OFF */
	const struct sy_cfg_field *fields;
	size_t n_fields;
};

/* Row builders: T is the section struct, m the member (= the YAML key). */
#define SY_CFG_AT_(T, m) .key = #m, .off = offsetof(T, m), .width = sizeof(((T *)0)->m)
#define SY_CFG_STR_F(T, m, dflt, fl, hk) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_STR, .flags = (fl), .def_s = (dflt), .hook = (hk)}
#define SY_CFG_BOOL_F(T, m, dflt) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_BOOL, .def_i = (dflt)}
#define SY_CFG_INT_F(T, m, lo, hi, dflt, fl) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_INT, .flags = (fl), .min = (lo), .max = (hi), \
	 .def_i = (dflt)}
#define SY_CFG_U64_F(T, m, lo, hi, dflt) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_U64, .umin = (lo), .umax = (hi), .def_u = (dflt)}
#define SY_CFG_DOUBLE_F(T, m, lo, hi, dflt) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_DOUBLE, .dmin = (lo), .dmax = (hi), .def_d = (dflt)}
#define SY_CFG_ENUM_F(T, m, nm, dflt) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_ENUM, .names = (nm), .def_i = (dflt)}
#define SY_CFG_MAP_F(T, m, sec) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_MAP, .sub = &(sec)}
#define SY_CFG_SEQ_F(T, m, n, sec, lim) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_SEQ, .count_off = offsetof(T, n), .sub = &(sec), \
	 .max = (lim)}
#define SY_CFG_STRLIST_F(T, m, n, mk, lim, hk) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_STRLIST, .count_off = offsetof(T, n), \
	 .marks_off = (mk), .max = (lim), .hook = (hk)}
#define SY_CFG_STRLIST_GIVEN_F(T, m, n, g, lim, hk) \
	{SY_CFG_AT_(T, m), .type = SY_CFG_STRLIST, .flags = SY_CFG_GIVEN, \
	 .count_off = offsetof(T, n), .marks_off = SY_CFG_NO_OFF, .max = (lim), .hook = (hk), \
	 .given_off = offsetof(T, g)}
#define SY_CFG_SECTION(nm, T, mk, arr) \
	{.name = (nm), .size = sizeof(T), .mark_off = (mk), .fields = (arr), \
	 .n_fields = sizeof(arr) / sizeof((arr)[0])}

/* Sets every field of `obj` (a struct described by `sec`) to its default,
 * recursively; SEQ / STRLIST become empty. `obj` must hold no owned memory
 * (zeroed or freed). Returns 0 or SY_ENOMEM (obj stays freeable). */
int sy_cfg_defaults(const struct sy_cfg_section *sec, void *obj);

/* Releases everything `obj` owns, recursively, and leaves it zeroed. */
void sy_cfg_free(const struct sy_cfg_section *sec, void *obj);

/* Releases the items of a SEQ / STRLIST field of `obj`; the count becomes 0. */
void sy_cfg_clear_list(const struct sy_cfg_field *f, void *obj);

/* True when scalar / list field `f` of `obj` holds something other than its
 * default: a string (non-NULL, or different from def_s), a number or enum
 * other than the default, a non-empty list. MAP and SEQ fields: false. */
bool sy_cfg_is_set(const struct sy_cfg_field *f, const void *obj);

/* The field of `sec` named by the `len` bytes at `key`, or NULL. */
const struct sy_cfg_field *sy_cfg_find(const struct sy_cfg_section *sec, const char *key,
				       size_t len);

/* Writes "must be an integer in 1..65535"-style wording of what `f` accepts
 * into `buf` (capacity `cap`). */
void sy_cfg_expect(const struct sy_cfg_field *f, char *buf, size_t cap);

/* Parses the `len` bytes at `text` as a value of scalar field `f` (STR, BOOL,
 * INT, U64, DOUBLE, ENUM; STRLIST appends one item with mark `mark`) and
 * stores it in `obj`. `is_null`: the YAML value was null (NULLABLE fields
 * become absent, others fail). On failure nothing is stored and `why` (cap
 * `why_cap`) receives the reason without a location, e.g. "must be one of
 * plain, prefill, decode". Returns 0, SY_ECONFIG, or SY_ENOMEM. */
int sy_cfg_set_scalar(const struct sy_cfg_field *f, void *obj, const char *text, size_t len,
		      bool is_null, struct sy_config_mark mark, char *why, size_t why_cap);

/* Grows a SEQ field by one element set to its section's defaults; returns a
 * pointer to it, or NULL with *rc = SY_ENOMEM or SY_ECONFIG (item limit). */
void *sy_cfg_seq_push(const struct sy_cfg_field *f, void *obj, int *rc);

/* Formats `err` (code, position, key, msg). `file` NULL or mark.line 0 leaves
 * the position out of the message; `key` NULL or "" leaves the key out. */
void sy_cfg_error(struct sy_config_error *err, int code, const char *file,
		  struct sy_config_mark mark, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Walks the YAML text (`len` bytes, named `file` in messages) into `obj`,
 * a struct described by `root`, over the values it already holds. Rejects
 * unknown and duplicate keys, wrong types, out-of-range values, missing
 * required keys, syntax errors, several documents, anchors, aliases and tags.
 * An empty stream or a null document changes nothing. Returns 0,
 * SY_EMALFORMED (syntax), SY_ECONFIG (schema) or SY_ENOMEM, with `err` set;
 * on failure `obj` may be partly updated but stays freeable. */
int sy_cfg_load_yaml(const struct sy_cfg_section *root, void *obj, const char *file,
		     const char *text, size_t len, struct sy_config_error *err);

#endif
