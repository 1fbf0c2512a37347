/* publisher.h — one ZeroMQ PUB stream of one DP rank (KV events or LoadStat),
 * with an optional replay ROUTER and bounded replay buffer.
 *
 * Frames (sglang-wire.md §2): [topic, seq (8 bytes BE), payload]. Sequence
 * numbers are dense from 0 per stream generation; a reset publishes
 * END_SEQ (−1, eight 0xFF bytes) with an empty payload and starts again at
 * 0 with an empty replay buffer.
 *
 * Replay (§3): the ROUTER receives [identity, "", start_seq8] and answers,
 * for each buffered batch with seq ≥ start, [identity, "", topic, seq8,
 * payload] (4-frame, newer) or [identity, "", seq8, payload] (3-frame,
 * older), then the terminator with END_SEQ in the seq position and an empty
 * payload. The buffer keeps the last `buffer_steps` batches.
 *
 * Gap fault: with skip_every = N > 0, every N-th batch (seq N−1, 2N−1, ...)
 * is buffered for replay but not sent on the PUB, as an HWM drop would.
 * Single-threaded: called from the main loop only.
 */
#ifndef SY_MOCK_PUBLISHER_H
#define SY_MOCK_PUBLISHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOCK_END_SEQ (-1)

struct mock_pub_entry {
	int64_t seq;
	void *data; /* malloc'ed payload copy */
	size_t len;
};

struct mock_pub {
	void *pub;                   /* ZMQ_PUB, bound on tcp://host:port */
	void *replay;                /* ZMQ_ROUTER or NULL */
	char *topic;                 /* owned copy */
	size_t topic_len;
	int64_t next_seq;
	struct mock_pub_entry *ring; /* replay buffer, ring_cap entries */
	size_t ring_cap, ring_start, ring_n;
	int replay_frames;           /* 3 or 4 */
	unsigned skip_every;         /* gap fault; 0 = off */
	uint64_t sent, skipped, replays;
};

/* Opens the PUB on tcp://host:port (SNDHWM `hwm`, LINGER `linger_ms`) and,
 * when replay_port > 0, a ROUTER on tcp://host:replay_port with a buffer of
 * `buffer_steps` batches answered in `replay_frames` (3|4) form.
 * Returns 0, or SY_EIO (bind failed, logged), SY_ENOMEM. */
int mock_pub_open(struct mock_pub *p, void *zctx, const char *host, int port, int replay_port,
		  const char *topic, int hwm, int linger_ms, size_t buffer_steps,
		  int replay_frames);

/* Publishes one payload (copied into the replay buffer when there is one)
 * with the next seq. Returns the seq used, or a negative sy_err. */
int64_t mock_pub_send(struct mock_pub *p, const void *payload, size_t len);

/* Restarts the stream: END_SEQ on the PUB when `sentinel`, then seq 0 and
 * an empty replay buffer. */
void mock_pub_reset(struct mock_pub *p, bool sentinel);

/* Answers every pending replay request (non-blocking). */
void mock_pub_replay_poll(struct mock_pub *p);

/* The ROUTER's ZMQ_FD (to wake the loop), or −1 without replay. */
int mock_pub_replay_fd(struct mock_pub *p);

/* Closes both sockets and frees the buffer. */
void mock_pub_close(struct mock_pub *p);

#endif
