/* sb_test.h — helpers shared by the state-plane tests: unique region paths
 * under /dev/shm, create and destroy shortcuts. Header-only, test use. */
#ifndef SY_TESTS_SB_TEST_H
#define SY_TESTS_SB_TEST_H

#include <check.h>
#include <stdio.h>
#include <unistd.h>

#include "statebus.h"

/* Unique path /dev/shm/sy-test-<pid>-<n> (pid of the caller at call time). */
static inline const char *sbt_path(char *buf, size_t cap)
{
	static unsigned n;
	snprintf(buf, cap, "/dev/shm/sy-test-%d-%u", (int)getpid(), n++);
	unlink(buf);
	return buf;
}

/* Creates a region at path with params (NULL = defaults), asserting success. */
static inline struct statebus_region *sbt_create(const char *path, const struct statebus_params *p)
{
	struct statebus_region *r = NULL;
	char err[256] = "";
	int rc = statebus_region_open(path, p, STATEBUS_CREATE, &r, err, sizeof(err));
	ck_assert_msg(rc == SY_OK, "open %s: %d %s", path, rc, err);
	return r;
}

/* Small region for fast tests. */
static inline struct statebus_params sbt_small(void)
{
	struct statebus_params p = {.max_workers = 8, .max_dp_ranks = 4, .max_procs = 8};
	return p;
}

/* Creates a small region (sbt_small) at a fresh unique path written into
 * path[cap], asserting success. */
static inline struct statebus_region *sbt_create_small(char *path, size_t cap)
{
	struct statebus_params p = sbt_small();
	return sbt_create(sbt_path(path, cap), &p);
}

/* Creates a small region (sbt_create_small) and claims a router process
 * slot in it (its index in *slot), asserting success. */
static inline struct statebus_region *sbt_create_small_router(char *path, size_t cap,
							       uint32_t *slot)
{
	struct statebus_region *r = sbt_create_small(path, cap);
	ck_assert_int_eq(statebus_proc_claim(r, STATEBUS_PROC_ROUTER, slot), SY_OK);
	return r;
}

/* In a forked child: attaches to the existing region at path and claims a
 * router process slot (its index in *slot) → the child's handle; when
 * either fails the child ends with _exit(1). */
static inline struct statebus_region *sbt_child_attach_router(const char *path, uint32_t *slot)
{
	struct statebus_region *r = NULL;
	if (statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, NULL, 0) != SY_OK ||
	    statebus_proc_claim(r, STATEBUS_PROC_ROUTER, slot) != SY_OK)
		_exit(1);
	return r;
}

/* Closes the test's handle r and removes the region file at path. */
static inline void sbt_destroy(struct statebus_region *r, const char *path)
{
	statebus_region_close(r);
	statebus_region_destroy(path);
}

/* A plain worker with the given ID. */
static inline struct statebus_worker sbt_worker(const char *id, uint16_t dp)
{
	struct statebus_worker w = {0};
	snprintf(w.id, sizeof(w.id), "%s", id);
	snprintf(w.model, sizeof(w.model), "default-model");
	w.role = STATEBUS_WORKER_PLAIN;
	w.dp_size = dp;
	w.healthy = 1;
	return w;
}

#endif
