/* cursors.c — rotation cursors: one shared counter per engine group, so
 * that every router process of the host rotates through a group's
 * candidates together (reference/policy-defaults.md §4.2: one cursor per
 * policy instance, i.e. per role group — one per group for the whole
 * router, not per process).
 *
 * Table: STATEBUS_CURSORS entries of one cache line each (no false sharing
 * between groups), open addressing on a 64-bit key the policy derives from
 * its group's identity (bucket ID, stage, main or fallback policy; 0 is
 * never a key). An entry is claimed by CAS of its key word 0 → key, and is
 * never released: keys are stable across reloads and restarts (a reload
 * continues the same rotation) and a region holds few groups. A full table
 * (or a probe window without the key) is SY_ENOSPC: the policy then
 * rotates on its process-local cursor, and says so in a counter.
 *
 * Advancing is one atomic fetch-and-add on the value word (no lock): two
 * processes picking at once get consecutive values, so a client that
 * alternates between router processes still sees A, B, A, B.
 */
#include <string.h>

#include "sb-int.h"
#include "statebus-counters.h"

static struct sb_cursor_rec *cursor_at(const struct statebus_region *r, uint32_t i)
{
	return (struct sb_cursor_rec *)sb_table(r, SB_T_CURSORS) + i;
}

int statebus_cursor_find(const struct statebus_region *r, uint64_t key, uint32_t *idx)
{
	if (r == NULL || key == 0 || idx == NULL)
		return SY_EINVAL;
	if (r->read_only)
		return SY_EPERM;
	uint32_t n = r->hdr->tables[SB_T_CURSORS].count;
	uint32_t start = (uint32_t)(key % n);
	for (uint32_t k = 0; k < n && k < STATEBUS_CURSOR_PROBES; k++) {
		uint32_t i = (start + k) % n;
		struct sb_cursor_rec *c = cursor_at(r, i);
		uint64_t cur = CMM_LOAD_SHARED(c->key);
		if (cur == 0)
			cur = uatomic_cmpxchg(&c->key, 0, key);
		if (cur == 0 || cur == key) {
			*idx = i;
			return SY_OK;
		}
	}
	(void)uatomic_add_return(&r->hdr->counters[STATEBUS_CTR_CURSORS_FULL], 1);
	return SY_ENOSPC;
}

int statebus_cursor_next(const struct statebus_region *r, uint32_t idx, uint64_t key,
			 uint64_t *value)
{
	if (r == NULL || key == 0 || value == NULL || r->read_only ||
	    idx >= r->hdr->tables[SB_T_CURSORS].count)
		return SY_EINVAL;
	struct sb_cursor_rec *c = cursor_at(r, idx);
	if (CMM_LOAD_SHARED(c->key) != key)
		return SY_ENOENT; /* another region at the same address: find again */
	*value = uatomic_add_return(&c->value, 1) - 1;
	return SY_OK;
}

int statebus_cursor_read(const struct statebus_region *r, uint32_t idx, uint64_t *key,
			 uint64_t *value)
{
	if (r == NULL || idx >= r->hdr->tables[SB_T_CURSORS].count)
		return SY_EINVAL;
	const struct sb_cursor_rec *c = cursor_at(r, idx);
	*key = CMM_LOAD_SHARED(c->key);
	*value = CMM_LOAD_SHARED(c->value);
	return SY_OK;
}

uint32_t statebus_cursors_capacity(const struct statebus_region *r)
{
	return r != NULL ? r->hdr->tables[SB_T_CURSORS].count : 0;
}
