/* access_log.c — request IDs and the JSON-lines access log (access_log.h). */
#include "router/http/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "router/core/buf.h"
#include "router/core/generation.h"
#include "router/http/error_body.h"
#include "router/worker.h"

/* The worker process's access log (-1: none) and its request counter for
 * generated IDs. */
static int log_fd = -1;
static uint64_t request_seq;

int rt_access_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	return 0;
}

static bool usable_id(h2o_iovec_t v)
{
	bool ok = v.len > 0 && v.len <= 128;
	for (size_t k = 0; ok && k < v.len; k++)
		ok = v.base[k] > 0x20 && v.base[k] < 0x7f;
	return ok;
}

h2o_iovec_t rt_request_id(h2o_req_t *req)
{
	ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-request-id"), -1);
	const struct sy_config_router *rc = rt_w.gen != NULL ? &rt_w.gen->cfg.router : NULL;
	if (rc != NULL && rc->n_request_id_headers > 0) {
		/* --request-id-headers: the first listed header with a usable
		 * value is the ID; it travels upstream and back as x-request-id
		 * (set once: a later call finds it equal). */
		for (size_t k = 0; k < rc->n_request_id_headers; k++) {
			const char *name = rc->request_id_headers[k];
			ssize_t j = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
			if (j < 0 || !usable_id(req->headers.entries[j].value))
				continue;
			h2o_iovec_t v = req->headers.entries[j].value;
			if (i == j || (i >= 0 && h2o_memis(req->headers.entries[i].value.base,
							   req->headers.entries[i].value.len, v.base,
							   v.len)))
				return v;
			if (i >= 0)
				h2o_delete_header(&req->headers, i);
			h2o_add_header_by_str(&req->pool, &req->headers, H2O_STRLIT("x-request-id"), 0,
					      NULL, v.base, v.len);
			return v;
		}
		/* None: a client x-request-id that is not listed is not the ID,
		 * unless an earlier call generated it (sy-...). */
		if (i >= 0 && !(req->headers.entries[i].value.len > 3 &&
				memcmp(req->headers.entries[i].value.base, "sy-", 3) == 0)) {
			h2o_delete_header(&req->headers, i);
			i = -1;
		}
	}
	if (i >= 0) {
		h2o_iovec_t v = req->headers.entries[i].value;
		if (usable_id(v))
			return v;
		/* Unusable client value: replace it (the replacement is what
		 * travels upstream and back). */
		h2o_delete_header(&req->headers, i);
	}
	/* "sy-<pid>-<seq>-<8 hex>", formatted by hand (hot path). The hex
	 * part comes from a xorshift generator seeded from the clock once per
	 * process (pid and sequence already make the ID unique). */
	static uint64_t rng;
	if (rng == 0)
		rng = (sy_mono_ns() ^ ((uint64_t)rt_w.pid << 32)) | 1;
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	char *buf = h2o_mem_alloc_pool(&req->pool, 64), *w = buf;
	uint32_t rnd = (uint32_t)(rng >> 32);
	memcpy(w, "sy-", 3);
	w += 3;
	w = rt_put_dec(w, (uint64_t)rt_w.pid);
	*w++ = '-';
	w = rt_put_dec(w, ++request_seq);
	*w++ = '-';
	for (int k = 7; k >= 0; k--)
		*w++ = "0123456789abcdef"[(rnd >> (k * 4)) & 0xf];
	h2o_iovec_t v = h2o_iovec_init(buf, (size_t)(w - buf));
	h2o_add_header_by_str(&req->pool, &req->headers, H2O_STRLIT("x-request-id"), 0, NULL, v.base,
			      v.len);
	return v;
}

void rt_access_log(h2o_req_t *req, enum route route, int status, const char *worker,
		   uint64_t duration_ns, uint64_t bytes_out)
{
	if (log_fd < 0)
		return;
	struct rt_buf b = {0};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	h2o_iovec_t id = rt_request_id(req);
	rt_buf_printf(&b, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"request_id\":\"",
		      tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		      ts.tv_nsec / 1000000);
	rt_buf_json_str(&b, id.base, id.len);
	rt_buf_puts(&b, "\",\"method\":\"");
	rt_buf_json_str(&b, req->method.base, req->method.len);
	rt_buf_puts(&b, "\",\"path\":\"");
	rt_buf_json_str(&b, req->path.base, req->path.len < 512 ? req->path.len : 512);
	rt_buf_printf(&b, "\",\"route\":\"%s\",\"status\":%d,\"worker\":", route_name(route),
		      status);
	if (worker) {
		rt_buf_puts(&b, "\"");
		rt_buf_json_str(&b, worker, strlen(worker));
		rt_buf_puts(&b, "\"");
	} else {
		rt_buf_puts(&b, "null");
	}
	rt_buf_printf(&b, ",\"duration_ms\":%.3f,\"bytes\":%llu,\"pid\":%d}\n",
		      (double)duration_ns / 1e6, (unsigned long long)bytes_out, rt_w.pid);
	if (!b.oom && write(log_fd, b.p, b.n) < 0)
		sy_debug("access log: %s", strerror(errno));
	rt_buf_free(&b);
}
