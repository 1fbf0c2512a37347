/* req_alloc.h — request-lifetime objects from a per-process free list.
 *
 * h2o_mem_alloc_shared() gives a request's pool an object with a dispose
 * callback, but it mallocs the object; the router's per-request states
 * (struct infer_request, struct fwd: ~2 KiB) are past glibc's tcache, so
 * each took the slow _int_malloc / _int_free path (perf, bench/proxy small
 * JSON: ~0.3 µs a request). rt_req_alloc() takes the object from `list`
 * instead and links a small holder (a tcache-sized shared entry) to the
 * pool; when the pool is cleared the holder calls `dispose` and puts the
 * object back on the list (at most list->max kept, the rest freed).
 *
 * Under AddressSanitizer no object is kept (each is freed), so a use after
 * its request ended is still reported. Single-threaded: a list belongs to one process's event loop.
 */
#ifndef SY_ROUTER_REQ_ALLOC_H
#define SY_ROUTER_REQ_ALLOC_H

#include <stddef.h>

#include <h2o.h>

/* Free objects of one size. Zero-initialise with .size and .max set;
 * objects on the list are freed by rt_req_alloc_drain(). */
struct rt_req_list {
	size_t size;    /* bytes of every object of this list */
	size_t max;     /* most free objects kept */
	size_t n;       /* free objects kept now */
	void **free;    /* n objects (grown to max on first use) */
};

/* An object of list->size bytes, zeroed, owned by `pool`: when the pool
 * is cleared, dispose(object) runs (if not NULL) and the object returns to
 * the list. Aborts on out-of-memory, as h2o's own allocators do. */
void *rt_req_alloc(h2o_mem_pool_t *pool, struct rt_req_list *list, void (*dispose)(void *));

/* Frees the objects kept on list (process exit, tests). */
void rt_req_alloc_drain(struct rt_req_list *list);

#endif
