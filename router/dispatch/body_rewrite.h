/* body_rewrite.h — the forwarded body, built once from preparation's member
 * records (router/core/prepare.h "Body members"): no second scan, no DOM.
 *
 * What changes (everything else is copied as written):
 *   sampling override (policy-defaults.md §7; router/core/sampling_override.h)
 *       chat / completions: the client's members of role BODY_SAMPLING are
 *       dropped and the override's members appended; /generate: the same
 *       inside "sampling_params" (added when absent, an object replacing
 *       null). With reject, body_rewrite_check() refuses a differing
 *       client value before anything is built.
 *   input ids (policy-defaults.md §7; prepare.h "Input-ids forwarding")
 *       `"input_ids":[ids]` appended; preparation never forwards when the
 *       client sent its own.
 *   PD bootstrap (sglang-wire.md §15)
 *       the client's bootstrap_host / _port / _room dropped, the router's
 *       appended: host string, port (0 → null), fresh room; arrays of
 *       body_rewrite_batch() entries, one fresh room each, for a batch.
 *   vLLM PD (kv_transfer_params through vLLM's KV connectors; the flow of
 *   vLLM's disaggregation proxy, docs/router.md "PD on vLLM")
 *       prefill: the client's kv_transfer_params and BODY_PREFILL_OUTPUT
 *       members (and override members of those names) dropped, then
 *       "kv_transfer_params":{"do_remote_decode":true,
 *       "do_remote_prefill":false,"remote_engine_id":null,
 *       "remote_block_ids":null,"remote_host":null,"remote_port":null},
 *       "stream":false,"max_tokens":1 and, when the client sent
 *       max_completion_tokens, "max_completion_tokens":1 appended;
 *       decode: the client's kv_transfer_params dropped and the prefill's
 *       returned object (bytes as given, a JSON object) appended.
 * Appended members come in that order, after the client's. The object's
 * members are written compactly (`key:value` joined by ','), keys and
 * values byte for byte; whitespace between members and after the object
 * is not kept. Without any change the caller forwards the body as it came.
 *
 * No allocation: the caller provides body_rewrite_bound() bytes (the
 * request pool) and body_rewrite_build() writes into them.
 */
#ifndef SY_ROUTER_BODY_REWRITE_H
#define SY_ROUTER_BODY_REWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/core/prepare.h"
#include "router/core/sampling_override.h"

/* Which leg of a vLLM PD request a body is for. */
enum body_vllm_pd {
	VLLM_PD_NONE = 0,
	VLLM_PD_PREFILL, /* remote decode asked, one token, not streamed */
	VLLM_PD_DECODE,  /* the prefill's kv_transfer_params passed on */
};

/* The changes for one request (all borrowed for the call). */
struct body_rewrite {
	const struct sampling_override *sampling; /* NULL or no params: none */
	const uint32_t *input_ids;  /* non-NULL: append them, n_input_ids (may be 0) */
	size_t n_input_ids;
	const char *pd_host;        /* non-NULL: PD bootstrap fields for this prefill
				       host, pd_host_len bytes (escaped on output) */
	size_t pd_host_len;
	uint16_t pd_port;           /* prefill bootstrap port; 0 → null */
	uint64_t room;              /* out: the first bootstrap_room written (PD), for logs */
	enum body_vllm_pd vllm_pd;  /* vLLM PD leg (file comment); not with pd_host */
	const char *kv_params;      /* VLLM_PD_DECODE: the prefill's kv_transfer_params
				       (kv_params_len bytes, a JSON object), or NULL:
				       none appended */
	size_t kv_params_len;
};

/* Whether `rw` changes anything (false: forward the body as it came). */
bool body_rewrite_needed(const struct body_rewrite *rw);

/* Checks the client's sampling members of `req` (prepared from `body`)
 * against `ov` when it rejects conflicts. Returns 0, or SY_EINVAL with
 * *param set to the differing parameter's name (owned by `ov`): the
 * caller answers 400 sampling_contract_violation. */
int body_rewrite_check(const struct sampling_override *ov, const char *body,
		       const struct pick_request *req, const char **param);

/* Requests the body stands for in PD: the prompt batch size when > 1,
 * else `n` when > 1 (chat / completions), else 1. */
unsigned body_rewrite_batch(const struct pick_request *req);

/* A fresh bootstrap room: random u64 AND INT64_MAX. */
uint64_t body_rewrite_room(void);

/* Bytes body_rewrite_build() may write for a body of `len` bytes. */
size_t body_rewrite_bound(const struct body_rewrite *rw, const struct pick_request *req,
			  size_t len);

/* Writes the forwarded body of `req` (prepared from `body`) into `out`
 * (body_rewrite_bound() bytes) and returns its length; sets rw->room to the
 * first fresh room in PD. Does not check conflicts (body_rewrite_check). */
size_t body_rewrite_build(struct body_rewrite *rw, const char *body,
			  const struct pick_request *req, char *out);

#endif
