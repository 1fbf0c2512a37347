/* upstream.h — where a worker is reached: socket pool and URL parts.
 *
 * One keep-alive socket pool per worker (state-plane slot) and process,
 * created on first use: the worker ID (normalised URL) is split into host,
 * port and path prefix, the host resolved once (getaddrinfo; worker hosts
 * are normally literal addresses) and the pool bound to that address
 * (h2o_socketpool_init_by_address: no resolver thread). When a slot is
 * reused by another worker the old pool is kept alive (sockets of requests
 * in flight still return to it) on a retired list until process exit.
 */
#ifndef SY_ROUTER_UPSTREAM_H
#define SY_ROUTER_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <h2o.h>
#include <h2o/socketpool.h>

struct rt_upstreams;

/* The lean client's keep-alive sockets to one upstream (lean.c). Idle
 * connections (struct rt_lconn, malloc'd once per connection) stay
 * registered in the event loop; at most `capacity` are kept idle. */
struct rt_lean_pool {
	struct sockaddr_storage addr; /* resolved once */
	socklen_t addrlen;
	h2o_linklist_t idle;          /* rt_lconn.idle_link, most recently used first */
	size_t idle_count;
	size_t capacity;
};

/* One worker's connection facts. Owned by the table; valid until process
 * exit (never freed while requests may use it). */
struct rt_upstream {
	char *id;              /* worker ID (URL) */
	h2o_socketpool_t pool;  /* h2o_http1client (fallback, admin fan-out) */
	struct rt_lean_pool lean; /* lean client (uclient.h) */
	h2o_iovec_t authority; /* "host:port" for the Host header */
	h2o_iovec_t prefix;    /* path prefix of the URL ("" or "/x") */
	char host[256];        /* host without brackets (bootstrap_host) */
	uint16_t port;
};

/* A table for `slots` worker slots, pools of `capacity` sockets each. */
struct rt_upstreams *rt_upstreams_create(uint32_t slots, size_t capacity);

/* The upstream of worker `slot` with ID `id`, creating (or replacing) it.
 * Returns NULL with a reason in *why (static string) when the URL is not
 * usable (https, unresolvable). */
struct rt_upstream *rt_upstream_get(struct rt_upstreams *t, uint32_t slot, const char *id,
				    h2o_loop_t *loop, const char **why);

/* Splits an http URL into host (brackets removed), port and path prefix.
 * Returns 0 or -1 (not http, malformed). */
int rt_url_split(const char *url, char *host, size_t hostcap, uint16_t *port,
		 const char **path);

#endif
