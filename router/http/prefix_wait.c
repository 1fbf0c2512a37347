/* prefix_wait.c — indexer sockets in the h2o loop and requests waiting for
 * their prefix memo (prefix_wait.h).
 *
 * Invariants: a waiting request has exactly one of its timer linked (the
 * deadline, or the zero-delay resume); resume runs from a timer callback,
 * so a drain never re-enters selection; an h2o socket watches a dup of
 * ZMQ_FD and is closed before ZeroMQ closes its own.
 */
#include "router/http/prefix_wait.h"

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/core/generation.h"

#define WAIT_TIMEOUTS 16 /* distinct deadline lengths (ms) per process */

static h2o_evloop_t *wait_loop;
static h2o_timeout_t zero_timeout, one_ms;
static struct {
	uint64_t ms;
	h2o_timeout_t t;
} timeouts[WAIT_TIMEOUTS];
static unsigned n_timeouts;

/* ---- sockets ----------------------------------------------------------------- */

static void on_readable(h2o_socket_t *sock, const char *err)
{
	(void)err;
	cache_source_drain(sock->data, sy_mono_ns());
}

static int watch(void *ctx, struct cache_source *s, int fd)
{
	(void)ctx;
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0) {
		sy_warn("indexer %s: cannot watch its socket; lookups will read as timeouts",
			s->endpoint);
		return -1;
	}
	h2o_socket_t *sock = h2o_evloop_socket_create(wait_loop, own, H2O_SOCKET_FLAG_DONT_READ);
	sock->data = s;
	h2o_socket_read_start(sock, on_readable);
	s->watch = sock;
	return 0;
}

static void unwatch(void *ctx, struct cache_source *s)
{
	(void)ctx;
	h2o_socket_t *sock = s->watch;
	h2o_socket_read_stop(sock);
	h2o_socket_close(sock); /* closes the dup */
}

static const struct cache_source_loop binding = {.watch = watch, .unwatch = unwatch};

void rt_prefix_wait_bind(h2o_evloop_t *loop)
{
	wait_loop = loop;
	h2o_timeout_init(loop, &zero_timeout, 0);
	h2o_timeout_init(loop, &one_ms, 1);
	cache_source_set_loop(&binding);
}

void rt_prefix_wait_open(struct router_gen *g)
{
	for (size_t i = 0; i < g->n_sources; i++)
		if (g->sources[i].kind == CACHE_SOURCE_INDEXER)
			(void)cache_source_open(&g->sources[i]);
}

/* ---- waiting requests -------------------------------------------------------- */

/* The h2o timeout of `ms` milliseconds (one per distinct length). */
static h2o_timeout_t *timeout_of(uint64_t ms)
{
	unsigned best = 0;
	for (unsigned i = 0; i < n_timeouts; i++) {
		if (timeouts[i].ms == ms)
			return &timeouts[i].t;
		if (timeouts[i].ms > ms && (timeouts[best].ms < ms || timeouts[i].ms < timeouts[best].ms))
			best = i;
	}
	if (n_timeouts < WAIT_TIMEOUTS) {
		timeouts[n_timeouts].ms = ms;
		h2o_timeout_init(wait_loop, &timeouts[n_timeouts].t, ms);
		return &timeouts[n_timeouts++].t;
	}
	return &timeouts[best].t; /* table full: the closest length (≥ when there is one) */
}

static void fire_resume(h2o_timeout_entry_t *t)
{
	struct rt_prefix_wait *w = H2O_STRUCT_FROM_MEMBER(struct rt_prefix_wait, timer, t);
	struct prefix_memo *m = w->memo;
	m->on_ready = NULL;
	m->ready_arg = NULL;
	w->active = false;
	w->resume(w);
}

static void fire_deadline(h2o_timeout_entry_t *t)
{
	struct rt_prefix_wait *w = H2O_STRUCT_FROM_MEMBER(struct rt_prefix_wait, timer, t);
	/* h2o counts from the start of the loop turn, in ms: a deadline of
	 * CLOCK_MONOTONIC may be a moment away still. */
	if (prefix_memo_expire(w->memo, sy_mono_ns()) > 0) {
		h2o_timeout_link(wait_loop, &one_ms, &w->timer);
		return;
	}
	fire_resume(t);
}

/* on_ready of a waiting memo: its last reply came (inside a drain). */
static void on_ready(struct prefix_memo *m, void *arg)
{
	(void)m;
	struct rt_prefix_wait *w = arg;
	h2o_timeout_unlink(&w->timer);
	w->timer.cb = fire_resume;
	h2o_timeout_link(wait_loop, &zero_timeout, &w->timer);
}

void rt_prefix_wait_start(struct rt_prefix_wait *w, struct prefix_memo *m,
			  void (*resume)(struct rt_prefix_wait *w))
{
	uint64_t now = sy_mono_ns(), deadline = prefix_memo_deadline(m);
	uint64_t ms = deadline > now ? (deadline - now + 999999u) / 1000000u : 0;
	w->memo = m;
	w->resume = resume;
	w->active = true;
	m->on_ready = on_ready;
	m->ready_arg = w;
	w->timer = (h2o_timeout_entry_t){.cb = fire_deadline};
	h2o_timeout_link(wait_loop, ms ? timeout_of(ms) : &zero_timeout, &w->timer);
}

void rt_prefix_wait_stop(struct rt_prefix_wait *w)
{
	if (!w->active)
		return;
	w->active = false;
	if (h2o_timeout_is_linked(&w->timer))
		h2o_timeout_unlink(&w->timer);
	w->memo->on_ready = NULL;
	w->memo->ready_arg = NULL;
}
