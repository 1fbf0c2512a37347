/* edge_h2.c — the edge over HTTP/2 (edge-int.h). */
#include <stdlib.h>

#include "router/http/edge-int.h"

void rt_edge_h2_start(struct edge_conn *e) { (void)e; }

int rt_edge_h2_before_read(struct edge_conn *e)
{
	(void)e;
	return 0;
}

uint64_t rt_edge_h2_adopt(struct edge_conn *e, h2o_req_t *req)
{
	(void)e;
	(void)req;
	return 0;
}

void rt_edge_h2_close(struct edge_conn *e) { free(e->h2); e->h2 = NULL; }
