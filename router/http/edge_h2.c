/* edge_h2.c — the edge over HTTP/2 (edge-int.h): the reset budget of a
 * connection and its request bodies in the process's body budget.
 *
 * Before h2o parses a connection's input (the read wrapper of edge.c),
 * the frames in it are read here: h2o consumes every complete frame it
 * is given and leaves at most an incomplete one, so the complete frames in
 * the input are exactly the ones h2o is about to process (the connection
 * preface, while still there, is skipped).
 *
 * Resets. Every RST_STREAM of the client spends one token of the
 * connection's budget: RESET_BURST tokens, refilled at RESET_PER_SEC. A
 * connection that resets with no token left (rapid reset, CVE-2023-44487)
 * is refused: h2o 2.2 has no call to close one connection, so the input is
 * cut after the last frame allowed and a frame header no HTTP/2 peer may
 * send (a length past the maximum frame size) is put in its place; h2o
 * answers it with GOAWAY (FRAME_SIZE_ERROR) and closes the connection.
 *
 * Bodies. The bytes of DATA frames (padding excluded, at most h2o's own
 * per-stream limit) are counted per stream against the process budget as
 * they arrive. A stream's count is handed to its request when the route
 * starts (the request's body has the same length), returned when the client
 * resets the stream before its body is complete, or when the connection
 * closes. A DATA frame that does not fit in the budget refuses the
 * connection like a reset flood: h2o 2.2 can answer a stream only once its
 * body is complete, and resetting one stream takes its internals.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "router/http/edge-int.h"

#define RESET_BURST 200u
#define RESET_PER_SEC 100u
#define H2_TRACKED 128
#define H2_MAX_FRAME 16384u /* h2o 2.2's SETTINGS_MAX_FRAME_SIZE */

enum { F_DATA = 0x0, F_RST_STREAM = 0x3 };
enum { FL_END_STREAM = 0x1, FL_PADDED = 0x8 };

struct h2_count {
	uint32_t stream_id;
	bool complete;  /* END_STREAM seen: the request runs or waits to */
	uint64_t bytes; /* budget bytes of the stream's body */
};

struct edge_h2 {
	uint32_t tokens;        /* reset budget left */
	uint64_t refill_ms;     /* loop time of the last refill */
	uint32_t n;             /* used entries of counts[] */
	uint64_t untracked;     /* budget bytes of streams past counts[] */
	bool refused;
	struct h2_count counts[H2_TRACKED];
};

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void rt_edge_h2_start(struct edge_conn *e)
{
	if (e->h2 != NULL)
		return;
	e->h2 = calloc(1, sizeof(*e->h2));
	if (e->h2 == NULL)
		return; /* no HTTP/2 edge for this connection; h2o's limits stand */
	e->h2->tokens = RESET_BURST;
	e->h2->refill_ms = h2o_now(h2o_socket_get_loop(e->sock));
	/* h2o parses what is already buffered at once, past the read wrapper. */
	rt_edge_h2_before_read(e);
}

static struct h2_count *find(struct edge_h2 *h, uint32_t id)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->counts[i].stream_id == id)
			return &h->counts[i];
	return NULL;
}

static void drop(struct edge_h2 *h, struct h2_count *c)
{
	rt_edge_budget_give(c->bytes);
	*c = h->counts[--h->n];
}

/* Cuts the input at `cut` and appends the frame header that makes h2o
 * send GOAWAY and close (see the file comment). */
static void refuse(struct edge_conn *e, size_t cut, const char *why)
{
	static const char bad[9] = {'\xff', '\xff', '\xff', 0, 0, 0, 0, 0, 1};
	h2o_buffer_t **in = &e->sock->input;
	(*in)->size = cut;
	h2o_iovec_t room = h2o_buffer_reserve(in, sizeof(bad));
	if (room.base != NULL) {
		memcpy(room.base, bad, sizeof(bad));
		(*in)->size += sizeof(bad);
	}
	e->h2->refused = true;
	rt_edge.h2_refused++;
	sy_debug("edge: HTTP/2 connection refused: %s", why);
}

static void refill(struct edge_conn *e)
{
	struct edge_h2 *h = e->h2;
	uint64_t now = h2o_now(h2o_socket_get_loop(e->sock));
	if (now <= h->refill_ms)
		return;
	uint64_t add = (now - h->refill_ms) * RESET_PER_SEC / 1000;
	if (add == 0)
		return;
	h->tokens = h->tokens + add >= RESET_BURST ? RESET_BURST : h->tokens + (uint32_t)add;
	h->refill_ms = now;
}

static bool on_rst(struct edge_conn *e, uint32_t id)
{
	struct edge_h2 *h = e->h2;
	if (h->tokens == 0) {
		refill(e);
		if (h->tokens == 0)
			return false;
	}
	h->tokens--;
	struct h2_count *c = find(h, id);
	if (c != NULL && !c->complete)
		drop(h, c); /* h2o frees the body of a stream reset while it arrives */
	return true;
}

static bool on_data(struct edge_conn *e, uint32_t id, uint8_t flags, const uint8_t *p,
		    uint32_t len)
{
	struct edge_h2 *h = e->h2;
	uint64_t n = len;
	if (flags & FL_PADDED)
		n = len >= 1u + p[0] ? len - 1u - p[0] : 0;
	struct h2_count *c = find(h, id);
	if (c == NULL && h->n < H2_TRACKED) {
		c = &h->counts[h->n++];
		*c = (struct h2_count){.stream_id = id};
	}
	uint64_t have = c != NULL ? c->bytes : 0;
	if (have >= rt_edge.h2_stream_limit)
		n = 0; /* h2o refuses the stream past its own limit; holds no more */
	else if (n > rt_edge.h2_stream_limit - have)
		n = rt_edge.h2_stream_limit - have;
	if (n > 0 && !rt_edge_budget_take(n))
		return false;
	if (c != NULL) {
		c->bytes += n;
		if (flags & FL_END_STREAM)
			c->complete = true;
	} else
		h->untracked += n;
	return true;
}

int rt_edge_h2_before_read(struct edge_conn *e)
{
	struct edge_h2 *h = e->h2;
	if (h == NULL || h->refused)
		return 0;
	const h2o_buffer_t *in = e->sock->input;
	const uint8_t *b = (const uint8_t *)in->bytes;
	size_t size = in->size, off = 0;
	if (size == 0)
		return 0;
	if (b[0] == 'P') { /* no frame starts so: a length past the maximum */
		if (size < sizeof(PREFACE) - 1)
			return 0;
		off = sizeof(PREFACE) - 1;
	}
	while (off + 9 <= size) {
		uint32_t len = (uint32_t)b[off] << 16 | (uint32_t)b[off + 1] << 8 | b[off + 2];
		uint8_t type = b[off + 3], flags = b[off + 4];
		uint32_t id = ((uint32_t)b[off + 5] << 24 | (uint32_t)b[off + 6] << 16 |
			       (uint32_t)b[off + 7] << 8 | b[off + 8]) & 0x7fffffffu;
		if (len > H2_MAX_FRAME || off + 9 + len > size)
			break; /* h2o refuses it / not complete yet */
		if (type == F_RST_STREAM && !on_rst(e, id)) {
			refuse(e, off, "stream resets past the budget");
			return -1;
		}
		if (type == F_DATA && id != 0 && !on_data(e, id, flags, b + off + 9, len)) {
			refuse(e, off, "request bodies past the process budget");
			return -1;
		}
		off += 9 + len;
	}
	return 0;
}

uint64_t rt_edge_h2_adopt(struct edge_conn *e, h2o_req_t *req)
{
	struct edge_h2 *h = e->h2;
	for (uint32_t i = 0; i < h->n; i++) {
		struct h2_count *c = &h->counts[i];
		if (c->complete && c->bytes == req->entity.len) {
			/* Complete streams of equal length are interchangeable here. */
			uint64_t n = c->bytes;
			*c = h->counts[--h->n];
			return n;
		}
	}
	return 0;
}

void rt_edge_h2_close(struct edge_conn *e)
{
	struct edge_h2 *h = e->h2;
	if (h == NULL)
		return;
	while (h->n > 0)
		drop(h, &h->counts[h->n - 1]);
	rt_edge_budget_give(h->untracked);
	free(h);
	e->h2 = NULL;
}

uint64_t rt_edge_h2_refused(void) { return rt_edge.h2_refused; }
