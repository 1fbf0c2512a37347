/* publisher.c — ZeroMQ PUB + replay ROUTER of one stream (see publisher.h). */
#include "tools/mock-engine/publisher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/cursor.h"
#include "common/errors.h"
#include "common/log.h"

static void *bind_socket(void *zctx, int type, const char *host, int port, int hwm,
			 int linger_ms)
{
	void *s = zmq_socket(zctx, type);
	if (!s)
		return NULL;
	zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(s, ZMQ_LINGER, &linger_ms, sizeof(linger_ms));
	char ep[300];
	snprintf(ep, sizeof(ep), "tcp://%s:%d", host, port);
	if (zmq_bind(s, ep) != 0) {
		sy_error("cannot bind %s: %s", ep, zmq_strerror(errno));
		zmq_close(s);
		return NULL;
	}
	return s;
}

int mock_pub_open(struct mock_pub *p, void *zctx, const char *host, int port, int replay_port,
		  const char *topic, int hwm, int linger_ms, size_t buffer_steps,
		  int replay_frames)
{
	memset(p, 0, sizeof(*p));
	p->replay_frames = replay_frames == 3 ? 3 : 4;
	p->topic = strdup(topic ? topic : "");
	if (!p->topic)
		return SY_ENOMEM;
	p->topic_len = strlen(p->topic);
	p->pub = bind_socket(zctx, ZMQ_PUB, host, port, hwm, linger_ms);
	if (!p->pub)
		return SY_EIO;
	if (replay_port > 0) {
		p->replay = bind_socket(zctx, ZMQ_ROUTER, host, replay_port, 100000, 0);
		if (!p->replay)
			return SY_EIO;
		p->ring_cap = buffer_steps ? buffer_steps : 1;
		p->ring = calloc(p->ring_cap, sizeof(*p->ring));
		if (!p->ring)
			return SY_ENOMEM;
	}
	return 0;
}

static void send3(void *s, const void *a, size_t al, const void *b, size_t bl, const void *c,
		  size_t cl)
{
	zmq_send(s, a, al, ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(s, b, bl, ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(s, c, cl, ZMQ_DONTWAIT);
}

int64_t mock_pub_send(struct mock_pub *p, const void *payload, size_t len)
{
	int64_t seq = p->next_seq++;
	if (p->ring) {
		void *copy = malloc(len ? len : 1);
		if (!copy)
			return SY_ENOMEM;
		memcpy(copy, payload, len);
		struct mock_pub_entry *e;
		if (p->ring_n == p->ring_cap) { /* drop the oldest */
			e = &p->ring[p->ring_start];
			free(e->data);
			p->ring_start = (p->ring_start + 1) % p->ring_cap;
			p->ring_n--;
		}
		e = &p->ring[(p->ring_start + p->ring_n) % p->ring_cap];
		e->seq = seq;
		e->data = copy;
		e->len = len;
		p->ring_n++;
	}
	if (p->skip_every && (uint64_t)(seq + 1) % p->skip_every == 0) {
		p->skipped++;
		return seq;
	}
	uint8_t s8[8];
	sy_put_u64be(s8, (uint64_t)seq);
	send3(p->pub, p->topic, p->topic_len, s8, 8, payload, len);
	p->sent++;
	return seq;
}

void mock_pub_reset(struct mock_pub *p, bool sentinel)
{
	if (sentinel) {
		uint8_t s8[8];
		sy_put_u64be(s8, (uint64_t)(int64_t)MOCK_END_SEQ);
		send3(p->pub, p->topic, p->topic_len, s8, 8, "", 0);
	}
	p->next_seq = 0;
	for (size_t i = 0; i < p->ring_n; i++)
		free(p->ring[(p->ring_start + i) % p->ring_cap].data);
	p->ring_start = p->ring_n = 0;
}

static void reply(struct mock_pub *p, const zmq_msg_t *id, const uint8_t s8[8],
		  const void *payload, size_t len)
{
	zmq_send(p->replay, zmq_msg_data((zmq_msg_t *)id), zmq_msg_size((zmq_msg_t *)id),
		 ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(p->replay, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
	if (p->replay_frames == 4)
		zmq_send(p->replay, p->topic, p->topic_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(p->replay, s8, 8, ZMQ_SNDMORE | ZMQ_DONTWAIT);
	zmq_send(p->replay, payload, len, ZMQ_DONTWAIT);
}

/* Reads one whole request; returns false when none is pending. */
static bool handle_one(struct mock_pub *p)
{
	zmq_msg_t parts[4];
	int n = 0, more = 1;
	bool got = false;
	while (more) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, p->replay, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			break;
		}
		got = true;
		more = zmq_msg_more(&m);
		if (n < 4)
			parts[n++] = m;
		else
			zmq_msg_close(&m);
	}
	if (!got)
		return false;
	/* [identity, "", start8] (REQ/DEALER with delimiter) or [identity, start8]. */
	const zmq_msg_t *start = NULL;
	if (n == 3 && zmq_msg_size(&parts[1]) == 0 && zmq_msg_size(&parts[2]) == 8)
		start = &parts[2];
	else if (n == 2 && zmq_msg_size(&parts[1]) == 8)
		start = &parts[1];
	if (start) {
		int64_t from = (int64_t)sy_get_u64be(zmq_msg_data((zmq_msg_t *)start));
		uint8_t s8[8];
		for (size_t i = 0; i < p->ring_n; i++) {
			const struct mock_pub_entry *e = &p->ring[(p->ring_start + i) % p->ring_cap];
			if (e->seq < from)
				continue;
			sy_put_u64be(s8, (uint64_t)e->seq);
			reply(p, &parts[0], s8, e->data, e->len);
		}
		sy_put_u64be(s8, (uint64_t)(int64_t)MOCK_END_SEQ);
		reply(p, &parts[0], s8, "", 0);
		p->replays++;
	} else {
		sy_warn("replay: ignoring a malformed request of %d frames", n);
	}
	for (int i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return true;
}

void mock_pub_replay_poll(struct mock_pub *p)
{
	if (!p->replay)
		return;
	while (handle_one(p))
		;
}

int mock_pub_replay_fd(struct mock_pub *p)
{
	if (!p->replay)
		return -1;
	int fd = -1;
	size_t sz = sizeof(fd);
	if (zmq_getsockopt(p->replay, ZMQ_FD, &fd, &sz) != 0)
		return -1;
	return fd;
}

void mock_pub_close(struct mock_pub *p)
{
	if (p->pub)
		zmq_close(p->pub);
	if (p->replay)
		zmq_close(p->replay);
	if (p->ring) {
		for (size_t i = 0; i < p->ring_n; i++)
			free(p->ring[(p->ring_start + i) % p->ring_cap].data);
		free(p->ring);
	}
	free(p->topic);
	memset(p, 0, sizeof(*p));
}
