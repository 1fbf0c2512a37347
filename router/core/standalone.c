/* standalone.c — the master's duties while no statebus runs (DESIGN.md §5).
 *
 * Without a live statebus (header heartbeat), the master keeps the static
 * fleet of the configuration in the workers table under the region's
 * writer lock and learns about each engine what SGLang's router learns:
 *   discovery   GET /server_info (SGLang: served_model_name or model_path,
 *               disaggregation_mode, disaggregation_bootstrap_port, dp_size,
 *               page_size; statebus/daemon/discovery.c parses it), else
 *               GET /get_model_info (model_path), else GET /v1/models (the
 *               first base model; vLLM and other OpenAI servers, then
 *               run as engine kind vllm unless workers[].engine says
 *               sglang). A worker
 *               whose model was not configured takes the engine's; a
 *               reported prefill/decode role replaces a plain one; a
 *               prefill worker without a configured bootstrap port takes
 *               the reported one. Network errors retry (discovery_attempts,
 *               backoff doubling), then every discovery_retry_ms; a worker
 *               that answers but reports nothing keeps its configuration.
 *   health      unknown at registration (healthy meanwhile only within
 *               router.health_unknown_grace_secs; always healthy with
 *               statebus.disable_health_check); the master's prober
 *               (prober.h) judges it. A worker the table shows healthy
 *               again after being unhealthy is discovered again: a
 *               restarted engine may serve another model.
 * Transfers run concurrently on one libcurl multi handle that the master's
 * loop drives (rt_standalone_tick waits in curl_multi_poll instead of
 * sleeping): one hung engine never delays another, and nothing blocks the
 * master's signal handling for longer than the wait. Worker processes never
 * probe: they see the results in the workers table. A statebus that starts
 * later adopts the slots by worker ID; while it is live the master writes
 * nothing. The master also reaps the proc slots of dead processes and
 * sweeps the affinity store (idle expiry, invalidated workers, abandoned
 * claims) while no statebus is live.
 */
#include "router/core/standalone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "ingest.h" /* sbd_discovery_parse, sbd_vllm_models_parse */

/* Heartbeat age beyond which the statebus counts as gone. */
#define STATEBUS_LIVE_NS 5000000000ull
#define BODY_MAX (1u << 20) /* bytes of an answer kept */

enum probe { P_SERVER_INFO, P_MODEL_INFO, P_MODELS };
static const char *const probe_path[] = {"/server_info", "/get_model_info", "/v1/models"};

enum disc_state { DISC_PENDING, DISC_RUNNING, DISC_DONE };

/* What an engine said about itself. */
struct facts {
	int role;                 /* enum statebus_worker_role, -1 = not said */
	char model[STATEBUS_MODEL_MAX];
	uint16_t bootstrap_port;  /* 0 = not said */
	uint16_t dp_size;         /* 0 = not said */
	uint32_t block_size;      /* tokens per page, 0 = not said */
	bool openai_only;         /* only /v1/models answered: vLLM (or another
				     OpenAI server) */
	char lora_adapters[STATEBUS_LORA_LIST_MAX]; /* its LoRA adapters (/v1/models) */
};

struct sa_worker {
	char id[STATEBUS_WORKER_ID_MAX];
	/* configured */
	int role;
	char model[STATEBUS_MODEL_MAX];
	bool model_default;       /* the engine's model replaces it */
	uint16_t bootstrap_port;
	uint16_t dp_size;
	uint32_t block_size;
	int engine;               /* enum sy_engine_kind */
	/* discovery */
	enum disc_state disc;
	enum probe step;
	int attempt;              /* attempts of this round */
	long backoff_ms;
	uint64_t disc_next_ns;
	struct facts f;
	bool facts_dirty;         /* to be written to the workers table */
	bool was_down;            /* the table showed it checked and unhealthy */
	uint16_t port_warned;     /* the engine's bootstrap port last warned about */
};

struct transfer {
	struct transfer *next;
	CURL *easy;
	enum probe kind;
	char id[STATEBUS_WORKER_ID_MAX];
	char *body;
	size_t len;
	bool over;
};

struct rt_standalone {
	const struct sy_config *cfg;
	struct sa_worker *w;
	size_t n;
	CURLM *multi;
	struct transfer *active;
};

bool rt_statebus_live(struct statebus_region *r)
{
	return statebus_daemon_live(r, sy_mono_ns(), STATEBUS_LIVE_NS);
}

static uint64_t ms_ns(long ms) { return (uint64_t)ms * 1000000u; }

static struct sa_worker *find(struct rt_standalone *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->w[i].id, id) == 0)
			return &s->w[i];
	return NULL;
}

int rt_standalone_configure(struct rt_standalone *s, const struct sy_config *cfg)
{
	struct sa_worker *w = calloc(cfg->n_workers ? cfg->n_workers : 1, sizeof(*w));
	if (w == NULL)
		return SY_ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < cfg->n_workers; i++) {
		const struct sy_config_worker *cw = &cfg->workers[i];
		struct sa_worker *x = &w[n];
		if (statebus_worker_id_normalise(cw->url, x->id, sizeof(x->id)) != SY_OK)
			continue;
		const struct sa_worker *old = find(s, x->id);
		if (old != NULL) {
			*x = *old; /* discovery state carries over */
		} else {
			x->disc = DISC_PENDING;
			x->f.role = -1;
		}
		x->role = cw->role;
		snprintf(x->model, sizeof(x->model), "%s", cw->model ? cw->model : cfg->model_id);
		x->model_default = cw->model == NULL || cw->model_default;
		x->bootstrap_port = (uint16_t)cw->bootstrap_port;
		x->engine = cw->engine;
		x->dp_size = (uint16_t)(cw->kv_events.dp_size > 0 ? cw->kv_events.dp_size : 1);
		x->block_size = (uint32_t)(cw->kv_events.block_size > 0 ? cw->kv_events.block_size : 0);
		n++;
	}
	free(s->w);
	s->w = w;
	s->n = n;
	s->cfg = cfg;
	return SY_OK;
}

int rt_standalone_create(const struct sy_config *cfg, struct rt_standalone **out)
{
	struct rt_standalone *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (s == NULL || (s->multi = curl_multi_init()) == NULL ||
	    rt_standalone_configure(s, cfg) != SY_OK) {
		if (s != NULL && s->multi != NULL)
			curl_multi_cleanup(s->multi);
		free(s);
		return SY_ENOMEM;
	}
	*out = s;
	return SY_OK;
}

static void transfer_free(struct rt_standalone *s, struct transfer *t)
{
	curl_multi_remove_handle(s->multi, t->easy);
	curl_easy_cleanup(t->easy);
	free(t->body);
	free(t);
}

void rt_standalone_destroy(struct rt_standalone *s)
{
	if (s == NULL)
		return;
	while (s->active != NULL) {
		struct transfer *t = s->active;
		s->active = t->next;
		transfer_free(s, t);
	}
	curl_multi_cleanup(s->multi);
	free(s->w);
	free(s);
}

/* ---- the workers table ---------------------------------------------------- */

/* The record of `x` as the configuration and its engine describe it. */
static void describe(const struct sa_worker *x, struct statebus_worker *rec)
{
	snprintf(rec->model, sizeof(rec->model), "%s",
		 x->model_default && x->f.model[0] ? x->f.model : x->model);
	rec->role = (uint8_t)(x->role == SY_ROLE_PLAIN && x->f.role > 0 ? x->f.role : x->role);
	rec->bootstrap_port = x->bootstrap_port;
	if (rec->role == STATEBUS_WORKER_PREFILL && rec->bootstrap_port == 0)
		rec->bootstrap_port = x->f.bootstrap_port;
	rec->dp_size = x->f.dp_size ? x->f.dp_size : x->dp_size;
	rec->kv_block_size = x->block_size ? x->block_size : x->f.block_size;
	memcpy(rec->lora_adapters, x->f.lora_adapters, sizeof(rec->lora_adapters));
	rec->engine = x->engine == SY_ENGINE_VLLM ||
				      (x->engine == SY_ENGINE_AUTO && x->f.openai_only)
			      ? STATEBUS_ENGINE_VLLM
			      : STATEBUS_ENGINE_SGLANG;
}

int rt_standalone_register(struct rt_standalone *s, struct statebus_region *r)
{
	if (rt_statebus_live(r))
		return 0;
	int rc = statebus_writer_lock(r, false);
	if (rc != SY_OK)
		return rc; /* someone else writes now; next tick */
	int added = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct sa_worker *x = &s->w[i];
		uint32_t slot, gen;
		if (statebus_worker_find(r, x->id, &slot, &gen) == SY_OK)
			continue;
		struct statebus_worker w;
		memset(&w, 0, sizeof(w));
		snprintf(w.id, sizeof(w.id), "%s", x->id);
		describe(x, &w);
		/* unknown until the prober's first answer (prober.h); picked
		 * meanwhile only within router.health_unknown_grace_secs */
		w.healthy = s->cfg->statebus.disable_health_check ||
			    s->cfg->router.health_unknown_grace_secs > 0;
		int arc = statebus_worker_add(r, &w, &slot, &gen);
		if (arc == SY_OK) {
			added++;
			x->facts_dirty = false;
			sy_info("standalone: registered %s (%s, model %s, slot %u)", w.id,
				sy_worker_role_name(w.role), w.model, slot);
		} else if (arc != SY_EEXIST) {
			sy_warn("standalone: cannot register %s: %s", w.id, sy_strerror(arc));
		}
	}
	statebus_writer_unlock(r);
	return added;
}

int rt_standalone_warn_unconfigured(const struct rt_standalone *s,
				    struct statebus_region *r)
{
	int n = 0;
	uint32_t cap = statebus_workers_capacity(r);
	for (uint32_t slot = 0; slot < cap; slot++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, slot, &w) != SY_OK ||
		    w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		bool configured = false;
		for (size_t i = 0; i < s->n && !configured; i++)
			configured = strcmp(s->w[i].id, w.id) == 0;
		if (configured)
			continue;
		sy_warn("worker %s (slot %u) is in the region's workers table but not in this "
			"configuration (an earlier run's or added at run time): it is still "
			"routed to; remove it (DELETE /workers/<id> with --admin-api-key) or "
			"start on a new region (syctl destroy)", w.id, slot);
		n++;
	}
	return n;
}

/* Writes discovered facts (writer lock, no wait: what cannot be written now
 * stays dirty for the next tick). */
static void write_back(struct rt_standalone *s, struct statebus_region *r)
{
	bool any = false;
	for (size_t i = 0; i < s->n; i++)
		any |= s->w[i].facts_dirty;
	if (!any || statebus_writer_lock(r, false) != SY_OK)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct sa_worker *x = &s->w[i];
		uint32_t slot, gen;
		struct statebus_worker rec;
		if (!x->facts_dirty ||
		    statebus_worker_find(r, x->id, &slot, &gen) != SY_OK ||
		    statebus_worker_read(r, slot, &rec) != SY_OK)
			continue;
		if (x->facts_dirty) {
			struct statebus_worker next = rec;
			describe(x, &next);
			if (next.role == STATEBUS_WORKER_PREFILL && x->bootstrap_port != 0 &&
			    x->f.bootstrap_port != 0 && x->f.bootstrap_port != x->bootstrap_port &&
			    x->port_warned != x->f.bootstrap_port) {
				sy_warn("standalone: %s: configured bootstrap port %u differs from "
					"the engine's %u (/server_info "
					"disaggregation_bootstrap_port); using %u: give the "
					"engine's port or none (--prefill URL [PORT], "
					"workers[].bootstrap_port)",
					x->id, x->bootstrap_port, x->f.bootstrap_port,
					x->bootstrap_port);
				x->port_warned = x->f.bootstrap_port;
			}
			if (strcmp(next.model, rec.model) != 0 || next.role != rec.role ||
			    next.bootstrap_port != rec.bootstrap_port) {
				sy_info("standalone: %s serves %s as %s (bootstrap port %u)", x->id,
					next.model, sy_worker_role_name(next.role), next.bootstrap_port);
			}
			if (statebus_worker_update(r, slot, gen, &next) != SY_OK)
				sy_warn("standalone: cannot update %s", x->id);
			x->facts_dirty = false;
		}
	}
	statebus_writer_unlock(r);
}

/* ---- transfers --------------------------------------------------------------- */

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct transfer *t = arg;
	size_t n = size * nmemb;
	if (t->over || t->len + n > BODY_MAX) {
		t->over = true;
		return n; /* read and dropped: the answer is unusable */
	}
	char *grown = realloc(t->body, t->len + n + 1);
	if (grown == NULL) {
		t->over = true;
		return n;
	}
	t->body = grown;
	memcpy(t->body + t->len, ptr, n);
	t->len += n;
	t->body[t->len] = '\0';
	return n;
}

static bool start(struct rt_standalone *s, struct sa_worker *x, enum probe kind)
{
	const struct sy_config_statebus *b = &s->cfg->statebus;
	struct transfer *t = calloc(1, sizeof(*t));
	if (t == NULL || (t->easy = curl_easy_init()) == NULL) {
		free(t);
		return false;
	}
	char url[STATEBUS_WORKER_ID_MAX + 256];
	snprintf(url, sizeof(url), "%s%s", x->id, probe_path[kind]);
	long tmo = b->discovery_timeout_ms;
	t->kind = kind;
	snprintf(t->id, sizeof(t->id), "%s", x->id);
	curl_easy_setopt(t->easy, CURLOPT_URL, url);
	curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, tmo);
	curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS, tmo);
	curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->easy, CURLOPT_FORBID_REUSE, 1L); /* no socket outlives its probe */
	curl_easy_setopt(t->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
	if (curl_multi_add_handle(s->multi, t->easy) != CURLM_OK) {
		curl_easy_cleanup(t->easy);
		free(t);
		return false;
	}
	t->next = s->active;
	s->active = t;
	return true;
}

/* Discovery of x failed on the network: retry with backoff, then later. */
static void disc_retry(struct rt_standalone *s, struct sa_worker *x, uint64_t now, const char *why)
{
	const struct sy_config_statebus *b = &s->cfg->statebus;
	x->disc = DISC_PENDING;
	x->step = P_SERVER_INFO;
	if (++x->attempt < b->discovery_attempts) {
		if (x->backoff_ms == 0)
			x->backoff_ms = b->discovery_backoff_ms;
		x->disc_next_ns = now + ms_ns(x->backoff_ms);
		x->backoff_ms *= 2;
		return;
	}
	if (x->attempt == b->discovery_attempts)
		sy_warn("standalone: %s: discovery failed (%s); retrying every %d ms", x->id, why,
			b->discovery_retry_ms);
	x->disc_next_ns = now + ms_ns(b->discovery_retry_ms);
	x->backoff_ms = 0;
	x->attempt = b->discovery_attempts; /* warn once per outage */
}

static void disc_done(struct sa_worker *x)
{
	x->disc = DISC_DONE;
	x->attempt = 0;
	x->backoff_ms = 0;
	x->facts_dirty = true;
}

/* An answer of /get_model_info: {"model_path": ...} (SGLang). */
static void model_info(const struct transfer *t, struct facts *f)
{
	json_t *root = json_loadb(t->body, t->len, 0, NULL);
	const char *m = json_string_value(json_object_get(root, "model_path"));
	if (m != NULL && m[0] != '\0' && strlen(m) < sizeof(f->model))
		snprintf(f->model, sizeof(f->model), "%s", m);
	json_decref(root);
}

static void disc_answer(struct rt_standalone *s, struct sa_worker *x, const struct transfer *t,
			long status, uint64_t now)
{
	bool ok = status >= 200 && status < 300 && !t->over && t->body != NULL;
	if (t->kind == P_SERVER_INFO && ok) {
		struct sbd_facts sf;
		char why[128];
		if (sbd_discovery_parse(t->body, t->len, x->id, &sf, why, sizeof(why)) == SY_OK) {
			x->f.role = sf.role;
			snprintf(x->f.model, sizeof(x->f.model), "%s", sf.model);
			x->f.bootstrap_port = (uint16_t)sf.bootstrap_port;
			x->f.dp_size = (uint16_t)sf.dp_size;
			x->f.block_size = (uint32_t)(sf.block_size ? sf.block_size : sf.page_size);
			if (x->f.model[0] != '\0') {
				disc_done(x);
				return;
			}
		}
	} else if (t->kind == P_MODEL_INFO && ok) {
		model_info(t, &x->f);
		if (x->f.model[0] != '\0') {
			disc_done(x);
			return;
		}
	} else if (t->kind == P_MODELS && ok) {
		uint32_t adapters;
		char m[STATEBUS_MODEL_MAX];
		if (sbd_vllm_models_parse(t->body, t->len, m, sizeof(m), &adapters,
					  x->f.lora_adapters, sizeof(x->f.lora_adapters)) == SY_OK) {
			snprintf(x->f.model, sizeof(x->f.model), "%s", m);
			x->f.openai_only = true;
		}
	}
	(void)now;
	if (t->kind == P_MODELS) {
		if (x->f.model[0] == '\0' && x->f.role < 0)
			sy_info("standalone: %s reports neither model nor role; using its "
				"configuration", x->id);
		disc_done(x);
		return;
	}
	x->step = t->kind + 1; /* the next endpoint, at once */
	x->disc = DISC_PENDING;
	x->disc_next_ns = 0;
	(void)s;
}

static void finished(struct rt_standalone *s, struct transfer *t, CURLcode rc, uint64_t now)
{
	long status = 0;
	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
	struct sa_worker *x = find(s, t->id); /* NULL: gone with a reload */
	if (x == NULL)
		return;
	if (rc != CURLE_OK)
		disc_retry(s, x, now, curl_easy_strerror(rc));
	else if (status >= 500)
		disc_retry(s, x, now, "HTTP 5xx");
	else
		disc_answer(s, x, t, status, now);
}

/* Starts what is due. */
/* Starts what is due; a worker back to healthy after the prober found it
 * unhealthy is discovered again. */
static void schedule(struct rt_standalone *s, struct statebus_region *r, uint64_t now)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sa_worker *x = &s->w[i];
		uint32_t slot, gen;
		struct statebus_worker rec;
		if (statebus_worker_find(r, x->id, &slot, &gen) == SY_OK &&
		    statebus_worker_read(r, slot, &rec) == SY_OK) {
			bool down = rec.health_checked_ns != 0 && !rec.healthy;
			if (x->was_down && rec.healthy && x->disc == DISC_DONE) {
				x->disc = DISC_PENDING;
				x->step = P_SERVER_INFO;
				x->disc_next_ns = 0;
			}
			x->was_down = down;
		}
		if (x->disc == DISC_PENDING && now >= x->disc_next_ns && start(s, x, x->step))
			x->disc = DISC_RUNNING;
	}
}

bool rt_standalone_settled(const struct rt_standalone *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->w[i].disc != DISC_DONE && s->w[i].attempt < s->cfg->statebus.discovery_attempts)
			return false;
	return true;
}

void rt_standalone_tick(struct rt_standalone *s, struct statebus_region *r, int wait_ms)
{
	bool live = rt_statebus_live(r);
	uint64_t now = sy_mono_ns();
	if (!live)
		schedule(s, r, now);
	int running = 0;
	curl_multi_perform(s->multi, &running);
	curl_multi_poll(s->multi, NULL, 0, wait_ms, NULL);
	curl_multi_perform(s->multi, &running);
	now = sy_mono_ns();
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(s->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct transfer *t = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
		CURLcode rc = m->data.result;
		for (struct transfer **pp = &s->active; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == t) {
				*pp = t->next;
				break;
			}
		}
		if (t != NULL) {
			if (!live)
				finished(s, t, rc, now);
			else if (find(s, t->id) != NULL) {
				/* the statebus owns the table now: forget this round */
				struct sa_worker *x = find(s, t->id);
				x->disc = DISC_PENDING;
				x->step = P_SERVER_INFO;
			}
			transfer_free(s, t);
		}
	}
	if (!live)
		write_back(s, r);
}

/* ---- process slots, affinity ------------------------------------------------- */

int rt_reap(struct statebus_region *r)
{
	int rc = statebus_writer_lock(r, false);
	if (rc != SY_OK)
		return rc;
	int n = statebus_procs_reap(r);
	statebus_writer_unlock(r);
	if (n > 0)
		sy_info("reaped %d dead process slot(s)", n);
	return n;
}

int rt_affinity_sweep(struct statebus_region *r, const struct sy_config *cfg, uint64_t now_ns)
{
	static uint64_t next_ns;
	if (now_ns < next_ns)
		return 0;
	next_ns = now_ns + (uint64_t)cfg->statebus.affinity_sweep_interval_secs * 1000000000u;
	if (rt_statebus_live(r))
		return 0;
	struct statebus_affinity_sweep_result res;
	int n = statebus_affinity_sweep(r, now_ns, &res);
	if (n > 0)
		sy_info("affinity sweep: %u expired, %u invalidated, %u abandoned", res.expired,
			res.invalidated, res.abandoned);
	return n;
}
