/* http.c — the statebus's HTTP thread: GET /server_info, /health, and for
 * vLLM engines /v1/models, /version and /metrics.
 *
 * libcurl's multi interface on one thread, never on the event loop: the
 * loop submits jobs (a FIFO under a mutex, curl_multi_wakeup) and takes
 * results (another FIFO); one byte written to a pipe wakes its zmq_poll.
 * Every request runs concurrently with the others, each with its own
 * timeout, so one hung engine never delays another's discovery or health
 * checks. Discovery follows SGLang's router (sglang-wire.md §10): per
 * attempt a timeout (default 2 s), up to N attempts (3) with a backoff of
 * 100 ms doubling — a timer here, never a sleep; retried on network errors
 * and 5xx, never on 4xx (vLLM's /v1/models and /version alike). Health:
 * one GET of statebus.health_endpoint (/health) per job, 2xx = ok. /metrics: one attempt per job.
 * Bodies are capped at 1 MiB. The thread holds no region pointer.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/clock.h"
#include "common/errors.h"
#include "sbd.h"

#define BODY_MAX (1u << 20)
#define POLL_MAX_MS 1000 /* curl_multi_poll wait when nothing is due sooner */

struct body {
	char *p;
	size_t len;
	bool over;
};

/* One job: a request and, for discovery, its retries. Owned by the thread
 * once taken from the submit queue. */
struct job {
	struct job *next;        /* submit queue, waiting list */
	struct job *act_next;    /* active list (a transfer runs) */
	int kind;
	uint32_t slot, gen;
	char *url;               /* worker URL (owned) */
	char full[STATEBUS_WORKER_ID_MAX + 32]; /* URL + path */
	CURL *easy;              /* while a transfer runs, else NULL */
	struct body b;
	int attempt;             /* attempts started */
	long backoff_ms;         /* delay before the next retry */
	uint64_t retry_at_ns;    /* CLOCK_MONOTONIC of the next attempt (waiting list) */
	struct sbd_http_result r;
};

struct res {
	struct res *next;
	struct sbd_http_result r;
};

struct sbd_http {
	pthread_t th;
	pthread_mutex_t mu;
	struct job *jobs, **jobs_tail; /* submitted, not yet taken (under mu) */
	struct res *done, **done_tail; /* finished (under mu) */
	bool stop;                     /* under mu */
	int pipe_r, pipe_w;
	struct sbd_http_opts o;
	CURLM *multi;
	/* thread-only */
	struct job *waiting;           /* discovery retries due at retry_at_ns */
	struct job *active;            /* jobs with a transfer in `multi` */
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	if (b->len + n > BODY_MAX) {
		b->over = true;
		return 0;
	}
	char *q = realloc(b->p, b->len + n + 1);
	if (q == NULL)
		return 0;
	memcpy(q + b->len, ptr, n);
	b->len += n;
	q[b->len] = '\0';
	b->p = q;
	return n;
}

static void job_free(struct job *j)
{
	if (j->easy)
		curl_easy_cleanup(j->easy);
	free(j->b.p);
	free(j->r.body);
	free(j->url);
	free(j);
}

/* Hands a finished job's result to the loop and frees the job. */
static void complete(struct sbd_http *h, struct job *j)
{
	struct res *r = calloc(1, sizeof(*r));
	if (r != NULL) {
		r->r = j->r;
		j->r.body = NULL; /* moved */
		pthread_mutex_lock(&h->mu);
		*h->done_tail = r;
		h->done_tail = &r->next;
		pthread_mutex_unlock(&h->mu);
		ssize_t wn = write(h->pipe_w, "x", 1);
		(void)wn; /* a full pipe already means "wake up" */
	}
	job_free(j);
}

/* Starts the next attempt of `j`; false (result filled) when it cannot. */
static bool begin(struct sbd_http *h, struct job *j)
{
	long timeout = j->kind == SBD_HTTP_HEALTH || j->kind == SBD_HTTP_METRICS
			       ? h->o.health_timeout_ms
			       : h->o.discovery_timeout_ms;
	free(j->b.p);
	j->b = (struct body){0};
	CURL *c = curl_easy_init();
	if (c == NULL) {
		snprintf(j->r.error, sizeof(j->r.error), "curl_easy_init failed");
		return false;
	}
	curl_easy_setopt(c, CURLOPT_URL, j->full);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &j->b);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "switchyard-statebus");
	curl_easy_setopt(c, CURLOPT_PRIVATE, j);
	if (curl_multi_add_handle(h->multi, c) != CURLM_OK) {
		curl_easy_cleanup(c);
		snprintf(j->r.error, sizeof(j->r.error), "curl_multi_add_handle failed");
		return false;
	}
	j->easy = c;
	j->attempt++;
	j->act_next = h->active;
	h->active = j;
	return true;
}

/* A job arrives from the queue. */
static void accept_job(struct sbd_http *h, struct job *j)
{
	j->r.kind = j->kind;
	j->r.slot = j->slot;
	j->r.gen = j->gen;
	j->backoff_ms = h->o.discovery_backoff_ms;
	static const char *const paths[] = {
		[SBD_HTTP_DISCOVER] = "/server_info", [SBD_HTTP_HEALTH] = "/health",
		[SBD_HTTP_VLLM_MODELS] = "/v1/models", [SBD_HTTP_VLLM_VERSION] = "/version",
		[SBD_HTTP_METRICS] = "/metrics",
	};
	const char *path = j->kind >= SBD_HTTP_DISCOVER && j->kind <= SBD_HTTP_METRICS
				   ? paths[j->kind]
				   : "/health";
	if (j->kind == SBD_HTTP_HEALTH && h->o.health_endpoint != NULL)
		path = h->o.health_endpoint;
	snprintf(j->full, sizeof(j->full), "%s%s", j->url, path);
	if (!begin(h, j))
		complete(h, j);
}

/* A transfer of `j` ended with `rc`: result, retry or give up. */
static void finished(struct sbd_http *h, struct job *j, CURLcode rc)
{
	long status = 0;
	for (struct job **pp = &h->active; *pp; pp = &(*pp)->act_next) {
		if (*pp == j) {
			*pp = j->act_next;
			break;
		}
	}
	j->act_next = NULL;
	curl_multi_remove_handle(h->multi, j->easy);
	if (rc == CURLE_OK)
		curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_off_t total = 0;
	if (curl_easy_getinfo(j->easy, CURLINFO_TOTAL_TIME_T, &total) == CURLE_OK && total > 0)
		j->r.total_us = (uint64_t)total;
	j->r.status = status;
	curl_easy_cleanup(j->easy);
	j->easy = NULL;
	if (rc != CURLE_OK)
		snprintf(j->r.error, sizeof(j->r.error), "%s",
			 j->b.over ? "body over 1 MiB" : curl_easy_strerror(rc));
	else if (status < 200 || status > 299)
		snprintf(j->r.error, sizeof(j->r.error), "HTTP %ld", status);
	bool ok2xx = rc == CURLE_OK && status >= 200 && status <= 299;
	if (j->kind == SBD_HTTP_HEALTH) {
		j->r.ok = ok2xx;
		complete(h, j);
		return;
	}
	if (ok2xx && j->b.p != NULL) {
		j->r.ok = true;
		j->r.body = j->b.p;
		j->r.len = j->b.len;
		j->b.p = NULL;
		complete(h, j);
		return;
	}
	if (ok2xx)
		snprintf(j->r.error, sizeof(j->r.error), "empty body");
	if ((status >= 400 && status <= 499) || j->attempt >= h->o.discovery_attempts ||
	    j->kind == SBD_HTTP_METRICS) {
		complete(h, j); /* 4xx: never retried */
		return;
	}
	j->retry_at_ns = sy_mono_ns() + (uint64_t)j->backoff_ms * 1000000u;
	j->backoff_ms *= 2;
	j->next = h->waiting;
	h->waiting = j;
}

/* Starts the retries that are due; returns ms until the next one (capped). */
static int due_retries(struct sbd_http *h)
{
	uint64_t now = sy_mono_ns();
	int wait = POLL_MAX_MS;
	for (struct job **pp = &h->waiting; *pp;) {
		struct job *j = *pp;
		if (j->retry_at_ns <= now) {
			*pp = j->next;
			j->next = NULL;
			if (!begin(h, j))
				complete(h, j);
			continue;
		}
		uint64_t ms = (j->retry_at_ns - now + 999999u) / 1000000u;
		if (ms < (uint64_t)wait)
			wait = (int)ms;
		pp = &j->next;
	}
	return wait;
}

static void *thread_main(void *arg)
{
	struct sbd_http *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		bool stop = h->stop;
		struct job *fresh = h->jobs;
		h->jobs = NULL;
		h->jobs_tail = &h->jobs;
		pthread_mutex_unlock(&h->mu);
		if (stop) {
			for (struct job *j = fresh, *n; j; j = n) {
				n = j->next;
				job_free(j);
			}
			for (struct job *j = h->active, *n; j; j = n) {
				n = j->act_next;
				curl_multi_remove_handle(h->multi, j->easy);
				job_free(j);
			}
			for (struct job *j = h->waiting, *n; j; j = n) {
				n = j->next;
				job_free(j);
			}
			h->active = h->waiting = NULL;
			return NULL;
		}
		for (struct job *j = fresh, *n; j; j = n) {
			n = j->next;
			j->next = NULL;
			accept_job(h, j);
		}
		(void)due_retries(h);
		int still;
		curl_multi_perform(h->multi, &still);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(h->multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct job *j = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
			if (j != NULL)
				finished(h, j, m->data.result);
		}
		/* new retries may be due now; curl caps the wait by its own
		 * timers; curl_multi_wakeup (submit, stop) ends it early */
		int wait = due_retries(h);
		curl_multi_poll(h->multi, NULL, 0, wait, NULL);
	}
}

int sbd_http_start(struct sbd_http **out, const struct sbd_http_opts *o, int *wake_fd)
{
	struct sbd_http *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return SY_ENOMEM;
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
		free(h);
		return SY_EIO;
	}
	h->pipe_r = p[0];
	h->pipe_w = p[1];
	h->o = *o;
	if (h->o.discovery_attempts < 1)
		h->o.discovery_attempts = 1;
	h->jobs_tail = &h->jobs;
	h->done_tail = &h->done;
	h->multi = curl_multi_init();
	pthread_mutex_init(&h->mu, NULL);
	if (h->multi == NULL || pthread_create(&h->th, NULL, thread_main, h) != 0) {
		if (h->multi)
			curl_multi_cleanup(h->multi);
		pthread_mutex_destroy(&h->mu);
		close(p[0]);
		close(p[1]);
		free(h);
		return SY_EIO;
	}
	*wake_fd = h->pipe_r;
	*out = h;
	return SY_OK;
}

int sbd_http_submit(struct sbd_http *h, int kind, uint32_t slot, uint32_t gen, const char *url)
{
	struct job *j = calloc(1, sizeof(*j));
	if (j == NULL || (j->url = strdup(url)) == NULL) {
		free(j);
		return SY_ENOMEM;
	}
	j->kind = kind;
	j->slot = slot;
	j->gen = gen;
	pthread_mutex_lock(&h->mu);
	*h->jobs_tail = j;
	h->jobs_tail = &j->next;
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
	return SY_OK;
}

bool sbd_http_take(struct sbd_http *h, struct sbd_http_result *out)
{
	char drain[64];
	while (read(h->pipe_r, drain, sizeof(drain)) > 0)
		;
	pthread_mutex_lock(&h->mu);
	struct res *r = h->done;
	if (r != NULL) {
		h->done = r->next;
		if (h->done == NULL)
			h->done_tail = &h->done;
	}
	pthread_mutex_unlock(&h->mu);
	if (r == NULL)
		return false;
	*out = r->r;
	free(r);
	return true;
}

void sbd_http_stop(struct sbd_http *h)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
	pthread_join(h->th, NULL); /* the thread freed its running and waiting jobs */
	for (struct job *j = h->jobs, *n; j; j = n) {
		n = j->next;
		job_free(j);
	}
	for (struct res *r = h->done, *n; r; r = n) {
		n = r->next;
		free(r->r.body);
		free(r);
	}
	curl_multi_cleanup(h->multi);
	close(h->pipe_r);
	close(h->pipe_w);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
