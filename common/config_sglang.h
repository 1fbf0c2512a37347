/* config_sglang.h — the flags of SGLang's router family (SMG, the
 * sglang_router launcher, the slim router) that do not follow switchyard's
 * naming rule (DESIGN.md §5): each is mapped to the switchyard key with the
 * same meaning and units, or refused with the reason and what to use
 * instead. The table is config_sglang.c; sy_config_apply_flag() consults it
 * before the naming rule. Flags that already follow the rule (--host,
 * --port, --policy, ...) are not listed.
 */
#ifndef SY_COMMON_CONFIG_SGLANG_H
#define SY_COMMON_CONFIG_SGLANG_H

#include <stddef.h>

enum sy_sglang_action {
	SY_SGLANG_KEY,    /* the value goes to `key`; integers times `scale` */
	SY_SGLANG_SET,    /* a bare flag: `key` takes `value` */
	SY_SGLANG_VALUES, /* `value` lists "FROM=TO;..." the accepted values and
			     what `key` takes for each; any other is refused
			     with `why` */
	SY_SGLANG_ROUTER, /* several values: parsed by switchyard-router's
			     command line (router/core/cmdline.c); `why` says
			     what it becomes */
	SY_SGLANG_REFUSE, /* refused with `why` (names the replacement) */
};

/* One flag. Strings are static. */
struct sy_sglang_flag {
	const char *flag;  /* "--name" */
	enum sy_sglang_action action;
	const char *key;   /* dotted key path (KEY, SET, VALUES) */
	const char *value; /* SET: the value; VALUES: the value map */
	unsigned scale;    /* KEY: multiplier of an integer value (0 = 1) */
	const char *why;   /* REFUSE, VALUES: the reason and the replacement */
};

/* The entry of `flag` ("--name", no "=value"), or NULL when not listed. */
const struct sy_sglang_flag *sy_sglang_flag(const char *flag);

/* The whole table, *n entries (for documentation and tests). */
const struct sy_sglang_flag *sy_sglang_flags(size_t *n);

#endif
