/* error.c — the router's error value (error.h). */
#include "router/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void router_error_clear(struct router_error *e)
{
	e->status = 0;
	e->code = NULL;
	e->message[0] = '\0';
	e->offset = -1;
	e->n_details = 0;
	e->n_details_total = 0;
}

int router_error_set(struct router_error *e, int status, const char *code, int64_t offset,
		     const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	e->code = code;
	e->offset = offset;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return status;
}

void router_error_add_rejection(struct router_error *e, const char *worker, const char *limit)
{
	if (e->n_details < ROUTER_ERROR_MAX_DETAILS) {
		struct router_rejection *d = &e->details[e->n_details++];
		snprintf(d->worker, sizeof(d->worker), "%s", worker);
		d->limit = limit;
	}
	e->n_details_total++;
}

const char *router_error_type(int status)
{
	return status >= 400 && status < 500 ? "invalid_request_error" : "server_error";
}
