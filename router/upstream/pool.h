/* pool.h — where a worker is reached: its address, URL parts and idle
 * keep-alive sockets.
 *
 * One struct rt_upstream per worker (state-plane slot) and process, created
 * on first use: the worker ID (normalised URL) is split into host, port and
 * path prefix and the host resolved once (getaddrinfo; worker hosts are
 * normally literal addresses). When a slot is reused by another worker the
 * old entry stays allocated until process exit (connections of requests in
 * flight still point at its pool).
 */
#ifndef SY_ROUTER_UPSTREAM_POOL_H
#define SY_ROUTER_UPSTREAM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <h2o.h>

struct rt_upstreams;

/* The upstream client's keep-alive sockets to one worker (client.c). Idle
 * connections (struct rt_conn, malloc'd once per connection) stay
 * registered in the event loop; at most `capacity` are kept idle. */
struct rt_pool {
	struct sockaddr_storage addr; /* resolved once */
	socklen_t addrlen;
	h2o_linklist_t idle;          /* rt_conn.idle_link, most recently used first */
	size_t idle_count;
	size_t capacity;
};

/* One worker's connection facts. Owned by the table; valid until process
 * exit (never freed while requests may use it). */
struct rt_upstream {
	char *id;              /* worker ID (URL) */
	struct rt_pool pool;   /* idle keep-alive sockets (client.h) */
	h2o_iovec_t authority; /* "host:port" for the Host header */
	h2o_iovec_t prefix;    /* path prefix of the URL ("" or "/x") */
	char host[256];        /* host without brackets (bootstrap_host) */
	uint16_t port;
};

/* A table for `slots` worker slots, pools of `capacity` idle sockets each.
 * NULL when out of memory. */
struct rt_upstreams *rt_upstreams_create(uint32_t slots, size_t capacity);

/* The upstream of worker `slot` with ID `id`, creating (or replacing) it.
 * Returns NULL with a reason in *why (static string) when the URL is not
 * usable (https, unresolvable). */
struct rt_upstream *rt_upstream_get(struct rt_upstreams *t, uint32_t slot, const char *id,
				    const char **why);

/* Splits an http URL into host (brackets removed), port and path prefix.
 * Returns 0 or -1 (not http, malformed). */
int rt_url_split(const char *url, char *host, size_t hostcap, uint16_t *port,
		 const char **path);

#endif
