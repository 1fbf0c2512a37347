/* config_yaml.c — walks libyaml's event stream into a schema (config_schema.h).
 *
 * Recursive descent over events, one function per node kind the schema
 * expects; the recursion depth is bounded by the schema's nesting, because
 * any node the schema does not expect (an unknown key, a mapping where a
 * scalar belongs) stops the walk with an error instead of being skipped.
 * Anchors, aliases and tags are refused where they appear, so an alias bomb
 * never expands. The walk keeps the dotted key path of the current node
 * ("workers[1].kv_events.block_size") in a fixed buffer for messages, and
 * libyaml's 0-based marks become 1-based line:column.
 *
 * Event lifetime: `w->ev` is the current event; next() deletes it before
 * parsing the following one, so text borrowed from it is used before next().
 */
#include "common/config_schema.h"
#include "common/errors.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#define PATH_MAX_ 160

struct walk {
	yaml_parser_t parser;
	yaml_event_t ev;
	bool have_ev;
	const char *file;
	struct sy_config_error *err;
	char path[PATH_MAX_];
	size_t path_len;
};

static struct sy_config_mark mark_of(yaml_mark_t m)
{
	struct sy_config_mark k = {(uint32_t)m.line + 1, (uint32_t)m.column + 1};
	return k;
}

#define FAIL(w, code, m, ...) \
	(sy_cfg_error((w)->err, (code), (w)->file, mark_of(m), (w)->path, __VA_ARGS__), (code))

static int next(struct walk *w)
{
	if (w->have_ev)
		yaml_event_delete(&w->ev);
	w->have_ev = false;
	if (!yaml_parser_parse(&w->parser, &w->ev)) {
		if (w->parser.error == YAML_MEMORY_ERROR)
			return FAIL(w, SY_ENOMEM, w->parser.problem_mark, "out of memory");
		/* Syntax errors name no key: the path may not be where the text broke. */
		sy_cfg_error(w->err, SY_EMALFORMED, w->file, mark_of(w->parser.problem_mark), NULL,
			     "YAML syntax error: %s%s%s",
			     w->parser.problem ? w->parser.problem : "invalid YAML",
			     w->parser.context ? " " : "",
			     w->parser.context ? w->parser.context : "");
		return SY_EMALFORMED;
	}
	w->have_ev = true;
	return SY_OK;
}

/* Appends a path segment; keys are shown with non-printable bytes as '?'. */
static size_t path_push(struct walk *w, const char *fmt_dot, const char *s, size_t len)
{
	size_t saved = w->path_len;
	size_t room = sizeof(w->path) - 1;

	if (fmt_dot != NULL && w->path_len > 0 && w->path_len < room)
		w->path[w->path_len++] = '.';
	for (size_t i = 0; i < len && w->path_len < room; i++) {
		unsigned char c = (unsigned char)s[i];
		w->path[w->path_len++] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
	}
	w->path[w->path_len] = '\0';
	return saved;
}

static void path_pop(struct walk *w, size_t saved)
{
	w->path_len = saved;
	w->path[saved] = '\0';
}

/* Refuses anchors, tags and aliases on the current node event. */
static int check_node(struct walk *w)
{
	yaml_event_t *e = &w->ev;
	yaml_char_t *anchor = NULL, *tag = NULL;

	switch (e->type) {
	case YAML_ALIAS_EVENT:
		return FAIL(w, SY_ECONFIG, e->start_mark, "aliases are not supported");
	case YAML_SCALAR_EVENT:
		anchor = e->data.scalar.anchor;
		tag = e->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = e->data.sequence_start.anchor;
		tag = e->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = e->data.mapping_start.anchor;
		tag = e->data.mapping_start.tag;
		break;
	default:
		return FAIL(w, SY_EMALFORMED, e->start_mark, "unexpected YAML event");
	}
	if (anchor != NULL)
		return FAIL(w, SY_ECONFIG, e->start_mark, "anchors are not supported");
	if (tag != NULL)
		return FAIL(w, SY_ECONFIG, e->start_mark, "tags are not supported");
	return SY_OK;
}

static bool is_null_scalar(const yaml_event_t *e)
{
	const char *v = (const char *)e->data.scalar.value;
	size_t n = e->data.scalar.length;

	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return n == 0 || (n == 1 && v[0] == '~') ||
	       (n == 4 && (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
}

static const char *node_kind(const yaml_event_t *e)
{
	switch (e->type) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a sequence";
	case YAML_SCALAR_EVENT:
		return e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? "a scalar"
								       : "a quoted string";
	default:
		return "something else";
	}
}

static int walk_map(struct walk *w, const struct sy_cfg_section *sec, void *obj);

/* The current event is a value node for field `f` of `obj`. */
static int walk_value(struct walk *w, const struct sy_cfg_field *f, void *obj)
{
	char why[256];
	yaml_event_t *e = &w->ev;
	int rc = check_node(w);
	if (rc != SY_OK)
		return rc;

	bool null = e->type == YAML_SCALAR_EVENT && is_null_scalar(e);
	void *p = (char *)obj + f->off;

	switch (f->type) {
	case SY_CFG_MAP:
		if (null)
			return SY_OK; /* "tokenizer:" with nothing: keep defaults */
		if (e->type != YAML_MAPPING_START_EVENT)
			return FAIL(w, SY_ECONFIG, e->start_mark, "must be a mapping, not %s",
				    node_kind(e));
		return walk_map(w, f->sub, p);

	case SY_CFG_SEQ:
	case SY_CFG_STRLIST: {
		bool seq = f->type == SY_CFG_SEQ;
		sy_cfg_clear_list(f, obj); /* a list in the file replaces the current one */
		if (f->flags & SY_CFG_GIVEN)
			*(bool *)((char *)obj + f->given_off) = false;
		if (null)
			return SY_OK;
		if (e->type != YAML_SEQUENCE_START_EVENT)
			return FAIL(w, SY_ECONFIG, e->start_mark, "must be a sequence of %s, not %s",
				    seq ? "mappings" : "strings", node_kind(e));
		if (f->flags & SY_CFG_GIVEN)
			*(bool *)((char *)obj + f->given_off) = true;
		for (size_t i = 0;; i++) {
			if ((rc = next(w)) != SY_OK)
				return rc;
			if (e->type == YAML_SEQUENCE_END_EVENT)
				return SY_OK;
			char idx[24];
			int n = snprintf(idx, sizeof(idx), "[%zu]", i);
			size_t saved = path_push(w, NULL, idx, (size_t)n);
			if ((rc = check_node(w)) != SY_OK)
				return rc;
			if (seq) {
				if (e->type != YAML_MAPPING_START_EVENT)
					return FAIL(w, SY_ECONFIG, e->start_mark,
						    "must be a mapping, not %s", node_kind(e));
				void *elem = sy_cfg_seq_push(f, obj, &rc);
				if (rc == SY_ECONFIG)
					return FAIL(w, rc, e->start_mark,
						    "too many items (at most %lld)",
						    (long long)f->max);
				if (elem == NULL)
					return FAIL(w, rc, e->start_mark, "out of memory");
				if ((rc = walk_map(w, f->sub, elem)) != SY_OK)
					return rc;
			} else {
				if (e->type != YAML_SCALAR_EVENT)
					return FAIL(w, SY_ECONFIG, e->start_mark,
						    "must be a string, not %s", node_kind(e));
				rc = sy_cfg_set_scalar(f, obj, (const char *)e->data.scalar.value,
						       e->data.scalar.length, is_null_scalar(e),
						       mark_of(e->start_mark), why, sizeof(why));
				if (rc != SY_OK)
					return FAIL(w, rc, e->start_mark, "%s", why);
			}
			path_pop(w, saved);
		}
	}

	default: /* scalars */
		if (e->type != YAML_SCALAR_EVENT) {
			sy_cfg_expect(f, why, sizeof(why));
			return FAIL(w, SY_ECONFIG, e->start_mark, "%s, not %s", why, node_kind(e));
		}
		/* A quoted "30000" is a string in YAML: only strings may be quoted. */
		if (f->type != SY_CFG_STR && e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
			sy_cfg_expect(f, why, sizeof(why));
			return FAIL(w, SY_ECONFIG, e->start_mark, "%s, not a quoted string", why);
		}
		rc = sy_cfg_set_scalar(f, obj, (const char *)e->data.scalar.value,
				       e->data.scalar.length, null, mark_of(e->start_mark), why,
				       sizeof(why));
		if (rc != SY_OK)
			return FAIL(w, rc, e->start_mark, "%s", why);
		return SY_OK;
	}
}

/* The current event is MAPPING_START of a mapping described by `sec`. */
static int walk_map(struct walk *w, const struct sy_cfg_section *sec, void *obj)
{
	struct sy_config_mark seen_at[SY_CFG_MAX_FIELDS];
	uint64_t seen = 0;
	yaml_event_t *e = &w->ev;
	yaml_mark_t start = e->start_mark;
	int rc;

	if (sec->n_fields > SY_CFG_MAX_FIELDS)
		return FAIL(w, SY_EINVAL, start, "schema section %s has too many fields",
			    sec->name);
	if (sec->mark_off != SY_CFG_NO_OFF)
		*(struct sy_config_mark *)((char *)obj + sec->mark_off) = mark_of(start);

	for (;;) {
		if ((rc = next(w)) != SY_OK)
			return rc;
		if (e->type == YAML_MAPPING_END_EVENT)
			break;
		if ((rc = check_node(w)) != SY_OK)
			return rc;
		if (e->type != YAML_SCALAR_EVENT)
			return FAIL(w, SY_ECONFIG, e->start_mark, "keys must be scalars, not %s",
				    node_kind(e));
		const char *key = (const char *)e->data.scalar.value;
		size_t klen = e->data.scalar.length;
		yaml_mark_t kmark = e->start_mark;
		size_t saved = path_push(w, ".", key, klen);
		const struct sy_cfg_field *f = sy_cfg_find(sec, key, klen);
		if (f == NULL)
			return FAIL(w, SY_ECONFIG, kmark, "unknown key");
		size_t idx = (size_t)(f - sec->fields);
		if (seen & (1ull << idx))
			return FAIL(w, SY_ECONFIG, kmark, "duplicate key (first at line %u)",
				    (unsigned)seen_at[idx].line);
		seen |= 1ull << idx;
		seen_at[idx] = mark_of(kmark);
		if ((rc = next(w)) != SY_OK || (rc = walk_value(w, f, obj)) != SY_OK)
			return rc;
		path_pop(w, saved);
	}

	for (size_t i = 0; i < sec->n_fields; i++) {
		const struct sy_cfg_field *f = &sec->fields[i];
		if ((f->flags & SY_CFG_REQUIRED) && !(seen & (1ull << i))) {
			size_t saved = path_push(w, ".", f->key, strlen(f->key));
			rc = FAIL(w, SY_ECONFIG, start, "required key is missing");
			path_pop(w, saved);
			return rc;
		}
	}
	return SY_OK;
}

static int walk_stream(struct walk *w, const struct sy_cfg_section *root, void *obj)
{
	yaml_event_t *e = &w->ev;
	int rc;

	if ((rc = next(w)) != SY_OK) /* STREAM_START */
		return rc;
	if ((rc = next(w)) != SY_OK)
		return rc;
	if (e->type == YAML_STREAM_END_EVENT)
		return SY_OK; /* empty file: all defaults */
	/* DOCUMENT_START; then the root node */
	if ((rc = next(w)) != SY_OK || (rc = check_node(w)) != SY_OK)
		return rc;
	if (e->type == YAML_SCALAR_EVENT && is_null_scalar(e)) {
		/* "---" alone, or "~": a null document, all defaults */
	} else if (e->type != YAML_MAPPING_START_EVENT) {
		return FAIL(w, SY_ECONFIG, e->start_mark, "the top level must be a mapping, not %s",
			    node_kind(e));
	} else if ((rc = walk_map(w, root, obj)) != SY_OK) {
		return rc;
	}
	if ((rc = next(w)) != SY_OK) /* DOCUMENT_END */
		return rc;
	if ((rc = next(w)) != SY_OK)
		return rc;
	if (e->type != YAML_STREAM_END_EVENT)
		return FAIL(w, SY_ECONFIG, e->start_mark,
			    "only one YAML document is supported");
	return SY_OK;
}

int sy_cfg_load_yaml(const struct sy_cfg_section *root, void *obj, const char *file,
		     const char *text, size_t len, struct sy_config_error *err)
{
	struct walk w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.file = file != NULL ? file : "<string>";
	w.err = err;
	if (!yaml_parser_initialize(&w.parser)) {
		sy_cfg_error(err, SY_ENOMEM, NULL, (struct sy_config_mark){0, 0}, NULL,
			     "%s: out of memory", w.file);
		return SY_ENOMEM;
	}
	yaml_parser_set_input_string(&w.parser, (const unsigned char *)text, len);
	rc = walk_stream(&w, root, obj);
	if (w.have_ev)
		yaml_event_delete(&w.ev);
	yaml_parser_delete(&w.parser);
	return rc;
}
