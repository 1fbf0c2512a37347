/* admission.c — engine_admission_check: five optional hard caps
 * (reference/policy-defaults.md §5; SGLang policies_reorg/admission.rs).
 *
 * metric ≥ cap rejects; an unknown metric fails open (running and waiting
 * need a fresh report — LoadStat or vLLM's scraped /metrics —, KV tokens
 * a native report or a scraped one with a KV capacity, pending tokens a
 * native one); the router-local
 * in-flight count is always known. Nothing is reserved.
 */
#include "router/policies/admission.h"

void admission_limits_none(struct admission_limits *l)
{
	l->max_running_requests = ADMISSION_NO_CAP;
	l->max_waiting_requests = ADMISSION_NO_CAP;
	l->max_kv_tokens = ADMISSION_NO_CAP;
	l->max_pending_prefill_tokens = ADMISSION_NO_CAP;
	l->max_inflight_requests = ADMISSION_NO_CAP;
}

/* metric ≥ cap, for a set cap. */
static bool at_cap(int64_t cap, uint64_t metric)
{
	return cap >= 0 && metric >= (uint64_t)cap;
}

enum admission_limit engine_admission_check(const struct admission_limits *l,
					    const struct engine_load *load)
{
	if (load->fresh && at_cap(l->max_running_requests, load->running))
		return ADMIT_MAX_RUNNING_REQUESTS;
	if (load->fresh && at_cap(l->max_waiting_requests, load->waiting))
		return ADMIT_MAX_WAITING_REQUESTS;
	if ((load->native || load->has_kv) && at_cap(l->max_kv_tokens, load->kv_used))
		return ADMIT_MAX_KV_TOKENS;
	if (load->native && at_cap(l->max_pending_prefill_tokens, load->pending))
		return ADMIT_MAX_PENDING_PREFILL_TOKENS;
	if (l->max_inflight_requests >= 0 &&
	    load->local_active >= l->max_inflight_requests)
		return ADMIT_MAX_INFLIGHT_REQUESTS;
	return ADMIT_OK;
}

const char *admission_limit_name(enum admission_limit lim)
{
	switch (lim) {
	case ADMIT_OK:
		return "ok";
	case ADMIT_MAX_RUNNING_REQUESTS:
		return "max_running_requests";
	case ADMIT_MAX_WAITING_REQUESTS:
		return "max_waiting_requests";
	case ADMIT_MAX_KV_TOKENS:
		return "max_kv_tokens";
	case ADMIT_MAX_PENDING_PREFILL_TOKENS:
		return "max_pending_prefill_tokens";
	case ADMIT_MAX_INFLIGHT_REQUESTS:
		return "max_inflight_requests";
	}
	return "unknown";
}
