/* req_alloc.c — request-lifetime objects from a per-process free list
 * (req_alloc.h). */
#include "router/http/req_alloc.h"

#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer nothing is kept, so a use after the request
 * ended is still reported. */
static size_t keep_max(const struct rt_req_list *l)
{
#if defined(__SANITIZE_ADDRESS__)
	(void)l;
	return 0;
#else
	return l->max;
#endif
}

struct holder {
	void *obj;
	struct rt_req_list *list;
	void (*dispose)(void *);
};

static void holder_dispose(void *p)
{
	struct holder *h = p;
	if (h->dispose != NULL)
		h->dispose(h->obj);
	struct rt_req_list *l = h->list;
	if (l->n < keep_max(l) && l->free != NULL)
		l->free[l->n++] = h->obj;
	else
		free(h->obj);
}

void *rt_req_alloc(h2o_mem_pool_t *pool, struct rt_req_list *list, void (*dispose)(void *))
{
	if (list->free == NULL && keep_max(list) > 0)
		list->free = malloc(list->max * sizeof(*list->free)); /* NULL: objects are freed */
	void *obj = list->n > 0 ? list->free[--list->n] : h2o_mem_alloc(list->size);
	memset(obj, 0, list->size);
	struct holder *h = h2o_mem_alloc_shared(pool, sizeof(*h), holder_dispose);
	h->obj = obj;
	h->list = list;
	h->dispose = dispose;
	return obj;
}

void rt_req_alloc_drain(struct rt_req_list *list)
{
	while (list->n > 0)
		free(list->free[--list->n]);
	free(list->free);
	list->free = NULL;
}
