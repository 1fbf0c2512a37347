/* seq.h — receiver sequencing of one KV-event stream (sglang-wire.md §9).
 *
 * Pure bookkeeping, no sockets and no index: the subscriber asks what to do
 * with an arriving seq and acts on the verdict (apply, clear the rank,
 * replay). Counters are those of struct statebus_stream, kept by value in
 * the caller and published to the region's streams table.
 *
 *   arriving seq                 verdict            state change here
 *   cursor == -1 (first / reset) SBD_SEQ_APPLY      none (commit sets cursor)
 *   cursor + 1                   SBD_SEQ_APPLY      none
 *   > cursor + 1                 SBD_SEQ_GAP        none: replay [cursor+1, seq),
 *                                                   or sbd_seq_gap_lost() then apply
 *   END_SEQ (-1)                 SBD_SEQ_RESET      cursor -1, resets +1, trusted
 *   0 while cursor ≥ 0           SBD_SEQ_RESTART    cursor -1, resets +1, trusted;
 *     (also after INT64_MAX)                        caller clears the rank, applies
 *   other seq ≤ cursor           SBD_SEQ_SKIP       skipped +1, untrusted
 *   other negative seq           SBD_SEQ_SKIP       skipped +1, untrusted
 * Every seq in the int64 range is classified without overflow; gaps and
 * missing saturate at UINT64_MAX.
 * The first batch after subscribing sets the cursor without a gap (seq 2
 * then 5 → 2 missing, not 4); it also sets `partial` = (seq != 0): the rank
 * is empty whenever the cursor is -1, so a stream that does not start at
 * 0 misses what was stored before it. Untrusted is cleared only by a reset or an
 * AllBlocksCleared (sbd_seq_cleared).
 */
#ifndef SY_STATEBUS_DAEMON_SEQ_H
#define SY_STATEBUS_DAEMON_SEQ_H

#include <stdint.h>

#include "statebus-t.h"

#define SBD_END_SEQ INT64_C(-1)

enum sbd_seq_verdict {
	SBD_SEQ_APPLY = 0,
	SBD_SEQ_GAP = 1,
	SBD_SEQ_RESET = 2,
	SBD_SEQ_RESTART = 3,
	SBD_SEQ_SKIP = 4,
};

/* Starts a stream: cursor -1, counts zero, worker_gen = gen. */
void sbd_seq_init(struct statebus_stream *s, uint32_t gen);

/* Classifies arriving `seq` (and updates s as in the table above). */
enum sbd_seq_verdict sbd_seq_admit(struct statebus_stream *s, int64_t seq);

/* Records a forward gap that replay did not fill: gaps +1, missing +=
 * to - cursor - 1 (when to > cursor + 1; both saturating), untrusted. `to`
 * is the seq that revealed the gap; any int64 is accepted (nothing is
 * counted unless it is ahead of a cursor ≥ 0 by more than one). */
void sbd_seq_gap_lost(struct statebus_stream *s, int64_t to);

/* A batch with `seq` was applied: cursor = seq, batches +1. */
void sbd_seq_commit(struct statebus_stream *s, int64_t seq);

/* An AllBlocksCleared was applied: the stream is trusted and complete
 * again (partial 0). */
void sbd_seq_cleared(struct statebus_stream *s);

/* The SUB lost its peer and connected again; the caller cleared the rank.
 * The stream starts over like a new subscription: cursor -1 (the next
 * batch sets it without a gap), trusted, not partial; counts are kept.
 * (switchyard extension of sglang-wire.md §9, docs/statebus.md.) */
void sbd_seq_resubscribe(struct statebus_stream *s);

#endif
