/* seq.c — receiver sequencing (see seq.h; sglang-wire.md §9). */
#include <string.h>

#include "seq.h"

void sbd_seq_init(struct statebus_stream *s, uint32_t gen)
{
	memset(s, 0, sizeof(*s));
	s->cursor = -1;
	s->worker_gen = gen;
}

enum sbd_seq_verdict sbd_seq_admit(struct statebus_stream *s, int64_t seq)
{
	if (seq == SBD_END_SEQ) {
		s->cursor = -1;
		s->resets++;
		s->untrusted = 0;
		return SBD_SEQ_RESET;
	}
	if (seq < 0) { /* other negative values: not a real seq (as u64: > i64 max) */
		s->skipped++;
		s->untrusted = 1;
		return SBD_SEQ_SKIP;
	}
	if (s->cursor < 0) {
		/* the rank is empty here: complete only if the stream starts at 0 */
		s->partial = seq != 0;
		return SBD_SEQ_APPLY;
	}
	if (seq == s->cursor + 1)
		return SBD_SEQ_APPLY;
	if (seq > s->cursor + 1)
		return SBD_SEQ_GAP;
	if (seq == 0) {
		s->cursor = -1;
		s->resets++;
		s->untrusted = 0;
		s->partial = 0;
		return SBD_SEQ_RESTART;
	}
	s->skipped++;
	s->untrusted = 1;
	return SBD_SEQ_SKIP;
}

void sbd_seq_gap_lost(struct statebus_stream *s, int64_t to)
{
	if (s->cursor >= 0 && to > s->cursor + 1) {
		s->gaps++;
		s->missing += (uint64_t)(to - s->cursor - 1);
		s->untrusted = 1;
	}
}

void sbd_seq_commit(struct statebus_stream *s, int64_t seq)
{
	if (seq > s->cursor)
		s->cursor = seq;
	s->batches++;
}

void sbd_seq_cleared(struct statebus_stream *s)
{
	s->untrusted = 0;
	s->partial = 0;
}

void sbd_seq_resubscribe(struct statebus_stream *s)
{
	s->cursor = -1;
	s->untrusted = 0;
	s->partial = 0;
}
