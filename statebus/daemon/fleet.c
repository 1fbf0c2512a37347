/* fleet.c — the statebus's worker slots: add, adopt, discover, health,
 * remove; and the per-model block-size oracle.
 *
 * The workers table is authoritative while the statebus runs (DESIGN §5
 * "Workers"). At start-up every slot already in the table (registered by a
 * router master while no statebus ran, or by an earlier statebus) is
 * adopted, then the configured fleet is added; statebus_worker_add()
 * answering SY_EEXIST names the slot to update instead.
 * Facts: /server_info wins where it speaks, the configuration fills what it
 * leaves out (workers[].kv_events, role, bootstrap_port); without any
 * /server_info answer, configured KV facts are used alone (vLLM).
 * Engine kind (DESIGN §9 "Engine kinds"): workers[].engine, else
 * discovered — /server_info answering → SGLang; a 4xx there → GET
 * /v1/models (the served model: the entry without a parent) then /version,
 * both answering → vLLM, whose KV facts come from the configuration only
 * (vLLM advertises none). engine: vllm skips /server_info.
 * Block size is agreed per model (DESIGN §9): the first worker of a model
 * with a known block size sets it; a worker that disagrees is reported
 * (kv_rejected = block_size_mismatch, log, counter) and not subscribed.
 * "First" is registration order (adopted slots, then the configured fleet
 * in order, then control add_worker), never the order /server_info answers
 * arrive in: discovery runs concurrently (http.c), so a later-registered
 * worker may answer first. Adopted workers accepted by the previous
 * statebus seed the oracle with their recorded block size at adoption. When an earlier-registered one then disagrees,
 * it takes the model over: the workers that set or followed the old block
 * size are rejected (unsubscribed, their blocks cleared) and those rejected
 * for disagreeing with it are re-evaluated (subscribed when they agree).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "sbd.h"
#include "statebus-counters.h"

static uint64_t ms(int v) { return (uint64_t)v * 1000000u; }

/* Copies src (NULL = "") into dst[cap], truncating; always terminated. */
static void set_str(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strnlen(src, cap - 1) : 0;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

static void kv_free(struct sy_config_kv_events *kv)
{
	free(kv->endpoint_host);
	free(kv->topic);
	memset(kv, 0, sizeof(*kv));
}

static void kv_copy(struct sy_config_kv_events *dst, const struct sy_config_kv_events *src)
{
	kv_free(dst);
	*dst = *src;
	dst->endpoint_host = src->endpoint_host ? strdup(src->endpoint_host) : NULL;
	dst->topic = src->topic ? strdup(src->topic) : NULL;
}

/* The record's KV facts from the configured ones (before discovery). */
static void rec_apply_kv(struct statebus_worker *rec, const struct sy_config_kv_events *kv)
{
	char host[STATEBUS_HOST_MAX] = "";
	if (kv->endpoint_host)
		set_str(host, sizeof(host), kv->endpoint_host);
	else
		(void)sbd_url_host(rec->id, host, sizeof(host));
	set_str(rec->kv_endpoint_host, sizeof(rec->kv_endpoint_host), host);
	set_str(rec->kv_topic, sizeof(rec->kv_topic), kv->topic);
	rec->kv_port_base = (uint16_t)kv->endpoint_port_base;
	rec->kv_replay_port_base = (uint16_t)kv->replay_port_base;
	rec->load_port_base = (uint16_t)kv->load_endpoint_port_base;
	rec->kv_block_size = (uint32_t)kv->block_size;
	rec->dp_size = (uint16_t)(kv->dp_size ? kv->dp_size : 1);
	rec->has_cache_signal = kv->endpoint_port_base != 0;
}

uint64_t sbd_fleet_predict_capacity(const struct sbd *d, const struct sbd_worker *w)
{
	uint64_t tokens = d->cfg.statebus.prediction_capacity_tokens > 0
				  ? (uint64_t)d->cfg.statebus.prediction_capacity_tokens
				  : w->kv_capacity_tokens;
	uint32_t bs = w->rec.kv_block_size ? w->rec.kv_block_size : w->page_size;
	return bs ? tokens / bs : 0;
}

/* Prediction facts of w (predict.c): events when KV events exist, else
 * predictions are its only cache signal (approximate mode). */
static void pred_publish(struct sbd *d, const struct sbd_worker *w)
{
	uint32_t sig = w->rec.has_cache_signal && w->rec.kv_rejected == STATEBUS_KV_OK
			       ? STATEBUS_CACHE_SIGNAL_EVENTS
			       : STATEBUS_CACHE_SIGNAL_PREDICTED;
	(void)statebus_predict_set_worker(d->r, w->slot, sig, sbd_fleet_predict_capacity(d, w));
}

int sbd_fleet_publish(struct sbd *d, struct sbd_worker *w)
{
	if (w->rec.dp_size > d->max_ranks) {
		sy_warn("%s: dp_size %u over the region's %u ranks; capped", w->rec.id,
			w->rec.dp_size, d->max_ranks);
		w->rec.dp_size = (uint16_t)d->max_ranks;
	}
	int rc = statebus_worker_update(d->r, w->slot, w->gen, &w->rec);
	if (rc != SY_OK)
		sy_warn("%s: worker record update failed: %s", w->rec.id, sy_strerror(rc));
	pred_publish(d, w);
	return rc;
}

static void local_init(struct sbd *d, uint32_t slot, uint32_t gen, const struct statebus_worker *rec)
{
	struct sbd_worker *w = &d->w[slot];
	uint64_t now = sy_mono_ns();
	w->used = true;
	w->slot = slot;
	w->gen = gen;
	w->rec = *rec;
	w->disc = SBD_DISC_PENDING;
	w->disc_next_ns = now;
	w->health_inflight = false;
	/* a worker never checked is unknown (not picked) until probed: at once */
	w->health_next_ns = rec->health_checked_ns ? now + ms(d->cfg.statebus.health_interval_ms) : now;
	w->health_ok_streak = 0;
	w->order = d->next_order++;
}

static void oracle(struct sbd *d, struct sbd_worker *w);

void sbd_fleet_adopt(struct sbd *d)
{
	for (uint32_t s = 0; s < d->n_slots; s++) {
		struct statebus_worker rec;
		if (statebus_worker_read(d->r, s, &rec) != SY_OK)
			continue;
		/* health is judged afresh: a failure streak of an earlier statebus
		 * (or router master) does not carry over */
		rec.health_failures = 0;
		(void)statebus_worker_set_health(d->r, s, rec.generation, rec.healthy,
						 rec.health_checked_ns, 0);
		local_init(d, s, rec.generation, &rec);
		d->w[s].restart_pending = true;
		d->w[s].adopted = rec;
		d->w[s].model_from_engine = strcmp(rec.model, SY_CONFIG_DEFAULT_MODEL_ID) == 0;
		struct sy_config_kv_events kv = {
			.endpoint_port_base = rec.kv_port_base,
			.block_size = (int)rec.kv_block_size,
			.dp_size = rec.dp_size,
			.replay_port_base = rec.kv_replay_port_base,
			.load_endpoint_port_base = rec.load_port_base,
		};
		d->w[s].kv = kv;
		if (rec.kv_endpoint_host[0])
			d->w[s].kv.endpoint_host = strdup(rec.kv_endpoint_host);
		if (rec.kv_topic[0])
			d->w[s].kv.topic = strdup(rec.kv_topic);
		pred_publish(d, &d->w[s]);
		/* the block size the previous statebus agreed for the model holds
		 * until discovery says otherwise: a worker that answers first
		 * cannot reject the others for a moment */
		if (rec.kv_rejected == STATEBUS_KV_OK)
			oracle(d, &d->w[s]);
		sy_info("adopted worker %s (slot %u, generation %u)", rec.id, s, rec.generation);
	}
}

int sbd_fleet_add(struct sbd *d, const struct sy_config_worker *cw, uint32_t *slot)
{
	struct statebus_worker rec = {0};
	set_str(rec.id, sizeof(rec.id), cw->url);
	set_str(rec.model, sizeof(rec.model), cw->model ? cw->model : d->cfg.model_id);
	rec.role = (uint8_t)cw->role;
	rec.bootstrap_port = (uint16_t)cw->bootstrap_port;
	rec.engine = cw->engine == SY_ENGINE_VLLM ? STATEBUS_ENGINE_VLLM : STATEBUS_ENGINE_SGLANG;
	rec.healthy = 0; /* unknown (health_checked_ns 0) until its first probe passes */
	rec_apply_kv(&rec, &cw->kv_events);
	if (rec.dp_size > d->max_ranks)
		rec.dp_size = (uint16_t)d->max_ranks;
	uint32_t s, gen;
	int rc = statebus_worker_add(d->r, &rec, &s, &gen);
	if (rc == SY_EEXIST) {
		struct statebus_worker cur;
		if (statebus_worker_read(d->r, s, &cur) == SY_OK) {
			rec.healthy = cur.healthy;
			rec.health_failures = 0; /* adopted: the failure streak starts over */
			rec.health_checked_ns = cur.health_checked_ns;
		}
		/* A slot adopted at start-up keeps the facts in the table (what
		 * the engine told the previous statebus or router master) until
		 * its discovery publishes new ones: the configuration's alone
		 * would show routers, for a discovery round trip or as long as
		 * the engine does not answer, the default model, role and KV
		 * facts in place of the discovered ones — no candidate for the
		 * model (503 no_healthy_workers) and no cache signal. */
		bool adopted = d->w[s].used && d->w[s].gen == gen && d->w[s].restart_pending;
		rc = adopted ? SY_OK : statebus_worker_update(d->r, s, gen, &rec);
		if (rc == SY_OK)
			sy_info("worker %s: slot %u adopted (generation %u)", rec.id, s, gen);
	}
	if (rc != SY_OK)
		return rc;
	struct sbd_worker *w = &d->w[s];
	if (w->used && w->gen == gen) {
		w->rec = rec;
		w->rec.generation = gen;
		w->disc = w->disc == SBD_DISC_INFLIGHT ? SBD_DISC_INFLIGHT : SBD_DISC_PENDING;
	} else {
		local_init(d, s, gen, &rec);
		w->rec.generation = gen;
		w->rec.state = STATEBUS_WORKER_ACTIVE;
	}
	kv_copy(&w->kv, &cw->kv_events);
	w->cfg_role_set = cw->role != 0;
	w->cfg_engine = cw->engine;
	w->model_from_engine = cw->model_default ||
			       (cw->model == NULL &&
				strcmp(d->cfg.model_id, SY_CONFIG_DEFAULT_MODEL_ID) == 0);
	pred_publish(d, w);
	if (slot)
		*slot = s;
	return SY_OK;
}

static void oracle_forget_unused(struct sbd *d)
{
	for (uint32_t m = 0; m < d->n_models;) {
		bool used = false;
		for (uint32_t s = 0; s < d->n_slots && !used; s++)
			used = d->w[s].used && d->w[s].rec.kv_rejected == STATEBUS_KV_OK &&
			       d->w[s].rec.kv_block_size &&
			       strcmp(d->w[s].rec.model, d->models[m].model) == 0;
		if (!used)
			d->models[m] = d->models[--d->n_models];
		else
			m++;
	}
}

int sbd_fleet_remove(struct sbd *d, uint32_t slot)
{
	if (slot >= d->n_slots || !d->w[slot].used)
		return SY_ENOENT;
	struct sbd_worker *w = &d->w[slot];
	(void)statebus_worker_mark_removing(d->r, slot, w->gen);
	sbd_sub_close(d, w);
	sbd_apply_clear_worker(d, slot);
	int rc = statebus_worker_remove(d->r, slot, w->gen);
	sy_info("removed worker %s (slot %u)", w->rec.id, slot);
	kv_free(&w->kv);
	free(w->ranks);
	memset(w, 0, sizeof(*w));
	oracle_forget_unused(d);
	return rc;
}

/* Whether worker y's KV facts are judged by its model's block size: its
 * facts are settled (discovered), it has a block size and was rejected for
 * nothing but (possibly) a mismatch. */
static bool oracle_judged(const struct sbd_worker *y)
{
	return y->used && y->disc == SBD_DISC_DONE && y->rec.has_cache_signal &&
	       y->rec.kv_block_size != 0 &&
	       (y->rec.kv_rejected == STATEBUS_KV_OK ||
		y->rec.kv_rejected == STATEBUS_KV_BLOCK_SIZE_MISMATCH);
}

/* Model `m` now has block size `bs`, set by worker w: re-judges every other
 * settled worker of the model. One that no longer agrees is rejected (its
 * sockets reopened without KV, its blocks cleared, its streams start over);
 * one rejected earlier that now agrees is accepted and subscribed. */
static void oracle_rejudge(struct sbd *d, const struct sbd_worker *w, uint32_t bs)
{
	for (uint32_t s = 0; s < d->n_slots; s++) {
		struct sbd_worker *y = &d->w[s];
		if (y == w || !oracle_judged(y) || strcmp(y->rec.model, w->rec.model) != 0)
			continue;
		bool was_ok = y->rec.kv_rejected == STATEBUS_KV_OK;
		bool ok = y->rec.kv_block_size == bs;
		if (was_ok == ok)
			continue;
		if (ok) {
			y->rec.kv_rejected = STATEBUS_KV_OK;
			sy_info("worker %s: block size %u agrees with model %s as set by %s "
				"(registered earlier); its KV events are indexed", y->rec.id,
				bs, y->rec.model, w->rec.id);
		} else {
			y->rec.kv_rejected = STATEBUS_KV_BLOCK_SIZE_MISMATCH;
			statebus_counter_add(d->r, STATEBUS_CTR_WORKER_BLOCK_SIZE_MISMATCH, 1);
			sy_error("worker %s: block size %u disagrees with %u of model %s as set by "
				 "%s (registered earlier); its KV events are no longer indexed",
				 y->rec.id, y->rec.kv_block_size, bs, y->rec.model, w->rec.id);
			sbd_apply_clear_worker(d, y->slot);
		}
		sbd_fleet_publish(d, y);
		sbd_sub_open(d, y);
		for (uint32_t k = 0; k < y->n_ranks; k++) {
			sbd_seq_resubscribe(&y->ranks[k].st); /* a new stream from here */
			y->ranks[k].dirty = true;
		}
	}
}

/* Applies the block-size oracle to w->rec (has_cache_signal and block size
 * already set); may re-judge the model's other workers (see the top). */
static void oracle(struct sbd *d, struct sbd_worker *w)
{
	if (!w->rec.has_cache_signal || w->rec.kv_block_size == 0 ||
	    w->rec.kv_rejected != STATEBUS_KV_OK)
		return; /* a rejected worker never sets its model's block size */
	for (uint32_t m = 0; m < d->n_models; m++) {
		if (strcmp(d->models[m].model, w->rec.model) != 0)
			continue;
		if (d->models[m].block_size == w->rec.kv_block_size) {
			if (w->order < d->models[m].order)
				d->models[m].order = w->order;
		} else if (w->order <= d->models[m].order) {
			/* registered before the worker that set it (or w set it and
			 * its block size changed): w was first */
			sy_warn("worker %s: block size %u of model %s replaces %u (it is registered "
				"before the worker that set it)", w->rec.id, w->rec.kv_block_size,
				w->rec.model, d->models[m].block_size);
			d->models[m].block_size = w->rec.kv_block_size;
			d->models[m].order = w->order;
			oracle_rejudge(d, w, w->rec.kv_block_size);
		} else {
			w->rec.kv_rejected = STATEBUS_KV_BLOCK_SIZE_MISMATCH;
			statebus_counter_add(d->r, STATEBUS_CTR_WORKER_BLOCK_SIZE_MISMATCH, 1);
			sy_error("worker %s: block size %u disagrees with %u of model %s; "
				 "its KV events are not indexed", w->rec.id, w->rec.kv_block_size,
				 d->models[m].block_size, w->rec.model);
		}
		return;
	}
	void *grown = realloc(d->models, (d->n_models + 1) * sizeof(*d->models));
	if (grown == NULL)
		return;
	d->models = grown;
	set_str(d->models[d->n_models].model, sizeof(d->models[0].model), w->rec.model);
	d->models[d->n_models].order = w->order;
	d->models[d->n_models++].block_size = w->rec.kv_block_size;
}

/* Completes w->rec from facts (may be NULL: configuration only). */
static void finalise(struct sbd *d, struct sbd_worker *w, const struct sbd_facts *f)
{
	struct statebus_worker *rec = &w->rec;
	rec_apply_kv(rec, &w->kv);
	rec->kv_rejected = STATEBUS_KV_OK;
	rec->kv_bigram = 0;
	if (f != NULL) {
		if (f->role == STATEBUS_WORKER_PREFILL || f->role == STATEBUS_WORKER_DECODE)
			rec->role = (uint8_t)f->role;
		if (rec->role == STATEBUS_WORKER_PREFILL && rec->bootstrap_port == 0)
			rec->bootstrap_port = (uint16_t)f->bootstrap_port;
		if (w->model_from_engine && f->model[0] != '\0' && strcmp(rec->model, f->model) != 0) {
			sy_info("worker %s: model \"%s\" (from /server_info)", rec->id, f->model);
			set_str(rec->model, sizeof(rec->model), f->model);
		}
		if (f->has_kv) {
			set_str(rec->kv_endpoint_host, sizeof(rec->kv_endpoint_host), f->endpoint_host);
			if (f->endpoint_port_base)
				rec->kv_port_base = (uint16_t)f->endpoint_port_base;
			if (f->topic[0] || w->kv.topic == NULL)
				set_str(rec->kv_topic, sizeof(rec->kv_topic), f->topic);
			if (f->block_size)
				rec->kv_block_size = (uint32_t)f->block_size;
			if (f->load_port_base)
				rec->load_port_base = (uint16_t)f->load_port_base;
			if (f->replay_port_base)
				rec->kv_replay_port_base = (uint16_t)f->replay_port_base;
		}
		if (f->dp_size)
			rec->dp_size = (uint16_t)f->dp_size;
		w->kv_capacity_tokens = (uint64_t)f->max_total_num_tokens;
		w->page_size = (uint32_t)f->page_size;
		rec->kv_bigram = f->bigram;
		if (f->bigram_unrecognised) {
			statebus_counter_add(d->r, STATEBUS_CTR_KV_BIGRAM_UNRECOGNISED, 1);
			sy_warn("worker %s: speculative_algorithm %s looks like EAGLE/MTP but is not "
				"EAGLE, EAGLE3 or FROZEN_KV_MTP; hashing as unigram", rec->id,
				f->speculative_algorithm);
		}
		rec->has_cache_signal = (f->has_kv || w->kv.endpoint_port_base) && rec->kv_port_base;
		if (f->has_kv && rec->kv_port_base == 0)
			rec->kv_rejected = STATEBUS_KV_BAD_FACTS;
		if (!f->has_kv && !w->kv.endpoint_port_base) {
			statebus_counter_add(d->r, STATEBUS_CTR_WORKER_NO_CACHE_SIGNAL, 1);
			/* Approximate mode: the router's predictions are this
			 * worker's only cache signal, hashed in its pages. */
			if (rec->kv_block_size == 0 && f->page_size > 0)
				rec->kv_block_size = (uint32_t)f->page_size;
			if (rec->kv_block_size > 0)
				sy_warn("worker %s: /server_info has no kv_events block and none is "
					"configured; cache state predicted from routing (block %u)",
					rec->id, rec->kv_block_size);
			else
				sy_warn("worker %s: /server_info has no kv_events block and none is "
					"configured; no cache signal, routed on load only",
					rec->id);
		}
	}
	if (f != NULL && f->invalid != NULL) {
		rec->kv_rejected = STATEBUS_KV_BAD_FACTS;
		rec->load_port_base = 0;
		sy_error("worker %s: /server_info: %s; its KV events and load are not used",
			 rec->id, f->invalid);
	}
	if (!sy_config_kv_events_on(&d->cfg, &w->kv)) {
		/* KV events off by configuration: no subscription; the router's
		 * predictions are the worker's cache signal (approximate mode). */
		rec->has_cache_signal = false;
		if (rec->kv_block_size == 0 && w->page_size > 0)
			rec->kv_block_size = w->page_size;
		if (f != NULL)
			sy_info("worker %s: KV events off (%s); cache state predicted from routing "
				"(block %u)", rec->id,
				w->kv.subscribe == SY_KV_SUBSCRIBE_OFF ? "workers[].kv_events.subscribe"
								       : "statebus.kv_events",
				rec->kv_block_size);
	}
	if (rec->dp_size == 0)
		rec->dp_size = 1;
	if (rec->dp_size > d->max_ranks) {
		/* Ranks past the region's capacity can never report: indexing or
		 * summing the first max_ranks would be a partial view taken as
		 * complete (sglang-wire.md §13). Load stays unknown. */
		sy_error("worker %s: dp_size %u over the region's %u ranks; its KV events and "
			 "load are not used", rec->id, rec->dp_size, d->max_ranks);
		rec->dp_size = (uint16_t)d->max_ranks;
		rec->kv_rejected = STATEBUS_KV_BAD_FACTS;
		rec->load_port_base = 0;
	}
	oracle(d, w);
}

/* A model is served plain or prefill + decode (common/config_models.c): a
 * worker whose role conflicts with its model's configured kind, or with the
 * kind of the model's workers discovered before it, is refused. Writes the
 * reason to `why`. */
static bool role_conflicts(const struct sbd *d, const struct sbd_worker *w, char *why, size_t cap)
{
	bool pd = w->rec.role != STATEBUS_WORKER_PLAIN;
	enum sy_model_kind k = sy_config_model_kind(&d->cfg, w->rec.model);
	if (k != SY_MODEL_ANY && (k == SY_MODEL_PD) != pd) {
		snprintf(why, cap, "model \"%.60s\" is configured %s", w->rec.model,
			 k == SY_MODEL_PD ? "prefill + decode" : "plain");
		return true;
	}
	for (uint32_t s = 0; s < d->n_slots; s++) {
		const struct sbd_worker *y = &d->w[s];
		if (!y->used || y == w || y->disc != SBD_DISC_DONE ||
		    strcmp(y->rec.model, w->rec.model) != 0 ||
		    (y->rec.role != STATEBUS_WORKER_PLAIN) == pd)
			continue;
		snprintf(why, cap, "model \"%.40s\" is served %s by %.60s", w->rec.model,
			 pd ? "plain" : "prefill + decode", y->rec.id);
		return true;
	}
	return false;
}

/* Refuses w when role_conflicts(): logged, counted, removed. */
static bool refuse_conflict(struct sbd *d, struct sbd_worker *w)
{
	char why[160];
	if (!role_conflicts(d, w, why, sizeof(why)))
		return false;
	statebus_counter_add(d->r, STATEBUS_CTR_WORKER_ROLE_CONFLICTS, 1);
	sy_error("worker %s: refused: it is %s but %s; a model is served plain or "
		 "prefill + decode, never both",
		 w->rec.id, w->rec.role == 1 ? "prefill" : w->rec.role == 2 ? "decode" : "plain", why);
	sbd_fleet_remove(d, w->slot);
	return true;
}

/* Discovery of w failed (`what` failed with `why`): retried later when no
 * KV endpoint is configured; else the configured facts are used. Returns
 * true when w is to be finalised from the configuration now. */
static bool disc_failed(struct sbd *d, struct sbd_worker *w, const char *what, const char *why)
{
	statebus_counter_add(d->r, STATEBUS_CTR_DISCOVERY_FAILURES, 1);
	if (w->kv.endpoint_port_base == 0) {
		w->disc = SBD_DISC_PENDING;
		w->disc_next_ns = sy_mono_ns() + ms(d->cfg.statebus.discovery_retry_ms);
		sy_warn("worker %s: %s failed (%s); retrying in %d ms", w->rec.id, what, why,
			d->cfg.statebus.discovery_retry_ms);
		return false;
	}
	sy_warn("worker %s: %s failed (%s); using the configured KV facts", w->rec.id, what, why);
	return true;
}

/* Sets w's engine kind; a change clears what it indexed as the other kind. */
static void set_engine(struct sbd *d, struct sbd_worker *w, uint8_t engine)
{
	if (w->rec.engine == engine)
		return;
	sbd_apply_clear_worker(d, w->slot);
	w->rec.engine = engine;
}

static void disc_log(const struct sbd_worker *w)
{
	sy_info("worker %s: %s %s, dp %u, block %u%s, kv %s:%u topic '%s'%s%s", w->rec.id,
		w->rec.engine == STATEBUS_ENGINE_VLLM ? "vllm" : "sglang",
		w->rec.role == 1 ? "prefill" : w->rec.role == 2 ? "decode" : "plain",
		w->rec.dp_size, w->rec.kv_block_size, w->rec.kv_bigram ? " bigram" : "",
		w->rec.kv_endpoint_host, w->rec.kv_port_base, w->rec.kv_topic,
		w->rec.load_port_base ? ", LoadStat" : "",
		w->rec.kv_rejected ? ", KV REJECTED" : "");
}

void sbd_fleet_vllm_discovered(struct sbd *d, const struct sbd_http_result *res)
{
	if (res->slot >= d->n_slots || !d->w[res->slot].used || d->w[res->slot].gen != res->gen)
		return;
	struct sbd_worker *w = &d->w[res->slot];
	bool models = res->kind == SBD_HTTP_VLLM_MODELS;
	const char *what = models ? "vLLM /v1/models" : "vLLM /version";
	char buf[STATEBUS_MODEL_MAX];
	uint32_t adapters = 0;
	int rc = !res->ok ? SY_EIO
		 : models ? sbd_vllm_models_parse(res->body, res->len, buf, sizeof(buf), &adapters,
						  w->vllm_adapters, sizeof(w->vllm_adapters))
			  : sbd_vllm_version_parse(res->body, res->len, buf, sizeof(buf));
	if (rc != SY_OK) {
		if (!disc_failed(d, w, what, res->ok ? "unexpected body" : res->error))
			return;
		w->disc = SBD_DISC_DONE; /* configured facts; the engine kind as configured */
		finalise(d, w, NULL);
	} else if (models) {
		memcpy(w->vllm_model, buf, sizeof(buf));
		if (adapters)
			sy_info("worker %s: vLLM serves %s and %u LoRA adapter(s)", w->rec.id, buf,
				adapters);
		if (sbd_http_submit(d->http, SBD_HTTP_VLLM_VERSION, w->slot, w->gen, w->rec.id) != SY_OK)
			w->disc = SBD_DISC_PENDING;
		return;
	} else {
		w->disc = SBD_DISC_DONE;
		set_engine(d, w, STATEBUS_ENGINE_VLLM);
		memcpy(w->rec.lora_adapters, w->vllm_adapters, sizeof(w->rec.lora_adapters));
		if (w->model_from_engine && w->vllm_model[0] &&
		    strcmp(w->rec.model, w->vllm_model) != 0) {
			sy_info("worker %s: model \"%s\" (from /v1/models)", w->rec.id, w->vllm_model);
			set_str(w->rec.model, sizeof(w->rec.model), w->vllm_model);
		}
		sy_info("worker %s: vLLM %s", w->rec.id, buf);
		finalise(d, w, NULL);
		if (!w->rec.has_cache_signal && w->rec.kv_block_size > 0)
			sy_warn("worker %s: vLLM without KV events (no "
				"workers[].kv_events.endpoint_port_base, or events off); cache state "
				"predicted from routing (block %u)", w->rec.id, w->rec.kv_block_size);
		else if (!w->rec.has_cache_signal)
			sy_warn("worker %s: vLLM without workers[].kv_events.endpoint_port_base or "
				"block_size: no cache signal, routed on load only", w->rec.id);
	}
	if (refuse_conflict(d, w))
		return;
	sbd_fleet_publish(d, w);
	sbd_sub_open(d, w);
	disc_log(w);
}

void sbd_fleet_discovered(struct sbd *d, uint32_t slot, uint32_t gen, const char *body,
			  size_t len, const char *error, long status)
{
	if (slot >= d->n_slots || !d->w[slot].used || d->w[slot].gen != gen)
		return; /* removed or replaced meanwhile */
	struct sbd_worker *w = &d->w[slot];
	struct sbd_facts f;
	char why[160] = "";
	bool ok = body != NULL &&
		  sbd_discovery_parse(body, len, w->rec.id, &f, why, sizeof(why)) == SY_OK;
	if (!ok && body == NULL && status >= 400 && status <= 499 &&
	    w->cfg_engine != SY_ENGINE_SGLANG &&
	    sbd_http_submit(d->http, SBD_HTTP_VLLM_MODELS, slot, gen, w->rec.id) == SY_OK) {
		sy_debug("worker %s: /server_info answered %ld; trying vLLM's /v1/models",
			 w->rec.id, status);
		return; /* still in flight */
	}
	if (!ok && !disc_failed(d, w, "/server_info", body ? why : error))
		return;
	w->disc = SBD_DISC_DONE;
	if (ok)
		set_engine(d, w, STATEBUS_ENGINE_SGLANG);
	finalise(d, w, ok ? &f : NULL);
	if (refuse_conflict(d, w))
		return;
	sbd_fleet_publish(d, w);
	sbd_sub_open(d, w);
	disc_log(w);
}

void sbd_fleet_health(struct sbd *d, uint32_t slot, uint32_t gen, bool ok, const char *error)
{
	if (slot >= d->n_slots || !d->w[slot].used || d->w[slot].gen != gen)
		return;
	struct sbd_worker *w = &d->w[slot];
	w->health_inflight = false;
	bool was = w->rec.healthy;
	uint64_t now = sy_mono_ns();
	if (ok) {
		w->health_ok_streak++;
		w->rec.health_failures = 0;
		/* unknown (never checked) → healthy at the first success; an
		 * unhealthy worker needs the success threshold */
		if (!was && (w->rec.health_checked_ns == 0 ||
			     w->health_ok_streak >= (uint32_t)d->cfg.statebus.health_success_threshold))
			w->rec.healthy = 1;
		unsigned cleared = statebus_health_probe_ok(d->r, slot, gen, w->health_sent_ns, now);
		if (cleared)
			sy_info("worker %s: health probe passed, %s cleared", w->rec.id,
				cleared == STATEBUS_HEALTH_CLEARED_DOWN	   ? "passive down mark"
				: cleared == STATEBUS_HEALTH_CLEARED_STALL ? "stall"
									   : "down mark and stall");
	} else {
		w->health_ok_streak = 0;
		w->rec.health_failures++;
		statebus_counter_add(d->r, STATEBUS_CTR_HEALTH_CHECK_FAILURES, 1);
		if (was && w->rec.health_failures >= (uint32_t)d->cfg.statebus.health_failure_threshold)
			w->rec.healthy = 0;
	}
	w->rec.health_checked_ns = now;
	if (was != w->rec.healthy)
		sy_warn("worker %s is now %s%s%s", w->rec.id, w->rec.healthy ? "healthy" : "unhealthy",
			ok ? "" : ": ", ok ? "" : error);
	(void)statebus_worker_set_health(d->r, slot, gen, w->rec.healthy, w->rec.health_checked_ns,
					 w->rec.health_failures);
}

/* When w's next probe is due: the interval, or sooner while a router
 * process has it marked down or stalled (the mark is cleared only by a
 * probe sent after it, so recovery waits for the next probe). */
static uint64_t health_due(struct sbd *d, const struct sbd_worker *w)
{
	struct statebus_health h;
	if (statebus_health_read(d->r, w->slot, &h) != SY_OK || h.worker_gen != w->gen ||
	    (h.down_since_ns == 0 && h.stalled_since_ns == 0))
		return w->health_next_ns;
	uint64_t fast = w->health_sent_ns + SBD_HEALTH_MARKED_INTERVAL_NS;
	uint64_t mark = h.down_since_ns ? h.down_since_ns : h.stalled_since_ns;
	if (w->health_sent_ns <= mark)
		return mark; /* at once: no probe went out since the mark */
	return fast < w->health_next_ns ? fast : w->health_next_ns;
}

void sbd_fleet_timers(struct sbd *d, uint64_t now)
{
	for (uint32_t s = 0; s < d->n_slots; s++) {
		struct sbd_worker *w = &d->w[s];
		if (!w->used)
			continue;
		int kind = w->cfg_engine == SY_ENGINE_VLLM ? SBD_HTTP_VLLM_MODELS : SBD_HTTP_DISCOVER;
		if (w->disc == SBD_DISC_PENDING && now >= w->disc_next_ns &&
		    sbd_http_submit(d->http, kind, s, w->gen, w->rec.id) == SY_OK)
			w->disc = SBD_DISC_INFLIGHT;
		int iv = d->cfg.statebus.metrics_interval_ms;
		if (w->rec.engine == STATEBUS_ENGINE_VLLM && w->disc == SBD_DISC_DONE && iv > 0 &&
		    !w->scrape_inflight && now >= w->scrape_next_ns &&
		    sbd_http_submit(d->http, SBD_HTTP_METRICS, s, w->gen, w->rec.id) == SY_OK) {
			w->scrape_inflight = true;
			w->scrape_next_ns = now + ms(iv);
		}
		if (!d->cfg.statebus.disable_health_check && !w->health_inflight &&
		    now >= health_due(d, w) &&
		    sbd_http_submit(d->http, SBD_HTTP_HEALTH, s, w->gen, w->rec.id) == SY_OK) {
			w->health_inflight = true;
			w->health_sent_ns = now;
			w->health_next_ns = now + ms(d->cfg.statebus.health_interval_ms);
		}
	}
}
