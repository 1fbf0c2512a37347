/* query.c — the statebus's remote prefix-query endpoint: ZeroMQ ROUTER at
 * statebus.query_endpoint (DESIGN.md §9; protocol in statebus-query.h and
 * docs/query.md). Off when the key is unset.
 *
 * Each readable turn answers up to QUERY_BURST queries from the index
 * (statebus_query_answer: the daemon's own reader slot brackets the walk);
 * queries still queued past that budget, up to QUERY_SHED more, are
 * answered "overloaded" at once — cheap, so KV-event ingest is never
 * starved by a flood and an asker falls back to load instead of waiting
 * for its timeout. A message is [identity, (empty delimiter,) payload];
 * the reply mirrors the envelope. A payload over STATEBUS_QUERY_MAX_BYTES
 * is refused by ZMQ_MAXMSGSIZE (the connection drops; the asker sees a
 * timeout) — the decoder caps everything else.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "common/log.h"
#include "sbd.h"

#define QUERY_BURST 64  /* answered per readable turn */
#define QUERY_SHED 1024 /* answered "overloaded" per turn past the burst */

int sbd_query_open(struct sbd *d, char *err, size_t cap)
{
	const char *ep = d->cfg.statebus.query_endpoint;
	if (ep == NULL)
		return SY_OK;
	if (statebus_query_server_init(&d->qs) != SY_OK) {
		snprintf(err, cap, "query endpoint: out of memory");
		return SY_ENOMEM;
	}
	void *s = zmq_socket(d->zctx, ZMQ_ROUTER);
	int zero = 0;
	int64_t maxmsg = STATEBUS_QUERY_MAX_BYTES + 64;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	int rc = sbd_bind(d, s, ep, "query endpoint", err, cap);
	if (rc != SY_OK) {
		zmq_close(s);
		statebus_query_server_free(&d->qs);
		return rc;
	}
	d->query = s;
	sy_info("prefix queries on %s", ep);
	return SY_OK;
}

void sbd_query_close(struct sbd *d)
{
	if (d->query == NULL)
		return;
	zmq_close(d->query);
	d->query = NULL;
	statebus_query_server_free(&d->qs);
	const char *ep = d->cfg.statebus.query_endpoint;
	if (ep && strncmp(ep, "ipc://", 6) == 0)
		unlink(ep + 6);
}

/* Receives one envelope: frames[0] identity, optional empty delimiter,
 * last = payload. Returns false when nothing is queued. */
static bool recv_one(void *s, zmq_msg_t *id, bool *delim, zmq_msg_t *payload)
{
	zmq_msg_init(id);
	if (zmq_msg_recv(id, s, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(id);
		return false;
	}
	*delim = false;
	zmq_msg_init(payload);
	bool more = zmq_msg_more(id);
	while (more) {
		zmq_msg_close(payload);
		zmq_msg_init(payload);
		if (zmq_msg_recv(payload, s, 0) < 0)
			break;
		more = zmq_msg_more(payload);
		if (more && zmq_msg_size(payload) == 0)
			*delim = true;
	}
	return true;
}

void sbd_query_readable(struct sbd *d)
{
	for (unsigned k = 0; k < QUERY_BURST + QUERY_SHED; k++) {
		zmq_msg_t id, payload;
		bool delim;
		if (!recv_one(d->query, &id, &delim, &payload))
			return;
		int rc = statebus_query_answer(&d->qs, d->r, zmq_msg_data(&payload),
					       zmq_msg_size(&payload), k >= QUERY_BURST);
		if (rc == SY_OK) {
			zmq_msg_send(&id, d->query, ZMQ_SNDMORE | ZMQ_DONTWAIT);
			if (delim)
				zmq_send(d->query, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
			zmq_send(d->query, d->qs.out.buf, d->qs.out.len, ZMQ_DONTWAIT);
		} else {
			sy_warn("prefix query: %s", sy_strerror(rc));
		}
		zmq_msg_close(&id);
		zmq_msg_close(&payload);
	}
}
