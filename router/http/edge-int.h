/* edge-int.h — state shared by the edge's files (edge.c, edge_h2.c). */
#ifndef SY_ROUTER_HTTP_EDGE_INT_H
#define SY_ROUTER_HTTP_EDGE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

#include "router/http/edge.h"

struct edge_h2;

/* One accepted connection (owned by its socket: freed when it closes). */
struct edge_conn {
	h2o_socket_t *sock;
	h2o_socket_cb inner_read;        /* h2o's read callback behind the edge's */
	uint64_t held;                   /* HTTP/1: budget bytes of the current request */
	uint64_t chunked_body;           /* HTTP/1: decoded bytes of the current chunked body */
	bool chunked;                    /* HTTP/1: the current body is chunked */
	bool admin;                      /* accepted on the admin listener */
	bool parked;                     /* HTTP/1: h2o stopped reading; still polled (edge.c) */
	struct edge_h2 *h2;              /* HTTP/2 state (edge_h2.c); NULL over HTTP/1 */
	struct rt_edge_verdict verdict;  /* status 0: none */
};

/* Process-wide state of the edge. */
struct rt_edge {
	uint64_t max_body;      /* router.max_body_bytes */
	uint64_t max_pending;   /* router.max_pending_body_bytes */
	uint64_t h2_stream_limit; /* h2o's limit of one HTTP/2 stream's body */
	uint64_t pending;       /* budget in use, bytes */
	uint64_t h2_refused;    /* HTTP/2 connections refused */
	uint64_t unattributed;  /* heads not attributed to a connection (never expected) */
	struct edge_conn *current; /* the connection h2o is reading, or NULL */
};

extern struct rt_edge rt_edge;

/* Takes `n` bytes of the budget: false (nothing taken) when they do not fit. */
bool rt_edge_budget_take(uint64_t n);
/* Returns `n` bytes to the budget. */
void rt_edge_budget_give(uint64_t n);
/* Sets `v` to the 503 service_overloaded of a full budget. */
void rt_edge_overloaded(struct rt_edge_verdict *v);

/* The edge state of `sock` / of req's connection, or NULL (not accepted by
 * the edge). */
struct edge_conn *rt_edge_of_sock(h2o_socket_t *sock);
struct edge_conn *rt_edge_of_req(h2o_req_t *req);

/* HTTP/2 (edge_h2.c). start: h2o serves the connection with HTTP/2 from
 * now on (the input starts with the connection preface). before_read: h2o
 * is about to parse the input; returns -1 when it refused the connection
 * (h2o closes it on this parse). adopt: the budget bytes of req's stream, handed over.
 * close: returns every count of the connection to the budget and frees
 * the HTTP/2 state. */
void rt_edge_h2_start(struct edge_conn *e);
int rt_edge_h2_before_read(struct edge_conn *e);
uint64_t rt_edge_h2_adopt(struct edge_conn *e, h2o_req_t *req);
void rt_edge_h2_close(struct edge_conn *e);

#endif
