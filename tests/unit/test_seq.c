/* test_seq.c — receiver sequencing (statebus/daemon/seq.c) against
 * sglang-wire.md §9 and policy-defaults.md §12 scenarios 22–23, with exact
 * counter values. A tiny driver plays the subscriber's part: apply on
 * APPLY, count the loss on GAP (no replay), clear the rank on RESET and
 * RESTART. */
#include <check.h>

#include "seq.h"
#include "sy_check.h"

struct drive {
	struct statebus_stream s;
	int64_t applied[16]; /* seqs applied, in order */
	int n_applied;
	int clears;        /* rank clears (reset or restart) */
};

static void feed(struct drive *d, int64_t seq)
{
	switch (sbd_seq_admit(&d->s, seq)) {
	case SBD_SEQ_GAP:
		sbd_seq_gap_lost(&d->s, seq);
		/* applied anyway (no replay) */
		__attribute__((fallthrough));
	case SBD_SEQ_APPLY:
		if (d->n_applied < 16)
			d->applied[d->n_applied++] = seq;
		sbd_seq_commit(&d->s, seq);
		break;
	case SBD_SEQ_RESTART:
		d->clears++;
		if (d->n_applied < 16)
			d->applied[d->n_applied++] = seq;
		sbd_seq_commit(&d->s, seq);
		break;
	case SBD_SEQ_RESET:
		d->clears++;
		break;
	case SBD_SEQ_SKIP:
		break;
	}
}

static struct drive fresh(void)
{
	struct drive d = {0};
	sbd_seq_init(&d.s, 1);
	return d;
}

START_TEST(test_first_batch_sets_cursor_without_a_gap)
{
	struct drive d = fresh();
	ck_assert_int_eq(d.s.cursor, -1);
	feed(&d, 2);
	ck_assert_int_eq(d.s.cursor, 2);
	ck_assert_uint_eq(d.s.gaps, 0);
	ck_assert_uint_eq(d.s.missing, 0);
	ck_assert(!d.s.untrusted);
}
END_TEST

START_TEST(test_gap_seq_2_then_5_counts_two_missing_and_applies)
{
	struct drive d = fresh();
	feed(&d, 2);
	feed(&d, 1); /* filtered: stale */
	feed(&d, 5);
	ck_assert_uint_eq(d.s.gaps, 1);
	ck_assert_uint_eq(d.s.missing, 2); /* 3 and 4 (scenario 23: batches_lost = 2) */
	ck_assert_uint_eq(d.s.skipped, 1);
	ck_assert_int_eq(d.s.cursor, 5);
	ck_assert_int_eq(d.n_applied, 2);
	ck_assert_int_eq(d.applied[1], 5);
	ck_assert(d.s.untrusted);
	ck_assert_uint_eq(d.s.batches, 2);
}
END_TEST

START_TEST(test_seq_zero_behind_cursor_restarts_the_rank)
{
	/* scenario 22: seq 9 (hash 11), then seq 0 (22), seq 1 (33) */
	struct drive d = fresh();
	feed(&d, 9);
	feed(&d, 0);
	feed(&d, 1);
	ck_assert_int_eq(d.clears, 1); /* 11 gone */
	ck_assert_int_eq(d.n_applied, 3);
	ck_assert_int_eq(d.s.cursor, 1);
	ck_assert_uint_eq(d.s.resets, 1);
	ck_assert_uint_eq(d.s.gaps, 0);
	ck_assert(!d.s.untrusted);
}
END_TEST

START_TEST(test_stale_seq_is_skipped_and_marks_untrusted)
{
	struct drive d = fresh();
	feed(&d, 9);
	feed(&d, 3);
	ck_assert_int_eq(d.s.cursor, 9);
	ck_assert_uint_eq(d.s.skipped, 1);
	ck_assert(d.s.untrusted);
	ck_assert_int_eq(d.n_applied, 1);
	feed(&d, 9); /* a duplicate is stale too */
	ck_assert_uint_eq(d.s.skipped, 2);
}
END_TEST

START_TEST(test_end_seq_resets_and_next_seq_applies_without_gap)
{
	struct drive d = fresh();
	feed(&d, 4);
	feed(&d, 7); /* gap: untrusted */
	ck_assert(d.s.untrusted);
	feed(&d, -1);
	ck_assert_int_eq(d.s.cursor, -1);
	ck_assert_uint_eq(d.s.resets, 1);
	ck_assert_int_eq(d.clears, 1);
	ck_assert(!d.s.untrusted); /* cleared by the reset */
	feed(&d, 1); /* scenario 22: after a PublisherReset, seq 1 applies */
	ck_assert_int_eq(d.s.cursor, 1);
	ck_assert_uint_eq(d.s.gaps, 1); /* only the earlier one */
	ck_assert_uint_eq(d.s.missing, 2);
}
END_TEST

START_TEST(test_untrusted_cleared_by_all_blocks_cleared)
{
	struct drive d = fresh();
	feed(&d, 0);
	feed(&d, 3);
	ck_assert(d.s.untrusted);
	sbd_seq_cleared(&d.s);
	ck_assert(!d.s.untrusted);
	ck_assert_uint_eq(d.s.gaps, 1);
	ck_assert_uint_eq(d.s.missing, 2);
}
END_TEST

START_TEST(test_in_order_stream_counts_nothing)
{
	struct drive d = fresh();
	for (int i = 0; i < 10; i++)
		feed(&d, i);
	ck_assert_int_eq(d.s.cursor, 9);
	ck_assert_uint_eq(d.s.gaps + d.s.missing + d.s.resets + d.s.skipped, 0);
	ck_assert_uint_eq(d.s.batches, 10);
}
END_TEST

/* A rank whose first batch is seq 0 is complete; otherwise partial until a
 * reset from 0 or an AllBlocksCleared (sglang-wire.md §9 slow joiner). */
START_TEST(test_partial_when_the_first_batch_is_not_seq_0)
{
	struct drive d = fresh();
	feed(&d, 0);
	ck_assert(!d.s.partial);
	d = fresh();
	feed(&d, 3);
	ck_assert(d.s.partial);
	feed(&d, 4);
	ck_assert(d.s.partial);
	feed(&d, 0); /* restart in place: cleared, complete again */
	ck_assert(!d.s.partial);
	feed(&d, 1);
	feed(&d, 5);
	ck_assert(!d.s.partial); /* a gap makes it untrusted, not partial */
	ck_assert(d.s.untrusted);
	sbd_seq_cleared(&d.s);
	ck_assert(!d.s.partial && !d.s.untrusted);
}
END_TEST

/* switchyard extension of §9: after the SUB lost its peer and connected
 * again, the stream starts over like a new subscription (the caller clears
 * the rank): the first batch sets the cursor without a gap and without a
 * skip, whatever its seq; counts are kept. */
START_TEST(test_resubscribe_starts_the_stream_over)
{
	struct drive d = fresh();
	for (int q = 0; q < 6; q++)
		feed(&d, q);
	feed(&d, 9); /* gap: 3 missing, untrusted */
	ck_assert_uint_eq(d.s.missing, 3);
	sbd_seq_resubscribe(&d.s);
	ck_assert_int_eq(d.s.cursor, -1);
	ck_assert(!d.s.untrusted && !d.s.partial);
	feed(&d, 2); /* new process: seq 0 and 1 were published before we reconnected */
	ck_assert_int_eq(d.s.cursor, 2);
	ck_assert_uint_eq(d.s.gaps, 1);
	ck_assert_uint_eq(d.s.missing, 3);
	ck_assert_uint_eq(d.s.skipped, 0);
	ck_assert(d.s.partial);
	ck_assert_uint_eq(d.s.resets, 0); /* not a publisher signal */
}
END_TEST

/* The last int64 seq, then 0: a publisher restart, not a gap of 2^63
 * batches (cursor + 1 would overflow there). */
START_TEST(test_seq_zero_after_int64_max_is_a_restart_not_a_gap)
{
	struct drive d = fresh();
	feed(&d, INT64_MAX - 1);
	feed(&d, INT64_MAX);
	ck_assert_int_eq(d.s.cursor, INT64_MAX);
	ck_assert_uint_eq(d.s.gaps, 0);
	ck_assert_uint_eq(d.s.missing, 0);
	feed(&d, 0);
	ck_assert_int_eq(d.clears, 1);
	ck_assert_uint_eq(d.s.resets, 1);
	ck_assert_uint_eq(d.s.gaps, 0);
	ck_assert_uint_eq(d.s.missing, 0);
	ck_assert_int_eq(d.s.cursor, 0);
	ck_assert(!d.s.untrusted);
	feed(&d, 1);
	ck_assert_int_eq(d.s.cursor, 1);
	ck_assert_uint_eq(d.s.skipped, 0);
}
END_TEST

/* A small seq other than 0 behind INT64_MAX is stale (skipped), and a
 * duplicate of INT64_MAX is too: no verdict forms cursor + 1. */
START_TEST(test_seqs_behind_int64_max_are_skipped_without_overflow)
{
	struct drive d = fresh();
	feed(&d, INT64_MAX);
	feed(&d, INT64_MAX);
	feed(&d, 1);
	ck_assert_uint_eq(d.s.skipped, 2);
	ck_assert_uint_eq(d.s.gaps, 0);
	ck_assert_uint_eq(d.s.missing, 0);
	ck_assert_int_eq(d.s.cursor, INT64_MAX);
}
END_TEST

/* The widest gaps of the int64 range: 0 then INT64_MAX loses INT64_MAX - 1
 * batches; the counter saturates instead of wrapping. */
START_TEST(test_widest_gap_counts_exactly_and_missing_saturates)
{
	struct drive d = fresh();
	feed(&d, 0);
	feed(&d, INT64_MAX);
	ck_assert_uint_eq(d.s.gaps, 1);
	ck_assert_uint_eq(d.s.missing, (uint64_t)INT64_MAX - 1);
	ck_assert_int_eq(d.s.cursor, INT64_MAX);
	for (int i = 0; i < 3; i++) {
		feed(&d, 0); /* restart */
		feed(&d, INT64_MAX);
	}
	ck_assert_uint_eq(d.s.gaps, 4);
	ck_assert_uint_eq(d.s.missing, UINT64_MAX);
	ck_assert_uint_eq(d.s.resets, 3);
	/* a gap reported up to a seq not ahead of the cursor counts nothing */
	sbd_seq_gap_lost(&d.s, INT64_MAX);
	sbd_seq_gap_lost(&d.s, INT64_MIN);
	ck_assert_uint_eq(d.s.gaps, 4);
}
END_TEST

/* Negative seqs other than END_SEQ (u64 above INT64_MAX on the wire) are
 * skipped whatever the cursor, INT64_MIN included. */
START_TEST(test_negative_seqs_are_skipped_at_any_cursor)
{
	struct drive d = fresh();
	feed(&d, INT64_MIN);
	ck_assert_int_eq(d.s.cursor, -1);
	feed(&d, INT64_MAX);
	feed(&d, INT64_MIN);
	feed(&d, -2);
	ck_assert_uint_eq(d.s.skipped, 3);
	ck_assert_int_eq(d.s.cursor, INT64_MAX);
	ck_assert_uint_eq(d.s.missing, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("seq");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_first_batch_sets_cursor_without_a_gap);
	tcase_add_test(tc, test_gap_seq_2_then_5_counts_two_missing_and_applies);
	tcase_add_test(tc, test_seq_zero_behind_cursor_restarts_the_rank);
	tcase_add_test(tc, test_stale_seq_is_skipped_and_marks_untrusted);
	tcase_add_test(tc, test_end_seq_resets_and_next_seq_applies_without_gap);
	tcase_add_test(tc, test_untrusted_cleared_by_all_blocks_cleared);
	tcase_add_test(tc, test_in_order_stream_counts_nothing);
	tcase_add_test(tc, test_partial_when_the_first_batch_is_not_seq_0);
	tcase_add_test(tc, test_resubscribe_starts_the_stream_over);
	tcase_add_test(tc, test_seq_zero_after_int64_max_is_a_restart_not_a_gap);
	tcase_add_test(tc, test_seqs_behind_int64_max_are_skipped_without_overflow);
	tcase_add_test(tc, test_widest_gap_counts_exactly_and_missing_saturates);
	tcase_add_test(tc, test_negative_seqs_are_skipped_at_any_cursor);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sy_check_run(suite());
}
