/* prober.c — the router master's health probes while no statebus is live
 * (prober.h).
 *
 * One entry per worker slot: the generation it probes, its easy handle
 * while a probe runs, when the next is due, when the running one was sent,
 * its streaks and the `healthy` value to publish. Results are written to
 * the workers table under the writer lock (taken without waiting; a busy
 * lock keeps `dirty` and tries next tick).
 */
#include "router/core/prober.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "common/log.h"

/* Probe period while a router process has the worker marked down / stalled
 * (the statebus's SBD_HEALTH_MARKED_INTERVAL_NS). */
#define MARKED_INTERVAL_NS UINT64_C(250000000)

struct probe_slot {
	uint32_t gen;          /* generation probed; 0 = not tracked */
	CURL *easy;            /* running probe, NULL = none */
	uint64_t next_ns;      /* next probe due */
	uint64_t sent_ns;      /* the running / last probe was started */
	uint32_t ok_streak;
	uint32_t failures;     /* consecutive */
	bool known;            /* a result arrived for this generation */
	bool healthy;          /* value to publish */
	bool dirty;            /* `healthy` / checked not written yet */
	uint64_t checked_ns;
	int id_len;            /* bytes of the worker ID at the start of url */
	char url[STATEBUS_WORKER_ID_MAX + 200]; /* ID + statebus.health_endpoint */
};

struct rt_prober {
	CURLM *multi;
	uint64_t started_ns;
	uint32_t n;
	struct probe_slot s[];
};

static size_t discard(char *p, size_t sz, size_t n, void *u)
{
	(void)p, (void)u;
	return sz * n;
}

struct rt_prober *rt_prober_create(uint32_t slots, uint64_t now_ns)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return NULL;
	struct rt_prober *p = calloc(1, sizeof(*p) + (size_t)slots * sizeof(struct probe_slot));
	if (p == NULL)
		return NULL;
	p->multi = curl_multi_init();
	if (p->multi == NULL) {
		free(p);
		return NULL;
	}
	p->n = slots;
	p->started_ns = now_ns;
	return p;
}

static void stop_probe(struct rt_prober *p, struct probe_slot *s)
{
	if (s->easy == NULL)
		return;
	curl_multi_remove_handle(p->multi, s->easy);
	curl_easy_cleanup(s->easy);
	s->easy = NULL;
}

void rt_prober_free(struct rt_prober *p)
{
	if (p == NULL)
		return;
	for (uint32_t i = 0; i < p->n; i++)
		stop_probe(p, &p->s[i]);
	curl_multi_cleanup(p->multi);
	free(p);
}

static void start_probe(struct rt_prober *p, uint32_t slot, const struct sy_config *cfg,
			uint64_t now)
{
	struct probe_slot *s = &p->s[slot];
	CURL *e = curl_easy_init();
	if (e == NULL)
		return;
	curl_easy_setopt(e, CURLOPT_URL, s->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)cfg->statebus.health_timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->statebus.health_timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)(uintptr_t)slot);
	if (curl_multi_add_handle(p->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		return;
	}
	s->easy = e;
	s->sent_ns = now;
	s->next_ns = now + (uint64_t)cfg->statebus.health_interval_ms * 1000000u;
}

/* Applies one result to the slot's streaks (prober.h rules). */
static void result(struct rt_prober *p, struct statebus_region *r, uint32_t slot, bool ok,
		   const struct sy_config *cfg, uint64_t now, const char *why)
{
	struct probe_slot *s = &p->s[slot];
	bool was = s->healthy;
	if (ok) {
		s->ok_streak++;
		s->failures = 0;
		if (!s->known || s->ok_streak >= (uint32_t)cfg->statebus.health_success_threshold)
			s->healthy = true;
		unsigned cleared = statebus_health_probe_ok(r, slot, s->gen, s->sent_ns, now);
		if (cleared)
			sy_info("degraded mode: worker %.*s: health probe passed, %s cleared",
				s->id_len, s->url,
				cleared & STATEBUS_HEALTH_CLEARED_DOWN ? "passive down mark" : "stall");
	} else {
		s->ok_streak = 0;
		s->failures++;
		if (!s->known || s->failures >= (uint32_t)cfg->statebus.health_failure_threshold)
			s->healthy = false;
	}
	if (was != s->healthy || !s->known)
		sy_info("degraded mode: worker %.*s is %s%s%s",
			s->id_len, s->url,
			s->healthy ? "healthy" : "unhealthy", ok ? "" : ": ", ok ? "" : why);
	s->known = true;
	s->checked_ns = now;
	s->dirty = true;
}

static void reap(struct rt_prober *p, struct statebus_region *r, const struct sy_config *cfg,
		 uint64_t now)
{
	int running = 0, left = 0;
	curl_multi_perform(p->multi, &running);
	CURLMsg *m;
	while ((m = curl_multi_info_read(p->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *e = m->easy_handle;
		void *priv = NULL;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
		uint32_t slot = (uint32_t)(uintptr_t)priv;
		long code = 0;
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
		CURLcode rc = m->data.result;
		if (slot < p->n && p->s[slot].easy == e) {
			p->s[slot].easy = NULL;
			char why[256];
			if (rc != CURLE_OK)
				snprintf(why, sizeof(why), "%s", curl_easy_strerror(rc));
			else
				snprintf(why, sizeof(why), "%s answered %ld", p->s[slot].url + p->s[slot].id_len,
					 code);
			result(p, r, slot, rc == CURLE_OK && code >= 200 && code < 300, cfg, now, why);
		}
		curl_multi_remove_handle(p->multi, e);
		curl_easy_cleanup(e);
	}
}

/* Writes dirty results under the writer lock; returns how many. */
static int publish(struct rt_prober *p, struct statebus_region *r)
{
	bool any = false;
	for (uint32_t i = 0; i < p->n && !any; i++)
		any = p->s[i].dirty;
	if (!any || statebus_writer_lock(r, false) != SY_OK)
		return 0;
	int n = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		struct probe_slot *s = &p->s[i];
		if (!s->dirty)
			continue;
		s->dirty = false;
		if (statebus_worker_set_health(r, i, s->gen, s->healthy, s->checked_ns, s->failures) ==
		    SY_OK)
			n++;
	}
	statebus_writer_unlock(r);
	return n;
}

/* statebus.disable_health_check: no probes, every ACTIVE worker healthy. */
static int all_healthy(struct rt_prober *p, struct statebus_region *r, uint64_t now)
{
	uint32_t cap = statebus_workers_capacity(r);
	for (uint32_t i = 0; i < p->n; i++) {
		struct probe_slot *s = &p->s[i];
		struct statebus_worker w;
		stop_probe(p, s);
		if (i >= cap || statebus_worker_read(r, i, &w) != SY_OK ||
		    w.state != STATEBUS_WORKER_ACTIVE) {
			s->gen = 0;
			continue;
		}
		if (s->gen != w.generation || !s->known) {
			memset(s, 0, sizeof(*s));
			s->gen = w.generation;
			s->known = true;
			s->healthy = true;
			s->checked_ns = now;
			s->dirty = w.healthy == 0;
		}
	}
	return publish(p, r);
}

int rt_prober_tick(struct rt_prober *p, struct statebus_region *r, const struct sy_config *cfg,
		   uint64_t now_ns, bool active)
{
	if (p == NULL || r == NULL)
		return 0;
	if (!active) {
		for (uint32_t i = 0; i < p->n; i++) {
			stop_probe(p, &p->s[i]);
			p->s[i].gen = 0; /* the statebus judges health; start afresh later */
		}
		return 0;
	}
	if (cfg->statebus.disable_health_check)
		return all_healthy(p, r, now_ns);
	reap(p, r, cfg, now_ns);
	bool grace_over = now_ns >= p->started_ns +
				    (uint64_t)cfg->router.health_unknown_grace_secs * 1000000000u;
	uint32_t cap = statebus_workers_capacity(r);
	for (uint32_t i = 0; i < p->n && i < cap; i++) {
		struct probe_slot *s = &p->s[i];
		struct statebus_worker w;
		if (statebus_worker_read(r, i, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE) {
			stop_probe(p, s);
			s->gen = 0;
			continue;
		}
		if (s->gen != w.generation) {
			stop_probe(p, s);
			memset(s, 0, sizeof(*s));
			s->gen = w.generation;
			s->known = w.health_checked_ns != 0;
			s->healthy = w.healthy != 0;
			s->checked_ns = w.health_checked_ns;
			s->id_len = (int)strlen(w.id);
			snprintf(s->url, sizeof(s->url), "%s%s", w.id, cfg->statebus.health_endpoint);
			s->next_ns = now_ns;
		}
		if (!s->known && grace_over && s->healthy) {
			/* the grace ended before its first answer */
			s->healthy = false;
			s->dirty = true;
			s->checked_ns = 0;
		}
		if (s->easy != NULL)
			continue;
		uint64_t due = s->next_ns;
		struct statebus_health h;
		if (statebus_health_read(r, i, &h) == SY_OK && h.worker_gen == s->gen &&
		    (h.down_since_ns != 0 || h.stalled_since_ns != 0)) {
			uint64_t mark = h.down_since_ns ? h.down_since_ns : h.stalled_since_ns;
			uint64_t fast = s->sent_ns <= mark ? mark : s->sent_ns + MARKED_INTERVAL_NS;
			if (fast < due)
				due = fast;
		}
		if (now_ns >= due)
			start_probe(p, i, cfg, now_ns);
	}
	int running = 0;
	curl_multi_perform(p->multi, &running);
	return publish(p, r);
}

bool rt_prober_settled(const struct rt_prober *p, const struct statebus_region *r)
{
	uint32_t cap = statebus_workers_capacity(r);
	for (uint32_t i = 0; i < p->n && i < cap; i++) {
		struct statebus_worker w;
		if (statebus_worker_read(r, i, &w) != SY_OK || w.state != STATEBUS_WORKER_ACTIVE)
			continue;
		if (p->s[i].gen != w.generation || !p->s[i].known || p->s[i].dirty)
			return false;
	}
	return true;
}
