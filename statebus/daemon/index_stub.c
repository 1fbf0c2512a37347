/* index_stub.c — TEMPORARY stand-in for statebus/index.c (the radix index,
 * built on branch `index`) so the daemon links before that merge: the
 * write API accepts and ignores everything, reset bumps the incarnation as
 * the real one does, readers find nothing. Deleted at the merge. */
#include "statebus.h"

int statebus_index_store(struct statebus_region *r, uint32_t worker, uint32_t rank,
			 bool has_parent, int64_t parent, const int64_t *hashes, size_t n,
			 uint32_t tiers, uint64_t now_ns)
{
	(void)r, (void)worker, (void)rank, (void)has_parent, (void)parent, (void)hashes,
		(void)n, (void)tiers, (void)now_ns;
	return SY_OK;
}

int statebus_index_remove(struct statebus_region *r, uint32_t worker, uint32_t rank,
			  const int64_t *hashes, size_t n, uint32_t tiers)
{
	(void)r, (void)worker, (void)rank, (void)hashes, (void)n, (void)tiers;
	return SY_OK;
}

int statebus_index_clear_rank(struct statebus_region *r, uint32_t worker, uint32_t rank)
{
	(void)r, (void)worker, (void)rank;
	return SY_OK;
}

int statebus_index_clear_worker(struct statebus_region *r, uint32_t worker)
{
	(void)r, (void)worker;
	return SY_OK;
}

int statebus_index_reset(struct statebus_region *r)
{
	statebus_region_bump_incarnation(r);
	return SY_OK;
}
