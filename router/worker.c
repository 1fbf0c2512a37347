/* worker.c — one worker process: h2o set-up, routes, signals, drain, reload.
 *
 * The loop: h2o_evloop_run() with a 100 ms cap, then the signal flags.
 *   SIGTERM/SIGINT  drain (start_drain): the connections already queued on
 *                   the listener are accepted and its copy closed here (the
 *                   master signals every process and closes its own copy, so
 *                   new connections are refused at once); answers carry
 *                   Connection: close (HTTP/2: GOAWAY); /readyz answers 503
 *                   on open connections; requests in flight finish; the
 *                   process exits when no request and no connection is left,
 *                   or at the drain deadline (--shutdown-drain-secs).
 *   SIGHUP          reload: re-read the configuration from the same command
 *                   line, build a new generation; requests in flight keep
 *                   theirs (router/core/generation.h). A bad configuration
 *                   keeps the old one.
 * The master (main.c) restarts a worker process that dies; this process
 * dies with the master (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "router/http/response.h"
#include "router/http/access_log.h"
#include "router/http/auth.h"
#include "router/http/edge.h"
#include "router/core/buf.h"
#include "router/http/metrics.h"
#include "router/http/prefix_wait.h"
#include "router/http/routes.h"
#include "router/http/tls.h"
#include "router/core/cmdline.h"
#include "router/core/generation.h"
#include "router/dispatch/stall.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"

struct router_worker rt_w = {.admin_listen_fd = -1, .metrics_listen_fd = -1};

static volatile sig_atomic_t sig_term, sig_hup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		sig_hup = 1;
	else
		sig_term = 1;
}

/* ---- h2o handler ------------------------------------------------------- */

static bool method_is(h2o_req_t *req, const char *m)
{
	return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

static int method_not_allowed(h2o_req_t *req, enum route route, const char *allowed)
{
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allowed,
		       strlen(allowed));
	return rt_send_errorf(req, route, 405, "method_not_allowed", "%.*s is not allowed here; use %s",
			      (int)req->method.len, req->method.base, allowed);
}

/* With an admin listener (--admin-port) the admin routes are served there
 * only, and it serves nothing but them, health, readiness and metrics.
 * Returns whether `route` is refused on req's connection (404 sent). */
static bool listener_refuses(h2o_req_t *req, enum route route)
{
	if (rt_w.admin_listen_fd < 0)
		return false;
	bool admin_route = route == ROUTE_WORKERS || route == ROUTE_FLUSH_CACHE ||
			   route == ROUTE_LIST_WORKERS || route == ROUTE_ADD_WORKER ||
			   route == ROUTE_REMOVE_WORKER;
	bool on_admin = rt_edge_is_admin(req);
	if (admin_route && !on_admin) {
		rt_send_errorf(req, route, 404, "not_found", "%s is served on the admin listener",
			       route_name(route));
		return true;
	}
	if (on_admin && !admin_route && route != ROUTE_HEALTH && route != ROUTE_READYZ &&
	    route != ROUTE_METRICS && route != ROUTE_LIVENESS && route != ROUTE_READINESS) {
		rt_send_errorf(req, route, 404, "not_found", "the admin listener serves /workers, "
			       "/list_workers, /add_worker, /remove_worker, /flush_cache, /health, "
			       "/readyz, /liveness, /readiness and /metrics");
		return true;
	}
	return false;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	(void)self;
	h2o_iovec_t p = req->path_normalized;
	const char *method = NULL;
	enum route route = route_lookup(p.base, p.len, &method);
	for (size_t i = 0; i < p.len; i++)
		if (p.base[i] == '?')
			p.len = i;
	if (p.len > 1 && p.base[p.len - 1] == '/')
		p.len--;
	rt_metrics_request(rt_w.metrics, rt_w.index, route);
	rt_request_id(req);
	rt_edge_adopt_body(req);

	if (rt_cors_preflight(req, route))
		return 0;
	if (route == ROUTE_OTHER)
		return rt_send_errorf(req, route, 404, "not_found", "no route %.*s",
				      (int)(p.len < 200 ? p.len : 200), p.base);
	if (listener_refuses(req, route) || rt_auth_refused(req, route, &rt_w.gen->cfg.router))
		return 0;
	bool head_ok = method && strcmp(method, "GET") == 0 && method_is(req, "HEAD");
	if (method != NULL && !method_is(req, method) && !head_ok)
		return method_not_allowed(req, route, method);

	switch (route) {
	case ROUTE_CHAT_COMPLETIONS:
	case ROUTE_COMPLETIONS:
	case ROUTE_GENERATE:
	case ROUTE_EMBEDDINGS:
	case ROUTE_RERANK:
	case ROUTE_RESPONSES:
	case ROUTE_MESSAGES:
		return rt_route_infer(req, route);
	case ROUTE_HEALTH:
		return rt_route_health(req);
	case ROUTE_READYZ:
		return rt_route_readyz(req);
	case ROUTE_MODELS:
		return rt_route_models(req);
	case ROUTE_METRICS:
		return rt_route_metrics(req);
	case ROUTE_FLUSH_CACHE:
		return rt_route_flush_cache(req);
	case ROUTE_WORKERS:
		return rt_route_workers(req, p);
	case ROUTE_TOKENIZE:
	case ROUTE_DETOKENIZE:
		return rt_route_tokenize(req, route);
	case ROUTE_LIVENESS:
		return rt_route_liveness(req);
	case ROUTE_READINESS:
		return rt_route_readiness(req);
	case ROUTE_LOADS:
		return rt_route_loads(req);
	case ROUTE_SERVER_INFO:
	case ROUTE_MODEL_INFO:
	case ROUTE_HEALTH_GENERATE:
		return rt_route_worker_get(req, route);
	case ROUTE_LIST_WORKERS:
		return rt_route_list_workers(req);
	case ROUTE_ADD_WORKER:
		return rt_route_add_worker(req);
	case ROUTE_REMOVE_WORKER:
		return rt_route_remove_worker(req);
	default:
		return rt_send_errorf(req, route, 404, "not_found", "no such route");
	}
}

/* The metrics listener's routes: /metrics and the probes (/health, /readyz,
 * /liveness, /readiness), nothing else. */
static int on_metrics_req(h2o_handler_t *self, h2o_req_t *req)
{
	(void)self;
	h2o_iovec_t p = req->path_normalized;
	const char *method = NULL;
	enum route route = route_lookup(p.base, p.len, &method);
	rt_metrics_request(rt_w.metrics, rt_w.index, route);
	if (route != ROUTE_METRICS && route != ROUTE_HEALTH && route != ROUTE_LIVENESS &&
	    route != ROUTE_READINESS && route != ROUTE_READYZ)
		return rt_send_errorf(req, route, 404, "not_found",
				      "the metrics listener serves /metrics, /health, /readyz, "
				      "/liveness and /readiness");
	if (!method_is(req, "GET") && !method_is(req, "HEAD"))
		return method_not_allowed(req, route, "GET");
	switch (route) {
	case ROUTE_METRICS: return rt_route_metrics(req);
	case ROUTE_READINESS: return rt_route_readiness(req);
	case ROUTE_READYZ: return rt_route_readyz(req);
	case ROUTE_LIVENESS: return rt_route_liveness(req);
	default: return rt_route_health(req);
	}
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	if (err != NULL)
		return;
	bool admin = listener == rt_w.admin_listener;
	h2o_socket_t *sock;
	for (int i = 0; i < 16 && (sock = h2o_evloop_socket_accept(listener)) != NULL; i++)
		rt_edge_accept(&rt_w.accept_ctx, sock, admin);
}

/* The metrics listener: plain HTTP, its own host (/metrics and probes). */
static void on_metrics_accept(h2o_socket_t *listener, const char *err)
{
	if (err != NULL)
		return;
	h2o_socket_t *sock;
	for (int i = 0; i < 16 && (sock = h2o_evloop_socket_accept(listener)) != NULL; i++)
		h2o_accept(&rt_w.metrics_accept_ctx, sock);
}

/* Connections taken from the listening socket's queue when the drain
 * starts (their clients connected before it: they are served). */
#define RT_DRAIN_ACCEPT_MAX 4096
/* During the drain an HTTP/1 connection that sends no request for this
 * long is closed (h2o's request timeout, 10 s otherwise). */
#define RT_DRAIN_IDLE_MS 1000

/* Freed 8 KiB socket buffers a worker keeps for reuse (h2o's default: 16). */
#define SOCKET_BUFFERS_KEPT 512

/* Accepts what is queued on the listening socket `*l`, then closes this
 * process's copy of it. Once every process has closed its copy (the
 * master closes its own on SIGTERM), the kernel refuses new connections;
 * a socket passed by systemd stays open in systemd, so connections wait in
 * its queue for the next instance. */
static void close_listener(h2o_socket_t **l)
{
	if (*l == NULL)
		return;
	bool admin = *l == rt_w.admin_listener;
	h2o_socket_t *sock;
	for (int i = 0; i < RT_DRAIN_ACCEPT_MAX && (sock = h2o_evloop_socket_accept(*l)) != NULL;
	     i++)
		rt_edge_accept(&rt_w.accept_ctx, sock, admin);
	h2o_socket_read_stop(*l);
	h2o_socket_close(*l); /* closes this process's copy of the fd */
	*l = NULL;
}

/* Closes the main and the admin listener (close_listener), and the
 * metrics listener (scrapes queued on it are not served). */
static void stop_accepting(void)
{
	close_listener(&rt_w.listener);
	close_listener(&rt_w.admin_listener);
	if (rt_w.metrics_listener != NULL) {
		h2o_socket_read_stop(rt_w.metrics_listener);
		h2o_socket_close(rt_w.metrics_listener);
		rt_w.metrics_listener = NULL;
	}
}

/* SIGTERM: stop accepting at once; h2o's shutdown request makes every
 * HTTP/1 request from now on non-persistent (its answer says Connection:
 * close, so no client reuses the connection) and sends HTTP/2 GOAWAY;
 * idle HTTP/1 connections are closed after RT_DRAIN_IDLE_MS. /readyz
 * answers 503 draining on the connections still open. The shutdown is
 * requested before the queued connections are taken (stop_accepting):
 * the other way round, a connection just taken from the queue, its
 * request still unread, could be closed with the idle ones, and the
 * kernel answers the client of a socket closed with unread data with a
 * reset. */
static void start_drain(void)
{
	rt_w.draining = true;
	rt_w.drain_deadline_ns =
		sy_mono_ns() + (uint64_t)rt_w.gen->cfg.router.shutdown_drain_secs * 1000000000u;
	h2o_context_request_shutdown(&rt_w.hctx);
	stop_accepting();
	if (rt_w.hctx.http1.req_timeout.timeout > RT_DRAIN_IDLE_MS)
		rt_w.hctx.http1.req_timeout.timeout = RT_DRAIN_IDLE_MS; /* applies to linked entries */
}

/* Drained: no inference request in flight and no client connection open
 * (a request may still arrive on an open one; h2o 2.2 keeps its
 * connections on these lists). */
static bool drained(void)
{
	return rt_w.active_requests == 0 && h2o_linklist_is_empty(&rt_w.hctx.http1._conns) &&
	       h2o_linklist_is_empty(&rt_w.hctx.http2._conns);
}

/* h2o's own body limit for a router limit of `max_body` bytes. Over HTTP/1
 * the edge (http/edge.c) refuses a body over the router's limit first.
 * Over HTTP/2 h2o 2.2 refuses a body over its own limit with RST_STREAM
 * REFUSED_STREAM, where no response can be sent; twice the router's limit
 * keeps every HTTP/2 body up to there answered by http/infer.c with the
 * JSON 413, at the cost of buffering up to that much per request. */
static size_t rt_h2o_entity_limit(uint64_t max_body)
{
	return (size_t)max_body * 2 + 4096;
}

/* ---- TLS --------------------------------------------------------------- */

/* Installs the listener's TLS context of `rc` for new connections (none:
 * plain). Connections already open keep theirs (an SSL object holds a
 * reference to its context). On failure the current context stays. */
static int install_tls(const struct sy_config_router *rc)
{
	SSL_CTX *ctx = NULL;
	if (rc->tls_cert_path != NULL) {
		char err[512];
		ctx = rt_tls_server_ctx(rc->tls_cert_path, rc->tls_key_path, err, sizeof(err));
		if (ctx == NULL) {
			sy_error("TLS: keeping the current certificate: %s", err);
			return -1;
		}
	}
	if (rt_w.accept_ctx.ssl_ctx != NULL)
		SSL_CTX_free(rt_w.accept_ctx.ssl_ctx);
	rt_w.accept_ctx.ssl_ctx = ctx;
	return 0;
}

/* ---- reload ------------------------------------------------------------ */

static void reload(void)
{
	static char err[ROUTER_CMDLINE_ERR_MAX];
	struct router_cmdline cl;
	struct router_gen *g = NULL;
	if (router_gen_from_args(rt_w.argc, rt_w.argv, rt_w.gen->number + 1, &g, &cl, err,
				 sizeof(err)) != 0 || g == NULL) {
		sy_error("reload: keeping the current configuration: %s", err);
		return;
	}
	struct router_gen *old = rt_w.gen;
	rt_prefix_wait_open(g);
	rt_w.gen = g;
	rt_w.hconf.max_request_entity_size = rt_h2o_entity_limit(g->cfg.router.max_body_bytes);
	install_tls(&g->cfg.router);
	rt_edge_configure(g->cfg.router.max_body_bytes, g->cfg.router.max_pending_body_bytes,
			  rt_w.hconf.max_request_entity_size);
	sy_log_init("router", (enum sy_log_level)g->cfg.log.level, (enum sy_log_format)g->cfg.log.format);
	sy_info("reload: generation %llu installed (%llu requests in flight keep theirs)",
		(unsigned long long)g->number, (unsigned long long)rt_w.active_requests);
	router_gen_unref(old);
}

/* ---- process ----------------------------------------------------------- */

static int open_region(void)
{
	char err[256];
	int rc = statebus_region_open(rt_w.gen->cfg.state.shm_path, NULL, STATEBUS_ATTACH_ONLY,
				      &rt_w.region, err, sizeof(err));
	if (rc != SY_OK) {
		sy_error("state plane: %s", err);
		return rc;
	}
	rc = statebus_proc_claim(rt_w.region, STATEBUS_PROC_ROUTER, &rt_w.proc_slot);
	if (rc == SY_ENOSPC) {
		/* Slots of dead processes block us: reap them (serialised by the
		 * writer lock) and try again. */
		if (statebus_writer_lock(rt_w.region, true) == SY_OK) {
			statebus_procs_reap(rt_w.region);
			statebus_writer_unlock(rt_w.region);
		}
		rc = statebus_proc_claim(rt_w.region, STATEBUS_PROC_ROUTER, &rt_w.proc_slot);
	}
	if (rc != SY_OK)
		sy_error("state plane: cannot claim a process slot: %s", sy_strerror(rc));
	return rc;
}

static void on_pool_replaced(void) { rt_metrics_pool_replaced(rt_w.metrics, rt_w.index); }

static void setup_h2o(void)
{
	const struct sy_config_router *rc = &rt_w.gen->cfg.router;
	h2o_config_init(&rt_w.hconf);
	/* No Server header: it would name the library and its version, and
	 * costs a sprintf per response (h2o's flatten_headers). */
	rt_w.hconf.server_name = h2o_iovec_init(H2O_STRLIT(""));
	rt_w.hconf.max_request_entity_size = rt_h2o_entity_limit(rc->max_body_bytes);
	rt_edge_configure(rc->max_body_bytes, rc->max_pending_body_bytes,
			  rt_w.hconf.max_request_entity_size);
	h2o_hostconf_t *hc =
		h2o_config_register_host(&rt_w.hconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	h2o_pathconf_t *pc = h2o_config_register_path(hc, "/", 0);
	h2o_handler_t *h = h2o_create_handler(pc, sizeof(*h));
	h->on_req = on_req;
	rt_oversize_install(hc, pc);
	rt_cors_install(pc);

	/* The metrics listener's host: registered after the serving host (which
	 * stays the default of the serving listener), reached only through its
	 * own accept context. */
	static h2o_hostconf_t *metrics_hosts[2];
	if (rt_w.metrics_listen_fd >= 0) {
		h2o_hostconf_t *mh = h2o_config_register_host(
			&rt_w.hconf, h2o_iovec_init(H2O_STRLIT("switchyard-metrics")), 65535);
		h2o_pathconf_t *mpc = h2o_config_register_path(mh, "/", 0);
		h2o_handler_t *mhh = h2o_create_handler(mpc, sizeof(*mhh));
		mhh->on_req = on_metrics_req;
		metrics_hosts[0] = mh;
	}

	/* h2o keeps at most 16 freed socket buffers (8 KiB each) for reuse;
	 * the client and engine connections' input buffers and each answer's
	 * body buffers are taken and given back per read and per relayed
	 * event, so past 16 in use (a few dozen streams) every one was a
	 * slow-path malloc and free. Keep up to SOCKET_BUFFERS_KEPT (4 MiB). */
	h2o_socket_buffer_prototype.allocator.max = SOCKET_BUFFERS_KEPT;
	rt_w.loop = h2o_evloop_create();
	h2o_context_init(&rt_w.hctx, rt_w.loop, &rt_w.hconf);
	rt_w.accept_ctx.ctx = &rt_w.hctx;
	rt_w.accept_ctx.hosts = rt_w.hconf.hosts;
	install_tls(rc);
	rt_w.metrics_accept_ctx.ctx = &rt_w.hctx;
	rt_w.metrics_accept_ctx.hosts = metrics_hosts;

	uint64_t head_ms = (uint64_t)rc->header_timeout_secs * 1000;
	uint64_t idle_ms = (uint64_t)rc->stream_idle_timeout_secs * 1000;
	h2o_timeout_init(rt_w.loop, &rt_w.head_timeout, head_ms);
	h2o_timeout_init(rt_w.loop, &rt_w.request_timeout, (uint64_t)rc->request_timeout_secs * 1000);
	h2o_timeout_init(rt_w.loop, &rt_w.idle_timeout, idle_ms);
	h2o_timeout_init(rt_w.loop, &rt_w.prefill_timeout, head_ms + idle_ms);
	rt_client_init(rt_w.loop, (uint64_t)rc->upstream_pool_idle_timeout_secs * 1000,
		       on_pool_replaced);
}

int rt_worker_main(unsigned index, int listen_fd, struct router_gen *gen, int argc, char **argv)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	rt_w.index = index;
	rt_w.pid = getpid();
	rt_w.argc = argc;
	rt_w.argv = argv;
	rt_w.listen_fd = listen_fd;

	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: wake epoll */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	rt_w.gen = gen;
	sy_info("tokenizer %s (chat template %s), input-ids forwarding %s",
		sy_tokenizer_kind(gen->tokenizer), sy_tokenizer_chat_template(gen->tokenizer),
		gen->prepare.forward_input_ids ? "on" : "off");
	char why[256];
	if (rt_edge_selfcheck(why, sizeof(why)) != 0) {
		sy_error("worker %u: %s", index, why);
		return 1;
	}
	if (open_region() != SY_OK)
		return 1;
	if (rt_w.gen->cfg.router.access_log != NULL &&
	    rt_access_log_open(rt_w.gen->cfg.router.access_log) != 0) {
		sy_warn("access log %s: %s", rt_w.gen->cfg.router.access_log, strerror(errno));
	}
	setup_h2o();
	rt_metrics_queue_reset(rt_w.metrics, index); /* a crashed predecessor's waiters are gone */
	if (rt_w.gen->cfg.router.tls_cert_path != NULL && rt_w.accept_ctx.ssl_ctx == NULL)
		return 1; /* never serve in the clear what is configured for TLS */
	rt_prefix_wait_bind(rt_w.loop);
	rt_prefix_wait_open(gen);
	rt_w.upstreams = rt_upstreams_create(statebus_workers_capacity(rt_w.region),
					     (size_t)rt_w.gen->cfg.router.max_connections_per_worker);
	if (rt_w.upstreams == NULL ||
	    rt_stall_init(rt_w.loop, statebus_workers_capacity(rt_w.region),
			  (uint64_t)rt_w.gen->cfg.router.stall_timeout_secs * 1000000000u) != SY_OK) {
		sy_error("worker %u: out of memory", index);
		return 1;
	}
	rt_w.listener = h2o_evloop_socket_create(rt_w.loop, listen_fd, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(rt_w.listener, on_accept);
	if (rt_w.admin_listen_fd >= 0) {
		rt_w.admin_listener = h2o_evloop_socket_create(rt_w.loop, rt_w.admin_listen_fd,
							       H2O_SOCKET_FLAG_DONT_READ);
		h2o_socket_read_start(rt_w.admin_listener, on_accept);
	}
	if (rt_w.metrics_listen_fd >= 0) {
		rt_w.metrics_listener = h2o_evloop_socket_create(rt_w.loop, rt_w.metrics_listen_fd,
								 H2O_SOCKET_FLAG_DONT_READ);
		h2o_socket_read_start(rt_w.metrics_listener, on_metrics_accept);
	}
	sy_info("worker %u ready (pid %d, proc slot %u)", index, (int)getpid(), rt_w.proc_slot);

	uint64_t refused_seen = 0;
	while (true) {
		h2o_evloop_run(rt_w.loop, 100);
		uint64_t refused = rt_edge_h2_refused();
		rt_metrics_edge(rt_w.metrics, rt_w.index, rt_edge_pending_bytes(),
				refused - refused_seen);
		refused_seen = refused;
		if (sig_hup) {
			sig_hup = 0;
			reload();
		}
		if (sig_term && !rt_w.draining) {
			start_drain();
			sy_info("worker %u draining: %llu requests in flight", index,
				(unsigned long long)rt_w.active_requests);
		}
		if (rt_w.draining && (drained() || sy_mono_ns() >= rt_w.drain_deadline_ns))
			break;
	}
	if (!drained())
		sy_warn("worker %u: drain deadline passed with %llu requests in flight (open "
			"connections are closed)", index, (unsigned long long)rt_w.active_requests);
	statebus_proc_release(rt_w.region);
	statebus_region_close(rt_w.region);
	sy_info("worker %u exits", index);
	return 0;
}
