/* syctl — inspect (and create/destroy) the switchyard state plane.
 *
 *   syctl [--shm PATH] [--json] COMMAND [options]
 *
 * Commands (index and match in syctl_index.c, affinity in syctl_affinity.c,
 * queue in syctl_queue.c):
 *   create [--max-workers N] [--max-dp-ranks N] [--max-procs N]
 *          [--index-nodes N]
 *                      create and initialise the region (attach if present;
 *                      capacities given that the region does not have are an
 *                      error), then print its header
 *   destroy            unlink the region file (mappings stay until closed)
 *   header             magic, layout, capacities, epochs, incarnation, statebus
 *   workers            the workers table
 *   load               per-worker load view (fresh or unknown) and per-rank records
 *   inflight           per-worker in-flight sums and the rows of each process
 *   readers            process slots (pid, role, published epoch, alive)
 *   index [--worker URL]
 *                      radix index occupancy, counters, blocks per tier of
 *                      each (worker, DP rank)
 *   match --tokens 1,2,... [--block-size N] [--bigram] [--salt S] [--lora NAME]
 *   match --hashes h1,h2,...
 *                      per-(worker, rank) contiguous prefix depth in blocks
 *                      (tokens hashed with the SGLang chain; block size and
 *                      bigram from the workers' records unless given)
 *   predict --worker URL [--dp-rank R] (--tokens ... | --hashes ...)
 *                      push one prediction (the chain as dispatched to that
 *                      worker and rank) into this process's prediction
 *                      ring; the statebus applies it as predicted ownership
 *   streams            KV-event streams per worker × DP rank (cursor, gaps,
 *                      missing, resets, skipped, untrusted, last event age)
 *                      and the statebus's counters
 *   affinity           affinity store: counts, counters, and each binding
 *                      (scope key digest, kind, worker, age, idle, expiry;
 *                      syctl_affinity.c, which documents the JSON shape)
 *   queue              the router queue per router process: waiting by
 *                      class, concurrency tokens, outcomes; wake counter
 *                      (syctl_queue.c, which documents the JSON shape)
 *
 * JSON shapes are stable (scripts rely on them; fields may be added):
 *   workers --json → {"workers": [{"worker": URL, "role": "plain|prefill|decode",
 *                      "healthy": bool (active probe), "health": {"state":
 *                      "unknown|healthy|unhealthy|down|stalled|cb-open|cb-half",
 *                      "down": bool, "down_reason": "connect|reset|timeout"|null,
 *                      "down_age_ms", "stalled": bool, "stalled_age_ms",
 *                      "last_byte_age_ms", "breaker": "closed|open|half_open",
 *                      "cb_failures", "downs", "stalls", "cb_opens",
 *                      "recoveries"}, "cache_signal": "events|predicted|none",
 *                      "predicted": {"blocks": n, "capacity_blocks": n|null,
 *                      "confirmed": n, "expired": n, "evicted": n, ...}, ...}]}
 *   load --json    → {"workers": [{"worker": URL, "fresh": bool,
 *                      "num_running_reqs": n|null, "num_waiting_reqs": n|null,
 *                      "num_used_tokens": n|null, "max_total_num_tokens": n|null,
 *                      ...}]}
 *   match --json   → {"blocks": N, "matches": [{"worker": URL, "dp_rank": R,
 *                      "depth": D, "predicted_depth": P, ...}]}
 *   index --json   → {"nodes": n, "owners": n, ..., "workers": [{"worker": URL,
 *                      "dp_rank": R, "blocks": n, "tiers": {"device": n, ...}}]}
 *   streams --json → {"streams": [{"worker": URL, "dp_rank": R, "cursor": n|null,
 *                      "gaps": n, "missing": n, "resets": n, "skipped": n,
 *                      "decode_failures": n, "untrusted": bool,
 *                      "partial": bool, "last_event_age_ms": n|null, ...}],
 *                     "counters": {"switchyard_kv_event_..._total": n, ...},
 *                     "tallies": {"stored"|"removed"|"cleared":
 *                                 {"GPU"|"CPU_PINNED"|"DISK"|"EXTERNAL"|
 *                                  "untagged"|"unknown": n}}}
 * Values that are unknown (stale, missing or torn load) are JSON null, never 0.
 *
 * syctl never takes the writer lock except for `create`, and reads the
 * workers and load tables through their seqlocks, so it is safe against a
 * running statebus and routers. Exit status: 0 ok, 1 runtime error (message
 * on stderr), 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/errors.h"
#include "statebus.h"
#include "statebus-counters.h"
#include "syctl.h"

static const char *const role_names[] = {"plain", "prefill", "decode"};
static const char *const state_names[] = {"free", "active", "removing"};
static const char *const proc_role_names[] = {"none", "router", "statebus", "tool"};
static const char *const kv_rejected_names[] = {"", "block_size_mismatch", "no_endpoint",
						"bad_facts"};
static const char *const load_reason_names[] = {"", "missing", "stale", "torn", "no_worker"};

#define NAME_OF(table, i) ((size_t)(i) < sizeof(table) / sizeof(table[0]) ? table[i] : "unknown")

static void usage(FILE *f)
{
	fprintf(f,
		"usage: syctl [--shm PATH] [--json] COMMAND\n"
		"commands: create [--max-workers N] [--max-dp-ranks N] [--max-procs N]\n"
		"                 [--index-nodes N] [--group NAME]\n"
		"          destroy | header | workers | load | inflight | readers | streams\n"
		"          affinity | queue\n"
		"          index [--worker URL]\n"
		"          match --tokens 1,2,... [--block-size N] [--bigram] [--salt S] [--lora NAME]\n"
		"          match --hashes h1,h2,...\n"
		"          predict --worker URL [--dp-rank R] (--tokens ... | --hashes ...)\n"
		"--shm PATH   region file (default %s)\n"
		"--json       machine-readable output (stable shapes)\n"
		"A user who may only read the region (a member of its group) attaches\n"
		"read-only: every command but index and match works.\n",
		STATEBUS_DEFAULT_PATH);
}

/* Prints `obj` (stolen) as one JSON document on stdout. */
int syctl_emit_json(json_t *obj)
{
	char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (s == NULL) {
		fprintf(stderr, "syctl: out of memory\n");
		return 1;
	}
	puts(s);
	free(s);
	return 0;
}

/* Opens the region; a reader that may not open it read-write (a member of
 * the region's group, or a user other than its owner) attaches read-only. */
static int open_region(const struct syctl_opts *o, int flags, struct statebus_region **r)
{
	char err[512];
	int rc = statebus_region_open(o->shm, flags == STATEBUS_CREATE ? &o->params : NULL,
				      flags, r, err, sizeof(err));
	if (rc == SY_EPERM && flags == STATEBUS_ATTACH_ONLY) {
		char err2[512];
		rc = statebus_region_open(o->shm, NULL, STATEBUS_READ_ONLY, r, err2, sizeof(err2));
		if (rc != SY_OK && rc != SY_EPERM)
			memcpy(err, err2, sizeof(err));
	}
	if (rc != SY_OK) {
		fprintf(stderr, "syctl: %s\n", err[0] ? err : sy_strerror(rc));
		if (rc == SY_ENOENT && flags != STATEBUS_CREATE)
			fprintf(stderr, "syctl: no region there yet: the statebus or a router "
					"creates it at start (state.shm_path, --shm); give its path "
					"with --shm PATH\n");
		return 1;
	}
	return 0;
}

/* `create` on an existing region attaches: capacities asked for that the
 * region does not have are an error, not silently ignored. */
static bool capacities_differ(struct statebus_region *r, const struct syctl_opts *o)
{
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	const struct { const char *name; uint32_t want, have; } c[] = {
		{"max_workers", o->params.max_workers, h.params.max_workers},
		{"max_dp_ranks", o->params.max_dp_ranks, h.params.max_dp_ranks},
		{"max_procs", o->params.max_procs, h.params.max_procs},
		{"index_nodes", o->params.index_nodes, h.params.index_nodes},
	};
	bool differ = false;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (c[i].want == 0 || c[i].want == c[i].have)
			continue;
		fprintf(stderr, "syctl: region %s already exists with %s %u, not %u "
			"(run `syctl destroy` first to change it)\n", o->shm, c[i].name, c[i].have,
			c[i].want);
		differ = true;
	}
	return differ;
}

/* ---- header ------------------------------------------------------------- */

static int cmd_header(struct statebus_region *r, const struct syctl_opts *o)
{
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	uint64_t now = sy_mono_ns();
	bool live = statebus_daemon_live(r, now, 5 * UINT64_C(1000000000));
	if (o->json) {
		json_t *t = json_object();
		char magic[19];
		snprintf(magic, sizeof(magic), "0x%016" PRIx64, h.magic);
		json_object_set_new(t, "path", json_string(o->shm));
		json_object_set_new(t, "magic", json_string(magic));
		json_object_set_new(t, "valid", json_boolean(h.magic == STATEBUS_MAGIC));
		json_object_set_new(t, "layout_version", json_integer(h.layout_version));
		json_object_set_new(t, "total_size", json_integer((json_int_t)h.total_size));
		json_object_set_new(t, "created_wall_ms",
				    json_integer((json_int_t)(h.created_wall_ns / 1000000u)));
		json_object_set_new(t, "global_epoch", json_integer((json_int_t)h.global_epoch));
		json_object_set_new(t, "index_incarnation",
				    json_integer((json_int_t)h.index_incarnation));
		json_t *cap = json_object();
		json_object_set_new(cap, "max_workers", json_integer(h.params.max_workers));
		json_object_set_new(cap, "max_dp_ranks", json_integer(h.params.max_dp_ranks));
		json_object_set_new(cap, "max_procs", json_integer(h.params.max_procs));
		json_object_set_new(cap, "index_nodes", json_integer(h.params.index_nodes));
		json_object_set_new(cap, "index_overflow", json_integer(h.params.index_overflow));
		json_object_set_new(cap, "affinity_entries", json_integer(h.params.affinity_entries));
		json_object_set_new(cap, "load_fresh_ms",
				    json_integer((json_int_t)(h.params.load_fresh_ns / 1000000u)));
		json_object_set_new(t, "capacities", cap);
		json_t *sb = json_object();
		json_object_set_new(sb, "pid", h.daemon_pid ? json_integer(h.daemon_pid) : json_null());
		json_object_set_new(sb, "live", json_boolean(live));
		json_object_set_new(sb, "heartbeat_age_ms",
				    h.daemon_heartbeat_ns && h.daemon_pid
					    ? json_integer((json_int_t)((now - h.daemon_heartbeat_ns) / 1000000u))
					    : json_null());
		static const char *const modes[] = {"unknown", "on", "off"};
		json_object_set_new(sb, "index", json_string(modes[h.index_mode <= 2 ? h.index_mode : 0]));
		json_object_set_new(t, "statebus", sb);
		json_t *tables = json_object();
		const struct { const char *name; uint64_t off, size; } tab[] = {
			{"procs", h.procs_off, h.procs_size},
			{"workers", h.workers_off, h.workers_size},
			{"load", h.load_off, h.load_size},
			{"inflight", h.inflight_off, h.inflight_size},
			{"index_nodes", h.index_nodes_off, h.index_nodes_size},
			{"index_buckets", h.index_buckets_off, h.index_buckets_size},
			{"index_overflow", h.index_overflow_off, h.index_overflow_size},
			{"streams", h.streams_off, h.streams_size},
			{"affinity", h.affinity_off, h.affinity_size},
			{"affinity_locks", h.affinity_locks_off, h.affinity_locks_size},
			{"health", h.health_off, h.health_size},
			{"cursors", h.cursors_off, h.cursors_size},
			{"queue", h.queue_off, h.queue_size},
		};
		for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
			json_t *e = json_object();
			json_object_set_new(e, "offset", json_integer((json_int_t)tab[i].off));
			json_object_set_new(e, "size", json_integer((json_int_t)tab[i].size));
			json_object_set_new(tables, tab[i].name, e);
		}
		json_object_set_new(t, "tables", tables);
		return syctl_emit_json(t);
	}
	printf("path               %s\n", o->shm);
	printf("magic              0x%016" PRIx64 " (%s)\n", h.magic,
	       h.magic == STATEBUS_MAGIC ? "valid" : "INVALID");
	printf("layout version     %u\n", h.layout_version);
	printf("size               %" PRIu64 " bytes\n", h.total_size);
	printf("global epoch       %" PRIu64 "\n", h.global_epoch);
	printf("index incarnation  %" PRIu64 "\n", h.index_incarnation);
	printf("capacities         workers %u, dp ranks/worker %u, procs %u\n",
	       h.params.max_workers, h.params.max_dp_ranks, h.params.max_procs);
	printf("index              %u nodes (%" PRIu64 " B), buckets %" PRIu64 " B, "
	       "%u overflow records (%" PRIu64 " B)\n", h.params.index_nodes, h.index_nodes_size,
	       h.index_buckets_size, h.params.index_overflow, h.index_overflow_size);
	printf("affinity           %u entries (%" PRIu64 " B)\n", h.params.affinity_entries,
	       h.affinity_size);
	printf("index mode         %s\n", h.index_mode == STATEBUS_INDEX_MODE_ON    ? "on"
					: h.index_mode == STATEBUS_INDEX_MODE_OFF ? "off (statebus.index: no tree)"
										  : "unknown (no statebus has said)");
	if (h.daemon_pid)
		printf("statebus           pid %d, %s, heartbeat %" PRIu64 " ms ago\n", h.daemon_pid,
		       live ? "live" : "NOT live", (now - h.daemon_heartbeat_ns) / 1000000u);
	else
		printf("statebus           none announced\n");
	return 0;
}

/* ---- workers ------------------------------------------------------------ */

static const char *const cache_signal_names[] = {"none", "events", "predicted"};
static const char *const down_reason_names[] = {"none", "connect", "reset", "timeout"};
static const char *const cb_state_names[] = {"closed", "open", "half_open"};

/* One word for a worker's health: the active probe result (unknown before
 * the first probe), overridden by the router-written marks. */
static const char *health_word(const struct statebus_worker *w, const struct statebus_health *h)
{
	bool cur = h->worker_gen == w->generation;
	if (cur && h->down_since_ns)
		return "down";
	if (cur && h->stalled_since_ns)
		return "stalled";
	if (!w->healthy)
		return w->health_checked_ns ? "unhealthy" : "unknown";
	if (cur && h->cb_state == STATEBUS_CB_OPEN)
		return "cb-open";
	if (cur && h->cb_state == STATEBUS_CB_HALF_OPEN)
		return "cb-half";
	return "healthy";
}

static json_t *age_ms(uint64_t now, uint64_t t)
{
	return t && now >= t ? json_integer((json_int_t)((now - t) / 1000000u)) : json_null();
}

/* The worker's health record (statebus_health_read) as JSON. */
static json_t *health_json(struct statebus_region *r, uint32_t slot,
			   const struct statebus_worker *w, uint64_t now)
{
	struct statebus_health h;
	json_t *e = json_object();
	if (statebus_health_read(r, slot, &h) != SY_OK || h.worker_gen != w->generation)
		memset(&h, 0, sizeof(h));
	h.worker_gen = w->generation;
	json_object_set_new(e, "state", json_string(health_word(w, &h)));
	json_object_set_new(e, "down", json_boolean(h.down_since_ns != 0));
	json_object_set_new(e, "down_reason",
			    h.down_since_ns ? json_string(NAME_OF(down_reason_names, h.down_reason))
					    : json_null());
	json_object_set_new(e, "down_age_ms", age_ms(now, h.down_since_ns));
	json_object_set_new(e, "stalled", json_boolean(h.stalled_since_ns != 0));
	json_object_set_new(e, "stalled_age_ms", age_ms(now, h.stalled_since_ns));
	json_object_set_new(e, "last_byte_age_ms", age_ms(now, h.last_byte_ns));
	json_object_set_new(e, "breaker", json_string(NAME_OF(cb_state_names, h.cb_state)));
	json_object_set_new(e, "cb_failures", json_integer(h.cb_failures));
	json_object_set_new(e, "downs", json_integer((json_int_t)h.downs));
	json_object_set_new(e, "stalls", json_integer((json_int_t)h.stalls));
	json_object_set_new(e, "cb_opens", json_integer((json_int_t)h.cb_opens));
	json_object_set_new(e, "recoveries", json_integer((json_int_t)h.recoveries));
	return e;
}

static json_t *worker_json(struct statebus_region *r, uint32_t slot,
			   const struct statebus_worker *w, uint64_t now)
{
	json_t *e = json_object();
	json_object_set_new(e, "worker", json_string(w->id));
	json_object_set_new(e, "slot", json_integer(slot));
	json_object_set_new(e, "generation", json_integer(w->generation));
	json_object_set_new(e, "state", json_string(NAME_OF(state_names, w->state)));
	json_object_set_new(e, "model", json_string(w->model));
	json_object_set_new(e, "role", json_string(NAME_OF(role_names, w->role)));
	json_object_set_new(e, "engine", json_string(w->engine == STATEBUS_ENGINE_VLLM ? "vllm"
										       : "sglang"));
	json_t *lora = json_array();
	for (size_t off = 0; off < sizeof(w->lora_adapters) && w->lora_adapters[off];) {
		size_t l = strnlen(w->lora_adapters + off, sizeof(w->lora_adapters) - off);
		if (off + l >= sizeof(w->lora_adapters))
			break;
		json_array_append_new(lora, json_stringn(w->lora_adapters + off, l));
		off += l + 1;
	}
	json_object_set_new(e, "lora_adapters", lora);
	json_object_set_new(e, "healthy", json_boolean(w->healthy));
	json_object_set_new(e, "health_failures", json_integer(w->health_failures));
	json_object_set_new(e, "health_checked_age_ms",
			    w->health_checked_ns
				    ? json_integer((json_int_t)((now - w->health_checked_ns) / 1000000u))
				    : json_null());
	json_object_set_new(e, "health", health_json(r, slot, w, now));
	json_object_set_new(e, "dp_size", json_integer(w->dp_size));
	json_object_set_new(e, "bootstrap_port",
			    w->bootstrap_port ? json_integer(w->bootstrap_port) : json_null());
	json_t *kv = json_object();
	json_object_set_new(kv, "has_cache_signal", json_boolean(w->has_cache_signal));
	json_object_set_new(kv, "block_size",
			    w->kv_block_size ? json_integer(w->kv_block_size) : json_null());
	json_object_set_new(kv, "bigram", json_boolean(w->kv_bigram));
	json_object_set_new(kv, "endpoint_host", json_string(w->kv_endpoint_host));
	json_object_set_new(kv, "endpoint_port_base",
			    w->kv_port_base ? json_integer(w->kv_port_base) : json_null());
	json_object_set_new(kv, "topic", json_string(w->kv_topic));
	json_object_set_new(kv, "replay_port_base",
			    w->kv_replay_port_base ? json_integer(w->kv_replay_port_base) : json_null());
	json_object_set_new(kv, "load_endpoint_port_base",
			    w->load_port_base ? json_integer(w->load_port_base) : json_null());
	json_object_set_new(kv, "rejected",
			    w->kv_rejected ? json_string(NAME_OF(kv_rejected_names, w->kv_rejected))
					   : json_null());
	json_object_set_new(e, "kv_events", kv);
	struct statebus_predict_worker pw;
	if (statebus_predict_worker_read(r, slot, &pw) == SY_OK) {
		bool cur = pw.worker_gen == w->generation;
		json_object_set_new(e, "cache_signal",
				    json_string(NAME_OF(cache_signal_names, pw.cache_signal)));
		json_t *pj = json_object();
		json_object_set_new(pj, "blocks", json_integer(cur ? (json_int_t)pw.blocks : 0));
		json_object_set_new(pj, "capacity_blocks",
				    pw.capacity_blocks ? json_integer((json_int_t)pw.capacity_blocks)
						       : json_null());
		json_object_set_new(pj, "predicted", json_integer(cur ? (json_int_t)pw.predicted : 0));
		json_object_set_new(pj, "confirmed", json_integer(cur ? (json_int_t)pw.confirmed : 0));
		json_object_set_new(pj, "expired", json_integer(cur ? (json_int_t)pw.expired : 0));
		json_object_set_new(pj, "evicted", json_integer(cur ? (json_int_t)pw.evicted : 0));
		json_object_set_new(pj, "removed", json_integer(cur ? (json_int_t)pw.removed : 0));
		json_object_set_new(e, "predicted", pj);
	}
	return e;
}

/* Calls fn for every non-free worker slot; torn slots are reported on
 * stderr and skipped. */
static void for_each_worker(struct statebus_region *r,
			    void (*fn)(uint32_t slot, const struct statebus_worker *w, void *arg),
			    void *arg)
{
	uint32_t cap = statebus_workers_capacity(r);
	for (uint32_t s = 0; s < cap; s++) {
		struct statebus_worker w;
		int rc = statebus_worker_read(r, s, &w);
		if (rc == SY_ESTALE)
			fprintf(stderr, "syctl: worker slot %u is mid-write (torn); skipped\n", s);
		if (rc != SY_OK)
			continue;
		fn(s, &w, arg);
	}
}

struct list_ctx {
	struct statebus_region *r;
	json_t *arr;
	uint64_t now;
	unsigned n;
};

static void worker_row(uint32_t slot, const struct statebus_worker *w, void *arg)
{
	struct list_ctx *c = arg;
	c->n++;
	if (c->arr) {
		json_array_append_new(c->arr, worker_json(c->r, slot, w, c->now));
		return;
	}
	char kv[64];
	if (w->kv_rejected)
		snprintf(kv, sizeof(kv), "rejected:%s", NAME_OF(kv_rejected_names, w->kv_rejected));
	else if (w->has_cache_signal)
		snprintf(kv, sizeof(kv), "block %u%s", w->kv_block_size, w->kv_bigram ? " bigram" : "");
	else
		snprintf(kv, sizeof(kv), "no cache signal");
	struct statebus_predict_worker pw = {0};
	(void)statebus_predict_worker_read(c->r, slot, &pw);
	char cache[48];
	snprintf(cache, sizeof(cache), "%s/%" PRIu64, NAME_OF(cache_signal_names, pw.cache_signal),
		 pw.worker_gen == w->generation ? pw.blocks : 0);
	struct statebus_health h;
	if (statebus_health_read(c->r, slot, &h) != SY_OK)
		memset(&h, 0, sizeof(h));
	printf("%4u %5u %-8s %-7s %-6s %-9s %3u %-5s %-20s %-16s %s\n", slot, w->generation,
	       NAME_OF(state_names, w->state), NAME_OF(role_names, w->role),
	       w->engine == STATEBUS_ENGINE_VLLM ? "vllm" : "sglang", health_word(w, &h), w->dp_size, w->bootstrap_port ? "yes" : "-", kv,
	       cache, w->id);
}

static int cmd_workers(struct statebus_region *r, const struct syctl_opts *o)
{
	struct list_ctx c = {r, o->json ? json_array() : NULL, sy_mono_ns(), 0};
	if (!o->json)
		printf("%4s %5s %-8s %-7s %-6s %-9s %3s %-5s %-20s %-16s %s\n", "SLOT", "GEN", "STATE",
		       "ROLE", "ENGINE", "HEALTH", "DP", "BOOT", "KV", "CACHE/PREDICTED", "WORKER");
	for_each_worker(r, worker_row, &c);
	if (o->json) {
		json_t *t = json_object();
		json_object_set_new(t, "workers", c.arr);
		return syctl_emit_json(t);
	}
	if (c.n == 0)
		printf("(no workers)\n");
	return 0;
}

/* ---- load --------------------------------------------------------------- */

static json_t *maybe_u64(bool known, uint64_t v)
{
	return known ? json_integer((json_int_t)v) : json_null();
}

static void load_row(uint32_t slot, const struct statebus_worker *w, void *arg)
{
	struct list_ctx *c = arg;
	struct statebus_load_view v;
	int rc = statebus_load_view(c->r, slot, c->now, &v);
	bool fresh = rc == SY_OK && v.status == STATEBUS_LOAD_FRESH;
	c->n++;
	if (c->arr == NULL) {
		if (fresh)
			printf("%4u %-7s %7" PRIu64 " %7" PRIu64 " %10" PRIu64 " %10" PRIu64 " %-6s %s\n",
			       slot, "fresh", v.num_running_reqs, v.num_waiting_reqs, v.num_tokens,
			       v.max_total_num_tokens, v.scraped ? "scrape" : v.native ? "v3" : "basic",
			       w->id);
		else
			printf("%4u %-7s %7s %7s %10s %10s %-6s %s\n", slot,
			       NAME_OF(load_reason_names, v.reason), "?", "?", "?", "?", "-", w->id);
		return;
	}
	json_t *e = json_object();
	json_object_set_new(e, "worker", json_string(w->id));
	json_object_set_new(e, "slot", json_integer(slot));
	json_object_set_new(e, "fresh", json_boolean(fresh));
	json_object_set_new(e, "unknown_reason",
			    fresh ? json_null() : json_string(NAME_OF(load_reason_names, v.reason)));
	json_object_set_new(e, "num_running_reqs", maybe_u64(fresh, v.num_running_reqs));
	json_object_set_new(e, "num_waiting_reqs", maybe_u64(fresh, v.num_waiting_reqs));
	json_object_set_new(e, "num_used_tokens", maybe_u64(fresh, v.num_tokens));
	json_object_set_new(e, "max_total_num_tokens", maybe_u64(fresh, v.max_total_num_tokens));
	bool native = fresh && v.native;
	json_object_set_new(e, "native", json_boolean(native));
	json_object_set_new(e, "num_waiting_uncached_tokens",
			    maybe_u64(native, v.num_waiting_uncached_tokens));
	json_object_set_new(e, "num_total_tokens", maybe_u64(native, v.num_total_tokens));
	json_object_set_new(e, "max_running_requests", maybe_u64(native, v.max_running_requests));
	json_object_set_new(e, "prefill_tokens_per_s",
			    fresh && v.has_throughput ? json_real(v.prefill_tokens_per_s) : json_null());
	json_object_set_new(e, "captured_age_ms",
			    maybe_u64(fresh, (c->now - v.captured_at_ns) / 1000000u));
	/* vLLM: the scraped /metrics view (its own records, same freshness) */
	if (w->engine == STATEBUS_ENGINE_VLLM) {
		json_t *sc = json_object();
		bool sfresh = fresh && v.scraped;
		uint64_t prompt = 0, gen = 0;
		for (uint32_t k = 0; k < w->dp_size && sfresh; k++) {
			struct statebus_load_report rep;
			if (statebus_load_read_rank(c->r, slot, k, &rep) == SY_OK) {
				prompt += rep.scraped.prompt_tokens;
				gen += rep.scraped.generation_tokens;
			}
		}
		json_object_set_new(sc, "status", json_string(sfresh ? "fresh"
							      : fresh ? "not_scraped"
							      : NAME_OF(load_reason_names, v.reason)));
		json_object_set_new(sc, "num_requests_running", maybe_u64(sfresh, v.num_running_reqs));
		json_object_set_new(sc, "num_requests_waiting", maybe_u64(sfresh, v.num_waiting_reqs));
		json_object_set_new(sc, "kv_cache_usage", sfresh ? json_real(v.kv_usage) : json_null());
		json_object_set_new(sc, "prompt_tokens_total", maybe_u64(sfresh, prompt));
		json_object_set_new(sc, "generation_tokens_total", maybe_u64(sfresh, gen));
		json_object_set_new(e, "scraped", sc);
	}
	json_t *ranks = json_array();
	for (uint32_t k = 0; k < w->dp_size; k++) {
		struct statebus_load_report rep;
		int rr = statebus_load_read_rank(c->r, slot, k, &rep);
		json_t *re = json_object();
		json_object_set_new(re, "dp_rank", json_integer(k));
		json_object_set_new(re, "state", json_string(rr == SY_OK       ? "reported"
							     : rr == SY_ESTALE ? "torn"
									       : "missing"));
		if (rr == SY_OK) {
			json_object_set_new(re, "age_ms", json_integer((json_int_t)((c->now - rep.recv_mono_ns) / 1000000u)));
			json_object_set_new(re, "num_running_reqs", json_integer(rep.num_running_reqs));
			json_object_set_new(re, "num_waiting_reqs", json_integer(rep.num_waiting_reqs));
			json_object_set_new(re, "num_used_tokens", json_integer(rep.num_tokens));
			json_object_set_new(re, "max_total_num_tokens", json_integer(rep.max_total_num_tokens));
			json_object_set_new(re, "v3", json_boolean(rep.flags & STATEBUS_LOAD_HAS_V3));
			json_object_set_new(re, "scraped", json_boolean(rep.flags & STATEBUS_LOAD_SCRAPED));
		}
		json_array_append_new(ranks, re);
	}
	json_object_set_new(e, "ranks", ranks);
	json_array_append_new(c->arr, e);
}

static int cmd_load(struct statebus_region *r, const struct syctl_opts *o)
{
	struct list_ctx c = {r, o->json ? json_array() : NULL, sy_mono_ns(), 0};
	if (!o->json)
		printf("%4s %-7s %7s %7s %10s %10s %-6s %s\n", "SLOT", "LOAD", "RUNNING", "WAITING",
		       "TOKENS", "MAX_TOKENS", "VIEW", "WORKER");
	for_each_worker(r, load_row, &c);
	if (o->json) {
		json_t *t = json_object();
		json_object_set_new(t, "workers", c.arr);
		return syctl_emit_json(t);
	}
	if (c.n == 0)
		printf("(no workers)\n");
	return 0;
}

/* ---- inflight ----------------------------------------------------------- */

static void inflight_row(uint32_t slot, const struct statebus_worker *w, void *arg)
{
	struct list_ctx *c = arg;
	int64_t in_flight = 0;
	uint64_t dispatches = 0;
	statebus_inflight_sum(c->r, slot, &in_flight, &dispatches);
	c->n++;
	if (c->arr == NULL) {
		printf("%4u %9" PRId64 " %10" PRIu64 " %s\n", slot, in_flight, dispatches, w->id);
		return;
	}
	struct statebus_header_info h;
	statebus_region_info(c->r, &h);
	json_t *e = json_object();
	json_object_set_new(e, "worker", json_string(w->id));
	json_object_set_new(e, "slot", json_integer(slot));
	json_object_set_new(e, "in_flight", json_integer(in_flight));
	json_object_set_new(e, "dispatches", json_integer((json_int_t)dispatches));
	json_t *rows = json_array();
	for (uint32_t p = 0; p < h.params.max_procs; p++) {
		struct statebus_inflight_info cell;
		if (statebus_inflight_read(c->r, p, slot, &cell) != SY_OK ||
		    (cell.in_flight == 0 && cell.dispatches == 0))
			continue;
		struct statebus_proc_info pi;
		statebus_proc_read(c->r, p, &pi);
		json_t *re = json_object();
		json_object_set_new(re, "proc", json_integer(p));
		json_object_set_new(re, "pid", pi.pid ? json_integer(pi.pid) : json_null());
		json_object_set_new(re, "in_flight", json_integer(cell.in_flight));
		json_object_set_new(re, "dispatches", json_integer((json_int_t)cell.dispatches));
		json_object_set_new(re, "last_dispatch_age_ms",
				    cell.last_dispatch_ns
					    ? json_integer((json_int_t)((c->now - cell.last_dispatch_ns) / 1000000u))
					    : json_null());
		json_array_append_new(rows, re);
	}
	json_object_set_new(e, "rows", rows);
	json_array_append_new(c->arr, e);
}

static int cmd_inflight(struct statebus_region *r, const struct syctl_opts *o)
{
	struct list_ctx c = {r, o->json ? json_array() : NULL, sy_mono_ns(), 0};
	if (!o->json)
		printf("%4s %9s %10s %s\n", "SLOT", "IN_FLIGHT", "DISPATCHES", "WORKER");
	for_each_worker(r, inflight_row, &c);
	if (o->json) {
		json_t *t = json_object();
		json_object_set_new(t, "workers", c.arr);
		return syctl_emit_json(t);
	}
	if (c.n == 0)
		printf("(no workers)\n");
	return 0;
}

/* ---- readers ------------------------------------------------------------ */

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static int cmd_readers(struct statebus_region *r, const struct syctl_opts *o)
{
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	json_t *arr = o->json ? json_array() : NULL;
	uint64_t now = sy_mono_ns();
	unsigned n = 0;
	if (!o->json)
		printf("global epoch %" PRIu64 "\n%4s %8s %-8s %-5s %12s %s\n", h.global_epoch, "SLOT",
		       "PID", "ROLE", "ALIVE", "EPOCH", "CLAIMED_AGE_S");
	for (uint32_t p = 0; p < h.params.max_procs; p++) {
		struct statebus_proc_info pi;
		if (statebus_proc_read(r, p, &pi) != SY_OK || pi.pid == 0)
			continue;
		n++;
		bool alive = pid_alive(pi.pid);
		uint64_t age_ms = pi.claimed_mono_ns ? (now - pi.claimed_mono_ns) / 1000000u : 0;
		if (arr == NULL) {
			char ep[24];
			if (pi.epoch == STATEBUS_EPOCH_IDLE)
				snprintf(ep, sizeof(ep), "idle");
			else
				snprintf(ep, sizeof(ep), "%" PRIu64, pi.epoch);
			printf("%4u %8d %-8s %-5s %12s %" PRIu64 "\n", p, pi.pid,
			       NAME_OF(proc_role_names, pi.role), alive ? "yes" : "NO", ep,
			       age_ms / 1000u);
			continue;
		}
		json_t *e = json_object();
		json_object_set_new(e, "slot", json_integer(p));
		json_object_set_new(e, "pid", json_integer(pi.pid));
		json_object_set_new(e, "role", json_string(NAME_OF(proc_role_names, pi.role)));
		json_object_set_new(e, "start_time", json_integer((json_int_t)pi.start_time));
		json_object_set_new(e, "alive", json_boolean(alive));
		json_object_set_new(e, "epoch", pi.epoch == STATEBUS_EPOCH_IDLE
							? json_null()
							: json_integer((json_int_t)pi.epoch));
		json_object_set_new(e, "claimed_age_ms", json_integer((json_int_t)age_ms));
		json_array_append_new(arr, e);
	}
	if (arr) {
		json_t *t = json_object();
		json_object_set_new(t, "global_epoch", json_integer((json_int_t)h.global_epoch));
		json_object_set_new(t, "readers", arr);
		return syctl_emit_json(t);
	}
	if (n == 0)
		printf("(no process slots claimed)\n");
	return 0;
}

/* ---- streams ------------------------------------------------------------ */

static void stream_rows(uint32_t slot, const struct statebus_worker *w, void *arg)
{
	struct list_ctx *c = arg;
	for (uint32_t k = 0; k < w->dp_size; k++) {
		struct statebus_stream st;
		int rc = statebus_stream_read(c->r, slot, k, &st);
		if (rc == SY_ESTALE)
			fprintf(stderr, "syctl: stream %u/%u is mid-write (torn); skipped\n", slot, k);
		if (rc != SY_OK || st.worker_gen != w->generation)
			continue;
		c->n++;
		json_t *age = st.last_event_ns && c->now >= st.last_event_ns
				      ? json_integer((json_int_t)((c->now - st.last_event_ns) / 1000000u))
				      : json_null();
		if (c->arr == NULL) {
			char cur[24], ag[24];
			snprintf(cur, sizeof(cur), st.cursor < 0 ? "-" : "%" PRId64, st.cursor);
			if (json_is_null(age))
				snprintf(ag, sizeof(ag), "-");
			else
				snprintf(ag, sizeof(ag), "%" PRId64, (int64_t)json_integer_value(age));
			json_decref(age);
			printf("%4u %4u %10s %6" PRIu64 " %8" PRIu64 " %6" PRIu64 " %7" PRIu64
			       " %7" PRIu64 " %-9s %-7s %-4s %10s %s\n", slot, k, cur, st.gaps,
			       st.missing, st.resets, st.skipped, st.decode_failures,
			       st.untrusted ? "UNTRUSTED" : "trusted", st.partial ? "partial" : "full",
			       st.subscribed ? "yes" : "no", ag, w->id);
			continue;
		}
		json_t *e = json_object();
		json_object_set_new(e, "worker", json_string(w->id));
		json_object_set_new(e, "slot", json_integer(slot));
		json_object_set_new(e, "dp_rank", json_integer(k));
		json_object_set_new(e, "cursor", st.cursor < 0 ? json_null() : json_integer(st.cursor));
		json_object_set_new(e, "gaps", json_integer((json_int_t)st.gaps));
		json_object_set_new(e, "missing", json_integer((json_int_t)st.missing));
		json_object_set_new(e, "resets", json_integer((json_int_t)st.resets));
		json_object_set_new(e, "skipped", json_integer((json_int_t)st.skipped));
		json_object_set_new(e, "decode_failures", json_integer((json_int_t)st.decode_failures));
		json_object_set_new(e, "batches", json_integer((json_int_t)st.batches));
		json_object_set_new(e, "events", json_integer((json_int_t)st.events));
		json_object_set_new(e, "untrusted", json_boolean(st.untrusted));
		json_object_set_new(e, "subscribed", json_boolean(st.subscribed));
		json_object_set_new(e, "replaying", json_boolean(st.replaying));
		json_object_set_new(e, "partial", json_boolean(st.partial));
		json_object_set_new(e, "last_event_age_ms", age);
		json_array_append_new(c->arr, e);
	}
}

static int cmd_streams(struct statebus_region *r, const struct syctl_opts *o)
{
	struct list_ctx c = {r, o->json ? json_array() : NULL, sy_mono_ns(), 0};
	if (!o->json)
		printf("%4s %4s %10s %6s %8s %6s %7s %7s %-9s %-7s %-4s %10s %s\n", "SLOT", "RANK",
		       "CURSOR", "GAPS", "MISSING", "RESETS", "SKIPPED", "DECFAIL", "TRUST", "TREE",
		       "SUB", "AGE_MS", "WORKER");
	for_each_worker(r, stream_rows, &c);
	if (o->json) {
		json_t *t = json_object();
		json_object_set_new(t, "streams", c.arr);
		json_t *ctr = json_object();
		for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++)
			json_object_set_new(ctr, statebus_counter_name(i),
					    json_integer((json_int_t)statebus_counter_get(r, i)));
		json_object_set_new(t, "counters", ctr);
		/* the scenario-23 tallies again, as {event: {medium: n}} */
		json_t *tal = json_object();
		for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++) {
			const char *ev, *md;
			if (!statebus_kv_tally_labels(i, &ev, &md))
				continue;
			json_t *row = json_object_get(tal, ev);
			if (row == NULL)
				json_object_set_new(tal, ev, row = json_object());
			json_object_set_new(row, md, json_integer((json_int_t)statebus_counter_get(r, i)));
		}
		json_object_set_new(t, "tallies", tal);
		return syctl_emit_json(t);
	}
	if (c.n == 0)
		printf("(no streams)\n");
	for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++) {
		uint64_t v = statebus_counter_get(r, i);
		if (v)
			printf("%s %" PRIu64 "\n", statebus_counter_name(i), v);
	}
	return 0;
}

/* ---- main --------------------------------------------------------------- */

static int parse_u32(const char *flag, const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || v == 0 || v > UINT32_MAX || s[0] == '-') {
		fprintf(stderr, "syctl: %s: expected a positive integer, got '%s'\n", flag, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct syctl_opts o = {.shm = STATEBUS_DEFAULT_PATH};
	memset(&o.params, 0, sizeof(o.params));
	enum { OPT_MAX_WORKERS = 256, OPT_MAX_RANKS, OPT_MAX_PROCS, OPT_INDEX_NODES, OPT_WORKER,
	       OPT_TOKENS, OPT_HASHES, OPT_KV_BLOCK, OPT_BIGRAM, OPT_SALT, OPT_GROUP, OPT_LORA,
	       OPT_DP_RANK };
	static const struct option longopts[] = {
		{"shm", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"max-workers", required_argument, NULL, OPT_MAX_WORKERS},
		{"max-dp-ranks", required_argument, NULL, OPT_MAX_RANKS},
		{"max-procs", required_argument, NULL, OPT_MAX_PROCS},
		{"index-nodes", required_argument, NULL, OPT_INDEX_NODES},
		{"worker", required_argument, NULL, OPT_WORKER},
		{"tokens", required_argument, NULL, OPT_TOKENS},
		{"hashes", required_argument, NULL, OPT_HASHES},
		{"block-size", required_argument, NULL, OPT_KV_BLOCK},
		{"bigram", no_argument, NULL, OPT_BIGRAM},
		{"salt", required_argument, NULL, OPT_SALT},
		{"group", required_argument, NULL, OPT_GROUP},
		{"lora", required_argument, NULL, OPT_LORA},
		{"dp-rank", required_argument, NULL, OPT_DP_RANK},
		{NULL, 0, NULL, 0},
	};
	int c, li = -1;
	bool create_opts = false;
	/* GNU getopt permutes: options may come before or after the command. */
	while ((c = getopt_long(argc, argv, "s:jhV", longopts, &li)) != -1) {
		int bad = 0;
		uint32_t *dst = NULL;
		switch (c) {
		case 's': o.shm = optarg; break;
		case 'j': o.json = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("syctl %s\n", SY_VERSION); return 0;
		case OPT_MAX_WORKERS: dst = &o.params.max_workers; break;
		case OPT_MAX_RANKS: dst = &o.params.max_dp_ranks; break;
		case OPT_MAX_PROCS: dst = &o.params.max_procs; break;
		case OPT_INDEX_NODES: dst = &o.params.index_nodes; break;
		case OPT_WORKER: o.worker = optarg; break;
		case OPT_TOKENS: o.tokens = optarg; break;
		case OPT_HASHES: o.hashes = optarg; break;
		case OPT_BIGRAM: o.bigram = true; break;
		case OPT_SALT: o.salt = optarg; break;
		case OPT_GROUP: o.params.group = optarg; break;
		case OPT_LORA: o.lora = optarg; break;
		case OPT_DP_RANK: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			bad = errno || *optarg == '\0' || *end != '\0' || optarg[0] == '-' || v > 65535;
			if (bad)
				fprintf(stderr, "syctl: dp-rank: expected 0..65535, got '%s'\n", optarg);
			o.dp_rank = (uint32_t)v;
			break;
		}
		case OPT_KV_BLOCK:
			bad = parse_u32("block-size", optarg, &o.block_size);
			if (!bad && o.block_size == 0) {
				fprintf(stderr, "syctl: block-size: must be > 0\n");
				bad = 1;
			}
			break;
		default: usage(stderr); return 2;
		}
		if (dst != NULL) {
			bad = parse_u32(li >= 0 ? longopts[li].name : "option", optarg, dst);
			create_opts = true;
		}
		if (bad)
			return 2;
	}
	if (argc - optind > 1) {
		fprintf(stderr, "syctl: unexpected argument '%s'\n", argv[optind + 1]);
		usage(stderr);
		return 2;
	}
	const char *cmd = optind < argc ? argv[optind] : NULL;
	if (cmd == NULL) {
		usage(stderr);
		return 2;
	}
	if (o.params.group != NULL && strcmp(cmd, "create") != 0) {
		fprintf(stderr, "syctl: --group only applies to 'create'\n");
		return 2;
	}
	if (create_opts && strcmp(cmd, "create") != 0) {
		fprintf(stderr, "syctl: capacity options only apply to 'create'\n");
		return 2;
	}

	if (strcmp(cmd, "destroy") == 0) {
		int rc = statebus_region_destroy(o.shm);
		if (rc != SY_OK) {
			fprintf(stderr, "syctl: destroy %s: %s\n", o.shm, sy_strerror(rc));
			return 1;
		}
		if (o.json)
			return syctl_emit_json(json_pack("{s:s,s:b}", "path", o.shm, "destroyed", 1));
		printf("destroyed %s\n", o.shm);
		return 0;
	}

	static const struct { const char *name; int (*fn)(struct statebus_region *, const struct syctl_opts *); } cmds[] = {
		{"create", cmd_header}, {"header", cmd_header},	  {"workers", cmd_workers},
		{"load", cmd_load},	{"inflight", cmd_inflight}, {"readers", cmd_readers},
		{"streams", cmd_streams},   {"affinity", syctl_cmd_affinity},
		{"index", syctl_cmd_index}, {"match", syctl_cmd_match},
		{"predict", syctl_cmd_predict}, {"queue", syctl_cmd_queue},
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(cmd, cmds[i].name) != 0)
			continue;
		struct statebus_region *r;
		if (open_region(&o, strcmp(cmd, "create") == 0 ? STATEBUS_CREATE : STATEBUS_ATTACH_ONLY, &r))
			return 1;
		if (create_opts && capacities_differ(r, &o)) {
			statebus_region_close(r);
			return 1;
		}
		int rc = cmds[i].fn(r, &o);
		statebus_region_close(r);
		return rc;
	}
	fprintf(stderr, "syctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
