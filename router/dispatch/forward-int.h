/* forward-int.h — what forward.c (one client request's attempts and its
 * response) and pd.c (the prefill leg of a PD attempt) share. Internal to
 * router/dispatch/.
 */
#ifndef SY_ROUTER_FORWARD_INT_H
#define SY_ROUTER_FORWARD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>

#include "router/core/generation.h"
#include "router/core/select.h"
#include "router/http/client_watch.h"
#include "router/http/infer.h"
#include "router/upstream/client.h"
#include "router/upstream/pool.h"

struct prefill;

/* Where a PD attempt failed (logs). */
enum pd_stage {
	PD_STAGE_PREFILL_CONNECT, /* the prefill connection could not be made */
	PD_STAGE_DECODE_CONNECT,  /* the decode connection could not be made */
	PD_STAGE_PREFILL,         /* the prefill request failed after both were sent */
	PD_STAGE_DECODE,          /* the decode request failed after both were sent */
};

/* One client request (its pool, with a dispose callback: forward.c). */
struct fwd {
	h2o_req_t *req;             /* NULL once disposed */
	struct router_gen *gen;     /* reference */
	enum route route;
	struct infer_request *ir;
	struct selection sel;       /* the current attempt's workers */
	uint64_t t_selected;        /* selection's end: first attempt's dispatch stamp */
	struct worker_exclude ex;   /* workers already failed (retries skip them) */
	h2o_iovec_t body;           /* forwarded body of the current attempt (pool) */
	h2o_iovec_t head;           /* request head (pool) */
	uint64_t room;              /* PD: first bootstrap_room of `body` (logs) */
	struct rt_upstream *up;
	struct rt_exchange ux;      /* plain worker, or the PD decode leg (its head
	                               timer: --header-timeout-secs) */
	h2o_timeout_entry_t idle_timer;
	h2o_timeout_entry_t request_timer; /* --request-timeout-secs: the whole request */
	h2o_timeout_entry_t retry_timer; /* backoff before the next attempt */
	h2o_timeout_entry_t send_timer; /* the first send waits for the end of the loop turn */
	h2o_iovec_t pend[3];        /* the current send: buffers, count and state */
	size_t pend_n;
	h2o_send_state_t pend_st;
	uint64_t retry_due_ns;
	struct selection next;      /* the attempt after the backoff */
	struct rt_client_watch watch;
	struct prefill *pf;         /* PD: the prefill leg while attached */
	h2o_generator_t generator;
	h2o_buffer_t *sending;      /* swapped-out data h2o is sending */
	h2o_buffer_t *tail;         /* detached input at end of stream */
	uint32_t guard_slot;        /* main target's in-flight guard */
	bool guard_held;
	bool stall_held;            /* counted by stall detection (stall.h) */
	bool d_connected;           /* PD: the decode connection exists */
	bool legs_sent;             /* PD: both requests were written */
	bool started;               /* the upstream head arrived */
	bool res_started;           /* the response is decided: its first send is queued */
	bool res_begun;             /* h2o_start_response was called */
	bool send_in_flight;        /* a send is queued or h2o is sending it */
	bool eos;                   /* upstream finished (or was cut) */
	bool body_error;            /* upstream body broke off */
	bool idle_timed_out;
	bool expired;               /* --request-timeout-secs passed: no retry */
	bool final_sent;
	bool streaming;             /* text/event-stream */
	bool buffering;             /* a non-streamed body held until complete */
	bool rerank_wrap;           /* ROUTE_RERANK answered 2xx: the body is held
	                               complete and re-wrapped (http/rerank.h) */
	bool ttft_done;
	bool cancelled;             /* the client went away (counted once) */
	bool own_chunks;            /* HTTP/1.1 chunk framing written here, not by h2o's filter */
	char chunk_head[20];        /* "<hex size>\r\n" of the chunk h2o is sending */
	int status;                 /* upstream status */
	unsigned attempts;
	uint64_t t_start, t_dispatch, t_connect_start;
	uint64_t bytes_out;
};

/* ---- forward.c, for pd.c ---- */

/* Head of a POST of the request to `up` (pool), with x-sgl-decode-url when
 * `decode_url` is not NULL (SGLang PD). */
h2o_iovec_t rt_fwd_head(struct fwd *f, const struct rt_upstream *up, const char *decode_url);

/* The current attempt failed before any byte reached the client with
 * `status` / `code` / `msg` (client-safe). `failed` is the worker to
 * exclude from a retry; `retryable` false forbids one. Retries when the
 * settings allow (another attempt starts after the backoff), else answers
 * the error. */
void rt_fwd_fail(struct fwd *f, const struct selected_worker *failed, bool retryable, int status,
		 const char *code, const char *msg);

/* Ends a started response as cut (the main exchange released first). */
void rt_fwd_cut(struct fwd *f);

/* Takes the main exchange's guard and stall count and starts it at `up`
 * (`hold`: connect only, rt_exchange_send writes it). */
void rt_fwd_open_main(struct fwd *f, struct rt_upstream *up, uint64_t now_ns, bool hold);

/* Takes the main target's in-flight guard ahead of its exchange (vLLM PD:
 * the decode counts as busy with the request while its prefill runs);
 * rt_fwd_open_main keeps it, rt_fwd_release_main drops it. */
void rt_fwd_guard(struct fwd *f, uint64_t now_ns);

/* Releases the decode leg: exchange, in-flight guard, stall count. */
void rt_fwd_release_main(struct fwd *f);

/* Passive health mark for a connect / close / timeout error (others: none;
 * none either with statebus.disable_health_check). */
void rt_fwd_passive_down(const struct selected_worker *w, const char *err);

/* Feeds `r` to worker `w`'s breaker (threshold of the configuration). */
void rt_fwd_breaker(struct selected_worker *w, int threshold, enum statebus_cb_result r);

/* Hands back an unanswered half-open probe of `w`. */
void rt_fwd_breaker_release(struct selected_worker *w);

/* ---- pd.c ---- */

/* Starts a PD attempt of f->sel: both connections are made first (the
 * decode's on f->ux, the prefill's in its own struct prefill), then both
 * requests are written. A leg that fails aborts the other and releases both
 * guards; before anything was sent the attempt may be retried. */
void rt_pd_start(struct fwd *f, uint64_t now_ns);

/* The decode exchange is connected: both requests go out once the
 * prefill's is too. */
void rt_pd_decode_connected(struct fwd *f);

/* The decode leg failed at `stage` (`why`, client-safe): logs the request
 * ID, the room, both workers and the stage, and aborts the prefill leg. The
 * caller answers (or cuts) the client's request. */
void rt_pd_decode_failed(struct fwd *f, enum pd_stage stage, const char *why);

/* The decode leg completed: the prefill leg, if still running, finishes on
 * its own (its guard is released when it ends). */
void rt_pd_detach(struct fwd *f);

/* The client request ends or goes away: aborts a prefill leg still attached. */
void rt_pd_abort(struct fwd *f);

/* Name of a stage for logs. */
const char *rt_pd_stage_name(enum pd_stage s);

#endif
