/* control.c — the statebus control socket: ZMQ REP at
 * statebus.control_endpoint (default ipc://<shm_path>.ctl; DESIGN §5).
 *
 * One JSON object per request, one per reply (docs/control.md):
 *   {"op": "status"}
 *   {"op": "add_worker", "url": URL, "role": "plain|prefill|decode",
 *    "engine": "auto|sglang|vllm",
 *    "model": M, "bootstrap_port": P, "kv_events": {endpoint_host,
 *    endpoint_port_base, topic, block_size, dp_size, replay_port_base,
 *    load_endpoint_port_base, subscribe: fleet|on|off}}
 *   {"op": "remove_worker", "url": URL}
 * Replies: {"ok": true, ...} or {"ok": false, "error": "..."}. Requests
 * over 64 KiB or not JSON get an error reply (REP must always answer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zmq.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/url.h"
#include "sbd.h"
#include "statebus-counters.h"

#define REQ_MAX 65536

int sbd_control_open(struct sbd *d, char *err, size_t cap)
{
	const char *ep = d->cfg.statebus.control_endpoint;
	if (ep == NULL)
		return SY_OK;
	void *s = zmq_socket(d->zctx, ZMQ_REP);
	int v = 0;
	zmq_setsockopt(s, ZMQ_LINGER, &v, sizeof(v));
	int rc = sbd_bind(d, s, ep, "control socket", err, cap);
	if (rc != SY_OK) {
		zmq_close(s);
		return rc;
	}
	d->control = s;
	return SY_OK;
}

void sbd_control_close(struct sbd *d)
{
	if (d->control == NULL)
		return;
	zmq_close(d->control);
	d->control = NULL;
	const char *ep = d->cfg.statebus.control_endpoint;
	if (ep && strncmp(ep, "ipc://", 6) == 0)
		unlink(ep + 6);
}

static json_t *fail(const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
	return json_pack("{s:b,s:s}", "ok", 0, "error", msg);
}

static json_t *status(struct sbd *d)
{
	struct statebus_header_info h;
	statebus_region_info(d->r, &h);
	json_t *o = json_pack("{s:b,s:i,s:s,s:I}", "ok", 1, "pid", (int)getpid(), "shm",
			      d->cfg.state.shm_path, "index_incarnation",
			      (json_int_t)h.index_incarnation);
	json_t *ws = json_array();
	for (uint32_t s = 0; s < d->n_slots; s++) {
		struct sbd_worker *w = &d->w[s];
		if (!w->used)
			continue;
		json_array_append_new(ws, json_pack("{s:s,s:i,s:i,s:b,s:b}", "worker", w->rec.id,
						    "slot", (int)s, "dp_size", (int)w->rec.dp_size,
						    "discovered", w->disc == SBD_DISC_DONE,
						    "healthy", w->rec.healthy));
	}
	json_object_set_new(o, "workers", ws);
	json_t *c = json_object();
	for (unsigned i = 0; i < STATEBUS_CTR_COUNT_; i++)
		json_object_set_new(c, statebus_counter_name(i),
				    json_integer((json_int_t)statebus_counter_get(d->r, i)));
	json_object_set_new(o, "counters", c);
	return o;
}

static int get_int(json_t *o, const char *k, int lo, int hi, int *out)
{
	json_t *v = json_object_get(o, k);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -1;
	*out = (int)json_integer_value(v);
	return 0;
}

static json_t *add_worker(struct sbd *d, json_t *req)
{
	const char *url = json_string_value(json_object_get(req, "url"));
	if (url == NULL)
		return fail("add_worker needs \"url\"", NULL);
	char id[STATEBUS_WORKER_ID_MAX];
	const char *why = NULL;
	if (sy_url_normalize(url, strlen(url), id, sizeof(id), &why) < 0)
		return fail("bad url: %s", why ? why : "too long");
	struct sy_config_worker cw = {0};
	cw.url = id;
	const char *role = json_string_value(json_object_get(req, "role"));
	if (role != NULL) {
		if (strcmp(role, "prefill") == 0)
			cw.role = SY_ROLE_PREFILL;
		else if (strcmp(role, "decode") == 0)
			cw.role = SY_ROLE_DECODE;
		else if (strcmp(role, "plain") != 0)
			return fail("role must be plain, prefill or decode", NULL);
	}
	cw.model = (char *)json_string_value(json_object_get(req, "model"));
	json_t *kv = json_object_get(req, "kv_events");
	const char *engine = json_string_value(json_object_get(req, "engine"));
	if (engine != NULL) {
		if (strcmp(engine, "sglang") == 0)
			cw.engine = SY_ENGINE_SGLANG;
		else if (strcmp(engine, "vllm") == 0)
			cw.engine = SY_ENGINE_VLLM;
		else if (strcmp(engine, "auto") != 0)
			return fail("engine must be auto, sglang or vllm", NULL);
	}
	if (get_int(req, "bootstrap_port", 1, 65535, &cw.bootstrap_port) != 0)
		return fail("bad bootstrap_port", NULL);
	if (json_is_object(kv)) {
		struct sy_config_kv_events *k = &cw.kv_events;
		if (get_int(kv, "endpoint_port_base", 1, 65535, &k->endpoint_port_base) ||
		    get_int(kv, "block_size", 1, 1 << 20, &k->block_size) ||
		    get_int(kv, "dp_size", 1, 1024, &k->dp_size) ||
		    get_int(kv, "replay_port_base", 1, 65535, &k->replay_port_base) ||
		    get_int(kv, "load_endpoint_port_base", 1, 65535, &k->load_endpoint_port_base))
			return fail("bad kv_events value", NULL);
		k->endpoint_host = (char *)json_string_value(json_object_get(kv, "endpoint_host"));
		k->topic = (char *)json_string_value(json_object_get(kv, "topic"));
		const char *sub = json_string_value(json_object_get(kv, "subscribe"));
		if (sub != NULL) {
			if (strcmp(sub, "on") == 0)
				k->subscribe = SY_KV_SUBSCRIBE_ON;
			else if (strcmp(sub, "off") == 0)
				k->subscribe = SY_KV_SUBSCRIBE_OFF;
			else if (strcmp(sub, "fleet") != 0)
				return fail("kv_events.subscribe must be fleet, on or off", NULL);
		}
		if (!sy_config_kv_events_on(&d->cfg, k) &&
		    (k->endpoint_port_base || k->replay_port_base || k->endpoint_host || k->topic))
			return fail("kv_events endpoint keys given for a worker whose KV events are "
				    "off; remove them, or use kv_events.subscribe on", NULL);
	}
	uint32_t slot;
	int rc = sbd_fleet_add(d, &cw, &slot);
	if (rc != SY_OK)
		return fail("add_worker: %s", sy_strerror(rc));
	sy_info("control: added worker %s (slot %u)", id, slot);
	return json_pack("{s:b,s:s,s:i,s:i}", "ok", 1, "worker", id, "slot", (int)slot,
			 "generation", (int)d->w[slot].gen);
}

static json_t *remove_worker(struct sbd *d, json_t *req)
{
	const char *url = json_string_value(json_object_get(req, "url"));
	char id[STATEBUS_WORKER_ID_MAX];
	const char *why = NULL;
	if (url == NULL || sy_url_normalize(url, strlen(url), id, sizeof(id), &why) < 0)
		return fail("remove_worker needs a valid \"url\"", NULL);
	uint32_t slot, gen;
	if (statebus_worker_find(d->r, id, &slot, &gen) != SY_OK)
		return fail("no worker %s", id);
	int rc = sbd_fleet_remove(d, slot);
	if (rc != SY_OK)
		return fail("remove_worker: %s", sy_strerror(rc));
	return json_pack("{s:b,s:s}", "ok", 1, "worker", id);
}

static json_t *handle(struct sbd *d, const char *buf, size_t len)
{
	if (len > REQ_MAX)
		return fail("request over 64 KiB", NULL);
	json_error_t e;
	json_t *req = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);
	if (!json_is_object(req)) {
		json_decref(req);
		return fail("request is not a JSON object", NULL);
	}
	const char *op = json_string_value(json_object_get(req, "op"));
	json_t *rep;
	if (op == NULL)
		rep = fail("missing \"op\"", NULL);
	else if (strcmp(op, "status") == 0)
		rep = status(d);
	else if (strcmp(op, "add_worker") == 0)
		rep = add_worker(d, req);
	else if (strcmp(op, "remove_worker") == 0)
		rep = remove_worker(d, req);
	else
		rep = fail("unknown op \"%s\"", op);
	json_decref(req);
	return rep;
}

void sbd_control_readable(struct sbd *d)
{
	for (int i = 0; i < 64 && d->control; i++) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, d->control, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			return;
		}
		/* REP: a multi-part request is read whole; only the first part counts. */
		bool more = zmq_msg_more(&m);
		json_t *rep = handle(d, zmq_msg_data(&m), zmq_msg_size(&m));
		zmq_msg_close(&m);
		while (more) {
			zmq_msg_t x;
			zmq_msg_init(&x);
			if (zmq_msg_recv(&x, d->control, 0) < 0) {
				zmq_msg_close(&x);
				break;
			}
			more = zmq_msg_more(&x);
			zmq_msg_close(&x);
		}
		statebus_counter_add(d->r, STATEBUS_CTR_CONTROL_REQUESTS, 1);
		char *s = json_dumps(rep, JSON_COMPACT);
		json_decref(rep);
		const char *out = s ? s : "{\"ok\":false,\"error\":\"out of memory\"}";
		(void)zmq_send(d->control, out, strlen(out), 0);
		free(s);
	}
}
