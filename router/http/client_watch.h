/* client_watch.h — noticing a client that went away while its request is
 * being answered, whether or not the response has started.
 *
 * HTTP/2: h2o keeps reading the connection, so RST_STREAM or a close
 * disposes the request at once (its pool's dispose callbacks run); nothing
 * is watched. HTTP/1: h2o 2.2 stops reading a connection while a request
 * is handled, so a close is seen only when a write fails. A watched HTTP/1
 * request's socket is added, RDHUP_DELAY_MS (50 ms) after the watch
 * started, to one epoll set of this process (EPOLLRDHUP: the peer closed
 * or shut down its side; EPOLLHUP/ERR: reset), itself registered in the
 * h2o loop; a ready event calls `on_gone` within one loop turn. A request
 * answered within the delay costs no system call; a longer one costs two
 * epoll_ctl. So a client that leaves is noticed within about 50 ms of its
 * close (at most the delay plus one loop turn after the request started).
 * A client that only shuts down its sending side counts as gone too (HTTP/1
 * clients do not half-close while they wait for an answer).
 */
#ifndef SY_ROUTER_CLIENT_WATCH_H
#define SY_ROUTER_CLIENT_WATCH_H

#include <stdbool.h>

#include <h2o.h>

/* Delay before a request's socket is watched (ms). */
#define RDHUP_DELAY_MS 50

struct rt_client_watch;

/* Called once when the client of a watched request went away (the watch is
 * stopped already). */
typedef void (*rt_client_gone_cb)(struct rt_client_watch *w);

/* One request's watch: caller-owned storage (the request pool), zeroed
 * before rt_client_watch_start. */
struct rt_client_watch {
	h2o_req_t *req;
	rt_client_gone_cb on_gone;
	h2o_timeout_entry_t timer; /* the delay */
	int fd;                    /* registered socket, -1 = none */
};

/* Starts watching `req` (HTTP/1 only; HTTP/2 needs none). `loop` is the
 * process's loop (the epoll set is created on first use). */
void rt_client_watch_start(struct rt_client_watch *w, h2o_loop_t *loop, h2o_req_t *req,
			   rt_client_gone_cb on_gone);

/* Stops the watch (idempotent): before the request's memory goes away. */
void rt_client_watch_stop(struct rt_client_watch *w);

#endif
