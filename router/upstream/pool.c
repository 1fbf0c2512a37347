/* pool.c — the table of workers' connection facts (see pool.h). */
#include "router/upstream/pool.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct rt_upstreams {
	uint32_t slots;
	size_t capacity;
	struct rt_upstream **by_slot;
};

struct rt_upstreams *rt_upstreams_create(uint32_t slots, size_t capacity)
{
	struct rt_upstreams *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->by_slot = calloc(slots ? slots : 1, sizeof(*t->by_slot));
	if (t->by_slot == NULL) {
		free(t);
		return NULL;
	}
	t->slots = slots;
	t->capacity = capacity;
	return t;
}

int rt_url_split(const char *url, char *host, size_t hostcap, uint16_t *port, const char **path)
{
	if (strncmp(url, "http://", 7) != 0)
		return -1;
	const char *h = url + 7, *end;
	if (*h == '[') {
		end = strchr(h, ']');
		if (end == NULL)
			return -1;
		if ((size_t)(end - h - 1) >= hostcap)
			return -1;
		memcpy(host, h + 1, (size_t)(end - h - 1));
		host[end - h - 1] = '\0';
		end++;
	} else {
		end = h + strcspn(h, ":/");
		if (end == h || (size_t)(end - h) >= hostcap)
			return -1;
		memcpy(host, h, (size_t)(end - h));
		host[end - h] = '\0';
	}
	*port = 80;
	if (*end == ':') {
		char *e;
		long p = strtol(end + 1, &e, 10);
		if (p < 1 || p > 65535)
			return -1;
		*port = (uint16_t)p;
		end = e;
	}
	if (*end != '\0' && *end != '/')
		return -1;
	*path = end;
	return 0;
}

struct rt_upstream *rt_upstream_get(struct rt_upstreams *t, uint32_t slot, const char *id,
				    const char **why)
{
	if (slot >= t->slots) {
		*why = "worker slot out of range";
		return NULL;
	}
	struct rt_upstream *u = t->by_slot[slot];
	if (u != NULL && strcmp(u->id, id) == 0)
		return u;
	/* New, or the slot now holds another worker: the old entry stays
	 * allocated (connections in use still point at its pool). */
	char host[256];
	uint16_t port;
	const char *path;
	if (strncmp(id, "https://", 8) == 0) {
		*why = "https workers are not supported by this data plane yet";
		return NULL;
	}
	if (rt_url_split(id, host, sizeof(host), &port, &path) != 0) {
		*why = "worker URL is not a usable http URL";
		return NULL;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	char portstr[8];
	snprintf(portstr, sizeof(portstr), "%u", port);
	if (getaddrinfo(host, portstr, &hints, &res) != 0 || res == NULL) {
		*why = "worker host does not resolve";
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (u == NULL || (u->id = strdup(id)) == NULL) {
		free(u);
		freeaddrinfo(res);
		*why = "out of memory";
		return NULL;
	}
	snprintf(u->host, sizeof(u->host), "%s", host);
	u->port = port;
	/* authority: what followed "http://" up to the path — both as spans of
	 * the table's own copy of the ID (never of the caller's string). */
	size_t auth_len = (size_t)(path - (id + 7));
	u->authority = h2o_iovec_init(u->id + 7, auth_len);
	u->prefix = h2o_iovec_init(u->id + 7 + auth_len, strlen(u->id + 7 + auth_len));
	memcpy(&u->pool.addr, res->ai_addr, res->ai_addrlen);
	u->pool.addrlen = res->ai_addrlen;
	h2o_linklist_init_anchor(&u->pool.idle);
	u->pool.capacity = t->capacity;
	freeaddrinfo(res);
	t->by_slot[slot] = u;
	sy_debug("upstream pool for %s (slot %u)", id, slot);
	return u;
}
