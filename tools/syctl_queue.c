/* syctl_queue.c — `syctl queue`: the router queue's rows of the region
 * (statebus-queue.h): per router process the requests waiting by class,
 * the concurrency tokens held and how requests left the queue; totals and
 * the wake counter sum.
 *
 * JSON: {"waiting": n, "running": n, "wakes": n,
 *        "procs": [{"slot": S, "pid": P, "waiting": {"system": n,
 *                   "interactive": n, "default": n, "bulk": n},
 *                   "running": n, "outcomes": {"admitted": n, "timed_out": n,
 *                   "cancelled": n, "rejected_full": n}}]}
 * Only router process slots are listed. */
#include <inttypes.h>
#include <stdio.h>

#include "statebus-queue.h"
#include "tools/syctl.h"

static const char *const class_names[STATEBUS_QCLASS_COUNT_] = {"system", "interactive",
								 "default", "bulk"};
static const char *const outcome_names[STATEBUS_QOUT_COUNT_] = {"admitted", "timed_out",
								  "cancelled", "rejected_full"};

int syctl_cmd_queue(struct statebus_region *r, const struct syctl_opts *o)
{
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	json_t *arr = o->json ? json_array() : NULL;
	if (!o->json)
		printf("%4s %8s %7s %11s %7s %4s %7s %8s %9s %9s %13s\n", "SLOT", "PID", "SYSTEM",
		       "INTERACTIVE", "DEFAULT", "BULK", "RUNNING", "ADMITTED", "TIMED_OUT",
		       "CANCELLED", "REJECTED_FULL");
	for (uint32_t p = 0; p < h.params.max_procs; p++) {
		struct statebus_proc_info pi;
		struct statebus_queue_info qi;
		if (statebus_proc_read(r, p, &pi) != SY_OK || pi.pid == 0 ||
		    pi.role != STATEBUS_PROC_ROUTER || statebus_queue_read(r, p, &qi) != SY_OK)
			continue;
		if (arr == NULL) {
			printf("%4u %8d %7u %11u %7u %4u %7" PRId64 " %8" PRIu64 " %9" PRIu64
			       " %9" PRIu64 " %13" PRIu64 "\n",
			       p, pi.pid, qi.queued[0], qi.queued[1], qi.queued[2], qi.queued[3],
			       qi.running, qi.outcomes[0], qi.outcomes[1], qi.outcomes[2],
			       qi.outcomes[3]);
			continue;
		}
		json_t *w = json_object(), *out = json_object();
		for (unsigned c = 0; c < STATEBUS_QCLASS_COUNT_; c++)
			json_object_set_new(w, class_names[c], json_integer(qi.queued[c]));
		for (unsigned k = 0; k < STATEBUS_QOUT_COUNT_; k++)
			json_object_set_new(out, outcome_names[k],
					    json_integer((json_int_t)qi.outcomes[k]));
		json_t *e = json_object();
		json_object_set_new(e, "slot", json_integer(p));
		json_object_set_new(e, "pid", json_integer(pi.pid));
		json_object_set_new(e, "waiting", w);
		json_object_set_new(e, "running", json_integer(qi.running));
		json_object_set_new(e, "outcomes", out);
		json_array_append_new(arr, e);
	}
	uint64_t waiting = statebus_queue_depth_sum(r);
	int64_t running = statebus_queue_running_sum(r);
	uint64_t wakes = statebus_queue_wakes(r);
	if (arr == NULL) {
		printf("waiting %" PRIu64 ", running (concurrency cap) %" PRId64 ", wakes %" PRIu64
		       "\n", waiting, running, wakes);
		return 0;
	}
	json_t *t = json_object();
	json_object_set_new(t, "waiting", json_integer((json_int_t)waiting));
	json_object_set_new(t, "running", json_integer(running));
	json_object_set_new(t, "wakes", json_integer((json_int_t)wakes));
	json_object_set_new(t, "procs", arr);
	return syctl_emit_json(t);
}
