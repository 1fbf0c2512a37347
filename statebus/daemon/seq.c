/* seq.c — receiver sequencing (see seq.h; sglang-wire.md §9).
 *
 * Arithmetic over the whole int64 range: a verdict compares seq with the
 * cursor only once both are known to be ≥ 0, where seq - cursor cannot
 * overflow; cursor + 1 is never formed (it overflows at INT64_MAX). The
 * counters saturate at UINT64_MAX instead of wrapping.
 */
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
	/* both ≥ 0 here: the difference is in [-INT64_MAX, INT64_MAX] */
	int64_t ahead = seq - s->cursor;
	if (ahead == 1)
		return SBD_SEQ_APPLY;
	if (ahead > 1)
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

static void add_sat(uint64_t *c, uint64_t n)
{
	*c = *c > UINT64_MAX - n ? UINT64_MAX : *c + n;
}

void sbd_seq_gap_lost(struct statebus_stream *s, int64_t to)
{
	if (s->cursor >= 0 && to > s->cursor && to - s->cursor > 1) {
		add_sat(&s->gaps, 1);
		add_sat(&s->missing, (uint64_t)(to - s->cursor - 1));
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
