/* timer.c — binary min-heap of embedded timers (see timer.h). */
#include "tools/mock-engine/timer.h"

#include <stdlib.h>

#include "common/errors.h"

static void place(struct mock_timers *ts, size_t i, struct mock_timer *t)
{
	ts->heap[i] = t;
	t->idx = i + 1;
}

static void sift_up(struct mock_timers *ts, size_t i)
{
	struct mock_timer *t = ts->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (ts->heap[p]->due_us <= t->due_us)
			break;
		place(ts, i, ts->heap[p]);
		i = p;
	}
	place(ts, i, t);
}

static void sift_down(struct mock_timers *ts, size_t i)
{
	struct mock_timer *t = ts->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t best = t->due_us;
		if (l < ts->n && ts->heap[l]->due_us < best) {
			m = l;
			best = ts->heap[l]->due_us;
		}
		if (r < ts->n && ts->heap[r]->due_us < best)
			m = r;
		if (m == i)
			break;
		place(ts, i, ts->heap[m]);
		i = m;
	}
	place(ts, i, t);
}

void mock_timer_cancel(struct mock_timers *ts, struct mock_timer *t)
{
	if (!t->idx)
		return;
	size_t i = t->idx - 1;
	t->idx = 0;
	ts->n--;
	if (i == ts->n)
		return;
	place(ts, i, ts->heap[ts->n]);
	if (i > 0 && ts->heap[(i - 1) / 2]->due_us > ts->heap[i]->due_us)
		sift_up(ts, i);
	else
		sift_down(ts, i);
}

int mock_timer_arm(struct mock_timers *ts, struct mock_timer *t, uint64_t due_us,
		   mock_timer_cb cb)
{
	mock_timer_cancel(ts, t);
	if (ts->n == ts->cap) {
		size_t nc = ts->cap ? ts->cap * 2 : 64;
		struct mock_timer **nh = realloc(ts->heap, nc * sizeof(*nh));
		if (!nh)
			return SY_ENOMEM;
		ts->heap = nh;
		ts->cap = nc;
	}
	t->due_us = due_us;
	t->cb = cb;
	place(ts, ts->n++, t);
	sift_up(ts, ts->n - 1);
	return 0;
}

uint64_t mock_timers_next(const struct mock_timers *ts)
{
	return ts->n ? ts->heap[0]->due_us : UINT64_MAX;
}

size_t mock_timers_run(struct mock_timers *ts, uint64_t now_us)
{
	size_t fired = 0;
	while (ts->n && ts->heap[0]->due_us <= now_us) {
		struct mock_timer *t = ts->heap[0];
		mock_timer_cancel(ts, t);
		t->cb(t);
		fired++;
	}
	return fired;
}

void mock_timers_free(struct mock_timers *ts)
{
	free(ts->heap);
	*ts = (struct mock_timers){0};
}
