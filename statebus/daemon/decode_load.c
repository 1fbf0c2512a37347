/* decode_load.c — SGLang LoadStat decoder (sglang-wire.md §12).
 *
 *   ["LoadStat", running, waiting, tokens, max_total, attn_dp_rank|nil,
 *    waiting_uncached, total_tokens, max_running, Σprefill_uncached, Σbusy_us]
 *
 * Rules: the tag must be "LoadStat"; fewer than the four counts is
 * malformed (never read as zeros: ["LoadStat",1,2,3] fails); 5–6 elements
 * are a basic report; the V3 extension (elements 6–10) is all-or-nothing:
 * 7–10 elements, or a V3 element that is not a non-negative integer, keep
 * the basic part and set partial_v3 for the caller to count. Elements past
 * the eleventh are ignored (future extensions).
 */
#include <string.h>

#include "common/errors.h"
#include "common/mpcursor.h"
#include "wire.h"

int sbd_load_decode(const uint8_t *buf, size_t len, struct sbd_load_stat *out)
{
	memset(out, 0, sizeof(*out));
	if (buf == NULL && len > 0)
		return SY_EINVAL;
	struct sy_cursor c = sy_cursor_init(buf, len);
	uint32_t n;
	const uint8_t *tag;
	uint32_t tlen;
	if (!sy_mp_read_array(&c, &n) || n < 1 || !sy_mp_read_str(&c, &tag, &tlen) ||
	    !sy_mp_str_eq(tag, tlen, "LoadStat") || n < 5)
		goto bad;
	uint64_t *basic[4] = {&out->num_running_reqs, &out->num_waiting_reqs, &out->num_tokens,
			      &out->max_total_num_tokens};
	for (int i = 0; i < 4; i++)
		if (!sy_mp_read_u64(&c, basic[i]))
			goto bad;
	if (n > 5) {
		if (sy_mp_peek(&c) == SY_MP_INT) {
			out->has_rank = sy_mp_read_i64(&c, &out->attn_dp_rank);
		} else if (!sy_mp_skip(&c)) {
			goto bad;
		}
	}
	uint64_t *v3[5] = {&out->num_waiting_uncached_tokens, &out->num_total_tokens,
			   &out->max_running_requests, &out->total_prefill_uncached_tokens,
			   &out->total_prefill_busy_us};
	bool v3_ok = n >= 11;
	for (uint32_t i = 6; i < n; i++) {
		if (i <= 10 && sy_mp_peek(&c) == SY_MP_INT) {
			struct sy_cursor probe = c;
			uint64_t v;
			if (sy_mp_read_u64(&probe, &v)) {
				*v3[i - 6] = v;
				c = probe;
				continue;
			}
		}
		if (i <= 10)
			v3_ok = false;
		if (!sy_mp_skip(&c))
			goto bad;
	}
	if (c.err || sy_cursor_avail(&c) != 0)
		goto bad;
	out->n_fields = n;
	out->v3 = v3_ok;
	out->partial_v3 = n > 6 && !v3_ok;
	if (!v3_ok)
		for (int i = 0; i < 5; i++)
			*v3[i] = 0;
	return SY_OK;
bad:;
	int rc = c.err == SY_ETRUNC ? SY_ETRUNC : SY_EMALFORMED;
	memset(out, 0, sizeof(*out));
	return rc;
}
