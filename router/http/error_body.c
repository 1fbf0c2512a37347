/* error_body.c — JSON error bodies and the code table (see error_body.h). */
#include "router/http/error_body.h"

#include <string.h>

void rt_buf_json_str(struct rt_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': rt_buf_put(b, "\\\"", 2); break;
		case '\\': rt_buf_put(b, "\\\\", 2); break;
		case '\n': rt_buf_put(b, "\\n", 2); break;
		case '\r': rt_buf_put(b, "\\r", 2); break;
		case '\t': rt_buf_put(b, "\\t", 2); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				rt_buf_put(b, e, 6);
			} else {
				rt_buf_put(b, &s[i], 1);
			}
		}
	}
}

void rt_error_body(struct rt_buf *b, const struct router_error *e)
{
	const char *code = e->code != NULL ? e->code : "internal_error";
	rt_buf_printf(b, "{\"error\":{\"type\":\"%s\",\"code\":\"", router_error_type(e->status));
	rt_buf_json_str(b, code, strlen(code));
	rt_buf_puts(b, "\",\"message\":\"");
	rt_buf_json_str(b, e->message, strlen(e->message));
	rt_buf_puts(b, "\"");
	for (size_t i = 0; i < e->n_details; i++) {
		const struct router_rejection *d = &e->details[i];
		const char *limit = d->limit != NULL ? d->limit : "";
		rt_buf_puts(b, i == 0 ? ",\"details\":[{\"worker\":\"" : ",{\"worker\":\"");
		rt_buf_json_str(b, d->worker, strnlen(d->worker, sizeof(d->worker)));
		rt_buf_puts(b, "\",\"limit\":\"");
		rt_buf_json_str(b, limit, strlen(limit));
		rt_buf_puts(b, i + 1 == e->n_details ? "\"}]" : "\"}");
	}
	rt_buf_puts(b, "}}\n");
}

static const struct {
	const char *code;
	int status;
} codes[] = {
	{"bad_request", 400},
	{"no_matching_bucket", 400},
	{"sampling_contract_violation", 400},
	{"unauthorized", 401},
	{"forbidden", 403},
	{"model_not_found", 404},
	{"not_found", 404},
	{"worker_not_found", 404},
	{"method_not_allowed", 405},
	{"worker_exists", 409},
	{"payload_too_large", 413},
	{"client_closed_request", 499},
	{"internal_error", 500},
	{"upstream_unreachable", 502},
	{"upstream_body_incomplete", 502},
	{"upstream_invalid_response", 502},
	{"no_healthy_workers", 503},
	{"no_prefill_workers_available", 503},
	{"no_decode_workers_available", 503},
	{"policy_selection_failed", 503},
	{"breaker_open", 503},
	{"service_overloaded", 503},
	{"draining", 503},
	{"upstream_timeout", 504},
};

int rt_error_code_status(const char *code)
{
	for (size_t i = 0; code != NULL && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(codes[i].code, code) == 0)
			return codes[i].status;
	return 0;
}
