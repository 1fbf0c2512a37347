/* http.c — the statebus's HTTP thread: GET /server_info and /health.
 *
 * Blocking libcurl calls run here, never on the event loop: the loop
 * submits jobs (a FIFO under a mutex) and takes results (another FIFO);
 * one byte written to a pipe wakes its zmq_poll. Discovery follows SGLang's
 * router (sglang-wire.md §10): per attempt a timeout (default 2 s), up to
 * N attempts (3) with a backoff of 100 ms doubling; retried on network
 * errors and 5xx, never on 4xx. Health: one GET /health per job, 2xx = ok.
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

#include "common/errors.h"
#include "sbd.h"

#define BODY_MAX (1u << 20)

struct job {
	struct job *next;
	int kind;
	uint32_t slot, gen;
	char *url;
};

struct res {
	struct res *next;
	struct sbd_http_result r;
};

struct sbd_http {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *jobs, **jobs_tail;
	struct res *done, **done_tail;
	bool stop;
	int pipe_r, pipe_w;
	struct sbd_http_opts o;
	CURL *curl;
};

struct body {
	char *p;
	size_t len;
	bool over;
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

/* One GET: returns the HTTP status (0 on a transport error, `err` set). */
static long get(struct sbd_http *h, const char *url, long timeout_ms, struct body *b, char *err,
		size_t cap)
{
	CURL *c = h->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "switchyard-statebus");
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(err, cap, "%s", b->over ? "body over 1 MiB" : curl_easy_strerror(rc));
		return 0;
	}
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299)
		snprintf(err, cap, "HTTP %ld", status);
	return status;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void run(struct sbd_http *h, struct job *j, struct sbd_http_result *r)
{
	char url[STATEBUS_WORKER_ID_MAX + 32];
	r->kind = j->kind;
	r->slot = j->slot;
	r->gen = j->gen;
	if (j->kind == SBD_HTTP_HEALTH) {
		snprintf(url, sizeof(url), "%s/health", j->url);
		struct body b = {0};
		long st = get(h, url, h->o.health_timeout_ms, &b, r->error, sizeof(r->error));
		r->ok = st >= 200 && st <= 299;
		free(b.p);
		return;
	}
	snprintf(url, sizeof(url), "%s/server_info", j->url);
	long backoff = h->o.discovery_backoff_ms;
	for (int a = 0; a < h->o.discovery_attempts; a++) {
		if (a > 0) {
			sleep_ms(backoff);
			backoff *= 2;
		}
		struct body b = {0};
		long st = get(h, url, h->o.discovery_timeout_ms, &b, r->error, sizeof(r->error));
		if (st >= 200 && st <= 299 && b.p != NULL) {
			r->ok = true;
			r->body = b.p;
			r->len = b.len;
			return;
		}
		if (st >= 200 && st <= 299)
			snprintf(r->error, sizeof(r->error), "empty body");
		free(b.p);
		if (st >= 400 && st <= 499)
			return; /* never retried */
		bool stopping;
		pthread_mutex_lock(&h->mu);
		stopping = h->stop;
		pthread_mutex_unlock(&h->mu);
		if (stopping)
			return;
	}
}

static void *thread_main(void *arg)
{
	struct sbd_http *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		while (!h->stop && h->jobs == NULL)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop) {
			pthread_mutex_unlock(&h->mu);
			return NULL;
		}
		struct job *j = h->jobs;
		h->jobs = j->next;
		if (h->jobs == NULL)
			h->jobs_tail = &h->jobs;
		pthread_mutex_unlock(&h->mu);

		struct res *r = calloc(1, sizeof(*r));
		if (r != NULL)
			run(h, j, &r->r);
		free(j->url);
		free(j);
		if (r == NULL)
			continue;
		pthread_mutex_lock(&h->mu);
		*h->done_tail = r;
		h->done_tail = &r->next;
		pthread_mutex_unlock(&h->mu);
		ssize_t wn = write(h->pipe_w, "x", 1);
		(void)wn; /* a full pipe already means "wake up" */
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
	h->jobs_tail = &h->jobs;
	h->done_tail = &h->done;
	h->curl = curl_easy_init();
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (h->curl == NULL || pthread_create(&h->th, NULL, thread_main, h) != 0) {
		if (h->curl)
			curl_easy_cleanup(h->curl);
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
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
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
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->th, NULL);
	for (struct job *j = h->jobs, *n; j; j = n) {
		n = j->next;
		free(j->url);
		free(j);
	}
	for (struct res *r = h->done, *n; r; r = n) {
		n = r->next;
		free(r->r.body);
		free(r);
	}
	curl_easy_cleanup(h->curl);
	close(h->pipe_r);
	close(h->pipe_w);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}
