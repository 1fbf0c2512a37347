/* client_watch.c — the HTTP/1 disconnect watch (client_watch.h).
 *
 * One epoll set per process; its descriptor is an h2o socket created with
 * H2O_SOCKET_FLAG_DONT_READ, so h2o only reports readiness (events
 * pending) and this file drains them with epoll_wait(…, 0). Each event's
 * data is its struct rt_client_watch; a watch leaves the set (EPOLL_CTL_DEL)
 * before its storage can go, so no event names freed memory. Events of one
 * batch belong to different connections (one HTTP/1 request at a time per
 * connection), so handling one never frees another of the batch.
 */
#include "router/http/client_watch.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"

static int watch_ep = -1;
static h2o_socket_t *watch_sock;
static h2o_timeout_t delay;
static h2o_loop_t *watch_loop;

static void on_events(h2o_socket_t *sock, const char *err)
{
	(void)sock, (void)err;
	struct epoll_event ev[16];
	int n = epoll_wait(watch_ep, ev, 16, 0);
	for (int i = 0; i < n; i++) {
		struct rt_client_watch *w = ev[i].data.ptr;
		rt_client_watch_stop(w);
		w->on_gone(w);
	}
}

static bool setup(h2o_loop_t *loop)
{
	if (watch_sock != NULL)
		return true;
	watch_ep = epoll_create1(EPOLL_CLOEXEC);
	if (watch_ep < 0) {
		sy_warn("client watch: epoll_create1: %s (a client leaving a long request is "
			"noticed only when a write fails)", strerror(errno));
		return false;
	}
	watch_loop = loop;
	h2o_timeout_init(loop, &delay, RDHUP_DELAY_MS);
	watch_sock = h2o_evloop_socket_create(loop, watch_ep, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(watch_sock, on_events);
	return true;
}

static void on_delay(h2o_timeout_entry_t *e)
{
	struct rt_client_watch *w = H2O_STRUCT_FROM_MEMBER(struct rt_client_watch, timer, e);
	h2o_socket_t *sock = w->req->conn->callbacks->get_socket != NULL
				     ? w->req->conn->callbacks->get_socket(w->req->conn)
				     : NULL;
	if (sock == NULL)
		return;
	int fd = h2o_socket_get_fd(sock);
	struct epoll_event ev = {.events = EPOLLRDHUP, .data.ptr = w};
	if (fd < 0 || epoll_ctl(watch_ep, EPOLL_CTL_ADD, fd, &ev) != 0)
		return;
	w->fd = fd;
}

void rt_client_watch_start(struct rt_client_watch *w, h2o_loop_t *loop, h2o_req_t *req,
			   rt_client_gone_cb on_gone)
{
	w->req = req;
	w->on_gone = on_gone;
	w->fd = -1;
	w->timer.cb = on_delay;
	if (req->version >= 0x200 || !setup(loop))
		return;
	h2o_timeout_link(watch_loop, &delay, &w->timer);
}

void rt_client_watch_stop(struct rt_client_watch *w)
{
	if (h2o_timeout_is_linked(&w->timer))
		h2o_timeout_unlink(&w->timer);
	if (w->fd >= 0) {
		(void)epoll_ctl(watch_ep, EPOLL_CTL_DEL, w->fd, NULL);
		w->fd = -1;
	}
}
