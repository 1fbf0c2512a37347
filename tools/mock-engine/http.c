/* http.c — h2o set-up (one host, one path "/", one handler) and dispatch. */
#include "tools/mock-engine/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "tools/mock-engine/respond.h"

struct mock_handler {
	h2o_handler_t super;
	struct mock_engine *eng;
};

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;
static h2o_socket_t *http_listener;

void http_reply(h2o_req_t *req, int status, const char *ctype, const struct sbuf *body)
{
	req->res.status = status;
	req->res.reason = status == 200 ? "OK" : status == 400 ? "Bad Request"
					 : status == 404 ? "Not Found"
					 : status == 405 ? "Method Not Allowed"
							 : "Error";
	if (ctype)
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype,
			       strlen(ctype));
	if (body && !body->oom && body->n)
		h2o_send_inline(req, body->p, body->n);
	else
		h2o_send_inline(req, "", 0);
}

void http_error(h2o_req_t *req, int status, const char *type, const char *msg)
{
	struct sbuf b = {0};
	respond_error_body(&b, status, type, msg);
	http_reply(req, status, "application/json", &b);
	sbuf_free(&b);
}

h2o_iovec_t http_query_param(h2o_req_t *req, const char *name)
{
	if (req->query_at == SIZE_MAX)
		return h2o_iovec_init(NULL, 0);
	const char *p = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
	size_t nl = strlen(name);
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		if ((size_t)(e - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == '=')
			return h2o_iovec_init(p + nl + 1, (size_t)(e - p - (ptrdiff_t)nl - 1));
		p = e + 1;
	}
	return h2o_iovec_init(NULL, 0);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	struct mock_engine *e = ((struct mock_handler *)self)->eng;
	h2o_iovec_t path = req->path_normalized;
	if (h2o_memis(path.base, path.len, H2O_STRLIT("/v1/chat/completions")))
		return route_infer(e, req, MREQ_CHAT);
	if (h2o_memis(path.base, path.len, H2O_STRLIT("/v1/completions")))
		return route_infer(e, req, MREQ_COMPLETION);
	if (h2o_memis(path.base, path.len, H2O_STRLIT("/generate")) &&
	    e->cfg.engine != MOCK_ENGINE_VLLM)
		return route_infer(e, req, MREQ_GENERATE);
	bool handled = false;
	int rc = route_admin(e, req, &handled);
	if (handled)
		return rc;
	http_error(req, 404, "NotFoundError", "no such route");
	return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	if (err)
		return;
	h2o_socket_t *sock;
	for (int i = 0; i < 64 && (sock = h2o_evloop_socket_accept(listener)) != NULL; i++)
		h2o_accept(&accept_ctx, sock);
}

int mock_http_start(struct mock_engine *e, const char *host, int port)
{
	h2o_config_init(&config);
	config.max_request_entity_size = e->cfg.max_body_bytes;
	h2o_hostconf_t *hc =
		h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	h2o_pathconf_t *pc = h2o_config_register_path(hc, "/", 0);
	struct mock_handler *h = (struct mock_handler *)h2o_create_handler(pc, sizeof(*h));
	h->super.on_req = on_req;
	h->eng = e;
	h2o_context_init(&ctx, e->loop, &config);
	accept_ctx.ctx = &ctx;
	accept_ctx.hosts = config.hosts;

	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		sy_error("--host must be an IPv4 address: %s", host);
		return SY_EINVAL;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0) {
		sy_error("cannot listen on %s:%d", host, port);
		if (fd >= 0)
			close(fd);
		return SY_EIO;
	}
	http_listener = h2o_evloop_socket_create(e->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(http_listener, on_accept);
	return 0;
}

void mock_http_stop(void)
{
	if (http_listener)
		h2o_socket_close(http_listener);
	http_listener = NULL;
}
