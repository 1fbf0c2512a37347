/* main.c — switchyard-statebus: flags, configuration, start-up, the event
 * loop and shutdown (see sbd.h for the process structure, docs/statebus.md
 * for operation).
 *
 *   switchyard-statebus [--config FILE] [--check-config]
 *                       [--worker-urls URL...] [--shm PATH] [--shm-group G]
 *                       [--log-level L] [--log-format text|json]
 *                       [--control-endpoint EP] [--<statebus key> VALUE]...
 *
 * Every flag goes through sy_config_apply_flag(cfg, "statebus", ...), so a
 * flag is its YAML key by the naming rule (DESIGN §5): --replay-timeout-ms
 * → statebus.replay_timeout_ms. Flags override the file.
 *
 * Start-up order: attach or create the region (refused when another user
 * owns it, it is writable by group/other or reached through a symlink;
 * created 0640, chgrp'd to state.group); take the writer lock (a
 * second statebus on the same region refuses to start, naming the holder);
 * keep the surviving index when it passes statebus_index_check() and the
 * stream records belong to it (streams then resume from their cursors,
 * subscriber.c), else empty it (new incarnation; ranks rebuilt by replay);
 * forget load records (LoadStat refills them; affinity, in-flight rows and
 * predictions survive); adopt the slots already in the workers table; add
 * the configured fleet;
 * announce pid/start time/heartbeat in the header; bind the control
 * socket; sd_notify READY=1. SIGTERM/SIGINT: STOPPING=1, sockets closed,
 * withdraw, exit 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "sbd.h"
#include "statebus-counters.h"

volatile sig_atomic_t sbd_stop;

static void on_signal(int sig)
{
	(void)sig;
	sbd_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: switchyard-statebus [--config FILE] [--check-config]\n"
		"       switchyard-statebus --help | --version\n"
		"         [--worker-urls URL...] [--shm PATH] [--shm-group GROUP]\n"
		"         [--log-level debug|info|warn|error]\n"
		"         [--log-format text|json] [--control-endpoint EP]\n"
		"         [--health-interval-ms N] [--health-timeout-ms N]\n"
		"         [--health-failure-threshold N] [--health-success-threshold N]\n"
		"         [--health-endpoint PATH] [--disable-health-check]\n"
		"         [--discovery-timeout-ms N] [--discovery-attempts N]\n"
		"         [--discovery-backoff-ms N] [--discovery-retry-ms N]\n"
		"         [--replay-timeout-ms N] [--heartbeat-interval-ms N]\n"
		"         [--prediction-ttl-ms N] [--prediction-drain-ms N]\n"
		"         [--prediction-capacity-tokens N] [--index auto|on|off]\n"
		"         [--kv-events on|off]\n"
		"Every flag is the YAML key of the same name under `statebus:` (docs/statebus.md).\n");
}

/* Loads --config, then applies every other flag over it, then finishes.
 * Returns 0, or 2 (usage/config error, message printed). */
static int configure(struct sy_config *cfg, int argc, char **argv, bool *check_only)
{
	struct sy_config_error err;
	if (sy_config_init_defaults(cfg) != SY_OK) {
		fprintf(stderr, "switchyard-statebus: out of memory\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *file = NULL;
		if (strcmp(a, "--config") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "switchyard-statebus: --config: needs a value\n");
				return 2;
			}
			file = argv[++i];
		} else if (strncmp(a, "--config=", 9) == 0) {
			file = a + 9;
		}
		if (file && sy_config_load_file(cfg, file, &err) != SY_OK) {
			fprintf(stderr, "switchyard-statebus: %s\n", err.msg);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--config") == 0) {
			i++;
			continue;
		}
		if (strncmp(a, "--config=", 9) == 0)
			continue;
		if (strcmp(a, "--check-config") == 0) {
			*check_only = true;
			continue;
		}
		if (strncmp(a, "--", 2) != 0) {
			fprintf(stderr, "switchyard-statebus: unexpected argument '%s'\n", a);
			usage(stderr);
			return 2;
		}
		int rc;
		if (strchr(a, '=') != NULL) {
			rc = sy_config_apply_flag(cfg, "statebus", a, NULL, &err);
		} else if (strcmp(a, "--worker-urls") == 0) {
			/* SGLang style: --worker-urls A B C */
			int n = 0;
			rc = SY_OK;
			while (rc == SY_OK && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
				rc = sy_config_apply_flag(cfg, "statebus", a, argv[++i], &err);
				n++;
			}
			if (n == 0)
				rc = sy_config_apply_flag(cfg, "statebus", a, "", &err);
		} else {
			const char *v = i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 ? argv[++i] : NULL;
			rc = sy_config_apply_flag(cfg, "statebus", a, v, &err);
		}
		if (rc != SY_OK) {
			fprintf(stderr, "switchyard-statebus: %s\n", err.msg);
			return 2;
		}
	}
	if (sy_config_finish(cfg, &err) != SY_OK) {
		fprintf(stderr, "switchyard-statebus: %s\n", err.msg);
		return 2;
	}
	return 0;
}

/* Poll set: one zmq_pollitem_t per socket with what it stands for. */
struct poll_ref {
	int kind; /* 0 control, 1 wake pipe, 2 rank socket, 3 prefix queries */
	uint32_t slot, rank;
	int which; /* 0 kv, 1 load, 2 replay, 3 kv monitor */
};

static size_t build_poll(struct sbd *d, zmq_pollitem_t **items, struct poll_ref **refs, size_t *cap)
{
	size_t need = 3;
	for (uint32_t s = 0; s < d->n_slots; s++)
		if (d->w[s].used)
			need += 4u * d->w[s].n_ranks;
	if (need > *cap) {
		zmq_pollitem_t *ni = realloc(*items, need * sizeof(**items));
		if (ni)
			*items = ni;
		struct poll_ref *nr = realloc(*refs, need * sizeof(**refs));
		if (nr)
			*refs = nr;
		if (!ni || !nr)
			return 0;
		*cap = need;
	}
	size_t n = 0;
	if (d->control) {
		(*items)[n] = (zmq_pollitem_t){.socket = d->control, .events = ZMQ_POLLIN};
		(*refs)[n++] = (struct poll_ref){.kind = 0};
	}
	(*items)[n] = (zmq_pollitem_t){.fd = d->wake_fd, .events = ZMQ_POLLIN};
	(*refs)[n++] = (struct poll_ref){.kind = 1};
	if (d->query) {
		(*items)[n] = (zmq_pollitem_t){.socket = d->query, .events = ZMQ_POLLIN};
		(*refs)[n++] = (struct poll_ref){.kind = 3};
	}
	for (uint32_t s = 0; s < d->n_slots; s++) {
		struct sbd_worker *w = &d->w[s];
		if (!w->used)
			continue;
		for (uint32_t k = 0; k < w->n_ranks; k++) {
			void *socks[4] = {w->ranks[k].kv_sub, w->ranks[k].load_sub, w->ranks[k].replay,
					  w->ranks[k].kv_mon};
			for (int which = 0; which < 4; which++) {
				if (socks[which] == NULL)
					continue;
				(*items)[n] = (zmq_pollitem_t){.socket = socks[which], .events = ZMQ_POLLIN};
				(*refs)[n++] = (struct poll_ref){2, s, k, which};
			}
		}
	}
	return n;
}

static void take_http(struct sbd *d)
{
	struct sbd_http_result res;
	while (sbd_http_take(d->http, &res)) {
		if (res.kind == SBD_HTTP_DISCOVER)
			sbd_fleet_discovered(d, res.slot, res.gen, res.ok ? res.body : NULL, res.len,
					     res.error, res.status);
		else if (res.kind == SBD_HTTP_VLLM_MODELS || res.kind == SBD_HTTP_VLLM_VERSION)
			sbd_fleet_vllm_discovered(d, &res);
		else if (res.kind == SBD_HTTP_METRICS)
			sbd_scrape_result(d, &res);
		else
			sbd_fleet_health(d, res.slot, res.gen, res.ok, res.error);
		free(res.body);
	}
}

static void periodic(struct sbd *d, uint64_t now)
{
	if (now >= d->next_heartbeat_ns) {
		statebus_daemon_heartbeat(d->r, now);
		d->next_heartbeat_ns = now + (uint64_t)d->cfg.statebus.heartbeat_interval_ms * 1000000u;
	}
	if (now >= d->next_sweep_ns) {
		int n = statebus_procs_reap(d->r);
		if (n > 0) {
			statebus_counter_add(d->r, STATEBUS_CTR_PROCS_REAPED, (uint64_t)n);
			sy_info("reaped %d dead process slot(s)", n);
		}
		d->next_sweep_ns = now + 1000000000u;
	}
	if (now >= d->next_affinity_sweep_ns) {
		/* Idle expiry, worker invalidation, abandoned claims: CAS on the
		 * shared table, alongside the routers (no writer lock needed). */
		struct statebus_affinity_sweep_result res;
		if (d->next_affinity_sweep_ns != 0 && statebus_affinity_sweep(d->r, now, &res) > 0)
			sy_info("affinity sweep: %u expired, %u invalidated, %u abandoned",
				res.expired, res.invalidated, res.abandoned);
		d->next_affinity_sweep_ns =
			now + (uint64_t)d->cfg.statebus.affinity_sweep_interval_secs * 1000000000u;
	}
	/* Predictions (predict.c): drained every loop turn, at most
	 * statebus.prediction_drain_ms apart (the poll timeout); expiry swept
	 * 16 times per TTL (10 ms to 1 s apart). */
	if (d->index_on)
		(void)statebus_predict_drain(d->r, now, SBD_PREDICT_BURST);
	if (d->index_on && now >= d->next_predict_sweep_ns) {
		uint64_t ttl = (uint64_t)d->cfg.statebus.prediction_ttl_ms * 1000000u;
		(void)statebus_predict_sweep(d->r, now, ttl);
		uint64_t every = ttl / 16;
		every = every < 10000000u ? 10000000u : every > 1000000000u ? 1000000000u : every;
		d->next_predict_sweep_ns = now + every;
	}
	sbd_fleet_timers(d, now);
	sbd_sub_timers(d, now);
}

static int run(struct sbd *d)
{
	zmq_pollitem_t *items = NULL;
	struct poll_ref *refs = NULL;
	size_t cap = 0;
	while (!sbd_stop) {
		uint64_t now = sy_mono_ns();
		periodic(d, now);
		size_t n = build_poll(d, &items, &refs, &cap);
		if (n == 0) {
			sy_error("out of memory building the poll set");
			break;
		}
		/* predictions are drained at least every prediction_drain_ms
		 * while the index is on; without it nothing needs the short wait */
		int timeout = d->index_on && d->cfg.statebus.prediction_drain_ms < 50
				      ? d->cfg.statebus.prediction_drain_ms
				      : 50;
		int rc = zmq_poll(items, (int)n, timeout);
		if (rc < 0) {
			if (zmq_errno() == EINTR)
				continue;
			sy_error("zmq_poll: %s", zmq_strerror(zmq_errno()));
			break;
		}
		for (size_t i = 0; i < n && rc > 0; i++) {
			if (!(items[i].revents & ZMQ_POLLIN))
				continue;
			struct poll_ref *p = &refs[i];
			if (p->kind == 0) {
				sbd_control_readable(d);
			} else if (p->kind == 1) {
				take_http(d);
			} else if (p->kind == 3) {
				sbd_query_readable(d);
			} else {
				struct sbd_worker *w = &d->w[p->slot];
				/* a control request earlier in this pass may have removed it */
				if (w->used && p->rank < w->n_ranks)
					sbd_sub_readable(d, w, p->rank, p->which);
			}
		}
	}
	free(items);
	free(refs);
	return 0;
}

/* The index a previous statebus left is kept when statebus_index_check()
 * passes and the stream records were written for it (streams incarnation
 * = index incarnation), so that every stream can resume from its cursor.
 * A writer killed mid-update left `busy` set, and taking the lock emptied
 * the index (new incarnation): the check passes on the empty index but the
 * incarnations differ. Otherwise the index is emptied (new incarnation)
 * and the ranks are rebuilt by replay from seq 0 where offered. */
static void keep_index(struct sbd *d)
{
	struct statebus_index_stats st;
	statebus_index_stats(d->r, &st);
	char err[256] = "";
	int rc = statebus_index_check(d->r, err, sizeof(err));
	uint64_t inc = statebus_region_incarnation(d->r);
	if (rc == SY_OK && statebus_streams_incarnation(d->r) != inc)
		snprintf(err, sizeof(err), "its stream records belong to another incarnation");
	d->index_kept = rc == SY_OK && err[0] == '\0';
	if (d->index_kept) {
		statebus_counter_add(d->r, STATEBUS_CTR_INDEX_KEPT, 1);
		sy_info("index kept: %u nodes of incarnation %" PRIu64 "; streams resume "
			"from their cursors", st.nodes, inc);
	} else {
		if (st.nodes > 0 || rc != SY_OK) {
			statebus_counter_add(d->r, STATEBUS_CTR_INDEX_DISCARDED, 1);
			sy_warn("surviving index of %u nodes discarded (%s): ranks are "
				"rebuilt by replay from seq 0 where the engines offer it", st.nodes, err);
		}
		sbd_apply_reset(d);
	}
	statebus_streams_set_incarnation(d->r, statebus_region_incarnation(d->r));
}

static int start(struct sbd *d)
{
	char err[512] = "";
	const char *path = d->cfg.state.shm_path;
	struct statebus_params prm = {.group = d->cfg.state.group};
	int rc = statebus_region_open(path, &prm, STATEBUS_CREATE, &d->r, err, sizeof(err));
	if (rc != SY_OK) {
		sy_error("%s", err[0] ? err : sy_strerror(rc));
		return 1;
	}
	/* A router master takes the writer lock for a moment each second
	 * while no statebus is live (reaping, degraded mode): wait out such a
	 * hold (up to 1 s), never a live statebus. */
	for (int tries = 0;; tries++) {
		rc = statebus_writer_lock(d->r, false);
		if (rc != SY_EBUSY || tries >= 50 ||
		    statebus_daemon_live(d->r, sy_mono_ns(), SBD_LIVE_NS))
			break;
		usleep(20000);
	}
	if (rc == SY_EBUSY) {
		struct statebus_header_info h;
		statebus_region_info(d->r, &h);
		sy_error("another switchyard-statebus (pid %d) is the writer of region %s; "
			 "refusing to start a second one", h.daemon_pid, path);
		return 1;
	}
	if (rc != SY_OK) {
		sy_error("writer lock on %s: %s", path, sy_strerror(rc));
		return 1;
	}
	uint32_t pslot;
	if (statebus_proc_claim(d->r, STATEBUS_PROC_STATEBUS, &pslot) != SY_OK)
		sy_warn("no free process slot in %s (continuing)", path);
	d->n_slots = statebus_workers_capacity(d->r);
	d->max_ranks = statebus_load_max_ranks(d->r);
	d->w = calloc(d->n_slots, sizeof(*d->w));
	if (d->w == NULL)
		return 1;
	if (sbd_apply_init(d) != SY_OK) {
		sy_error("vLLM id map of %d blocks: out of memory", d->cfg.statebus.vllm_map_blocks);
		return 1;
	}
	char why[192];
	(void)sy_config_index_needed(&d->cfg, why, sizeof(why));
	d->index_on = sy_config_index_on(&d->cfg);
	statebus_index_mode_set(d->r, d->index_on ? STATEBUS_INDEX_MODE_ON : STATEBUS_INDEX_MODE_OFF);
	if (d->index_on) {
		keep_index(d);
		sy_info("index on (%s)", d->cfg.statebus.index == SY_INDEX_ON ? "statebus.index on"
					 : why[0] ? why
						  : "the configuration names no policy");
	} else {
		/* No tree: whatever a previous statebus left is emptied, and
		 * nothing is stored again (no KV subscriptions, no drain). */
		d->index_kept = false;
		sbd_apply_reset(d);
		statebus_streams_set_incarnation(d->r, statebus_region_incarnation(d->r));
		sy_info("index off (%s): load and health only",
			d->cfg.statebus.index == SY_INDEX_OFF
				? "statebus.index off"
				: "no configured policy reads it");
	}
	for (uint32_t s = 0; s < d->n_slots; s++) {
		(void)statebus_load_clear_worker(d->r, s); /* LoadStat refills it in ms */
		if (!d->index_kept)
			(void)statebus_streams_clear_worker(d->r, s);
	}
	d->zctx = zmq_ctx_new();
	if (d->zctx == NULL || sbd_control_open(d, err, sizeof(err)) != SY_OK ||
	    sbd_query_open(d, err, sizeof(err)) != SY_OK) {
		sy_error("%s", err[0] ? err : "zmq_ctx_new failed");
		return 1;
	}
	struct sbd_http_opts ho = {
		.discovery_timeout_ms = d->cfg.statebus.discovery_timeout_ms,
		.health_timeout_ms = d->cfg.statebus.health_timeout_ms,
		.discovery_attempts = d->cfg.statebus.discovery_attempts,
		.discovery_backoff_ms = d->cfg.statebus.discovery_backoff_ms,
		.health_endpoint = d->cfg.statebus.health_endpoint,
	};
	if (sbd_http_start(&d->http, &ho, &d->wake_fd) != SY_OK) {
		sy_error("cannot start the HTTP thread");
		return 1;
	}
	sbd_fleet_adopt(d);
	for (size_t i = 0; i < d->cfg.n_workers; i++) {
		uint32_t slot;
		rc = sbd_fleet_add(d, &d->cfg.workers[i], &slot);
		if (rc != SY_OK)
			sy_error("worker %s: cannot register: %s", d->cfg.workers[i].url, sy_strerror(rc));
	}
	uint64_t now = sy_mono_ns();
	statebus_daemon_announce(d->r, now);
	d->next_heartbeat_ns = now;
	struct statebus_header_info h;
	statebus_region_info(d->r, &h);
	sy_info("statebus ready: region %s, index incarnation %" PRIu64 ", %zu configured "
		"worker(s), control %s", path, h.index_incarnation, d->cfg.n_workers,
		d->cfg.statebus.control_endpoint ? d->cfg.statebus.control_endpoint : "off");
	sbd_notify_ready();
	sbd_notify_status("serving region %s", path);
	return 0;
}

static void stop(struct sbd *d)
{
	sbd_notify_stopping();
	if (d->w) {
		for (uint32_t s = 0; s < d->n_slots; s++) {
			struct sbd_worker *w = &d->w[s];
			if (!w->used)
				continue;
			sbd_sub_close(d, w);
			for (uint32_t k = 0; k < w->n_ranks; k++) /* subscribed 0 */
				(void)statebus_stream_write(d->r, s, k, &w->ranks[k].st);
			free(w->ranks);
			free(w->kv.endpoint_host);
			free(w->kv.topic);
		}
	}
	sbd_query_close(d);
	sbd_control_close(d);
	sbd_http_stop(d->http);
	if (d->zctx)
		zmq_ctx_term(d->zctx);
	if (d->r) {
		if (d->r->writer_locked)
			statebus_daemon_withdraw(d->r);
		statebus_region_close(d->r);
	}
	sbd_kv_decoder_free(&d->dec);
	sbd_vmap_free(&d->vmap);
	sbd_vllm_scratch_free(&d->vscr);
	free(d->models);
	free(d->w);
	sy_config_free(&d->cfg);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			printf("switchyard-statebus %s\n", SY_VERSION);
			return 0;
		}
	}
	struct sbd d = {0};
	d.wake_fd = -1;
	bool check_only = false;
	int rc = configure(&d.cfg, argc, argv, &check_only);
	if (rc != 0) {
		sy_config_free(&d.cfg);
		return rc;
	}
	if (check_only) {
		printf("configuration OK: %zu worker(s), region %s, control %s\n", d.cfg.n_workers,
		       d.cfg.state.shm_path,
		       d.cfg.statebus.control_endpoint ? d.cfg.statebus.control_endpoint : "off");
		sy_config_free(&d.cfg);
		return 0;
	}
	sy_log_init("statebus", (enum sy_log_level)d.cfg.log.level,
		    (enum sy_log_format)d.cfg.log.format);
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = start(&d);
	if (rc == 0) {
		run(&d);
		sy_info("statebus stopping");
	}
	stop(&d);
	curl_global_cleanup();
	return rc;
}
