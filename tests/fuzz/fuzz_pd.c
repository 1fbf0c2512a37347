/* fuzz_pd.c — PD bootstrap splicing (router/dispatch/rewrite.c) on arbitrary bodies.
 *
 * The data plane splices only bodies that request preparation validated, so
 * the input is first parsed with jansson; anything that is not a JSON object
 * is skipped. For an object: rt_pd_splice must succeed, its output must
 * parse as a JSON object that equals the input once every bootstrap_* member
 * is dropped from both, and carry bootstrap_host / bootstrap_port /
 * bootstrap_room — scalars for batch 1, arrays of `batch` entries
 * otherwise, with every room in 0..INT64_MAX. The first input byte picks
 * the route (rt_pd_batch_size) and whether the port is null.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "router/dispatch/rewrite.h"
#include "tests/fuzz/fuzz.h"

static void check_one(json_t *v, int kind)
{
	switch (kind) {
	case 0: /* host */
		if (!json_is_string(v) || strcmp(json_string_value(v), "h\"\\ost") != 0)
			abort();
		break;
	case 1: /* port */
		if (!json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 8998))
			abort();
		break;
	default: /* room */
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum route route = (enum route)(data[0] % 3); /* chat, completions, generate */
	uint16_t port = (data[0] & 4) ? 0 : 8998;
	h2o_iovec_t body = h2o_iovec_init(data + 1, size - 1);
	json_t *in = json_loadb(body.base, body.len, 0, NULL);
	if (in == NULL || !json_is_object(in)) {
		json_decref(in);
		return 0;
	}
	h2o_mem_pool_t pool;
	h2o_mem_init_pool(&pool);
	unsigned batch = rt_pd_batch_size(body, route);
	if (batch < 1 || batch > 1u << 20)
		abort();
	h2o_iovec_t out;
	if (rt_pd_splice(&pool, body, "h\"\\ost", port, batch, &out) != 0)
		abort();
	json_error_t e;
	json_t *o = json_loadb(out.base, out.len, 0, &e);
	if (o == NULL || !json_is_object(o))
		abort();
	static const char *const keys[3] = {"bootstrap_host", "bootstrap_port", "bootstrap_room"};
	for (int k = 0; k < 3; k++) {
		json_t *v = json_object_get(o, keys[k]);
		if (v == NULL)
			abort();
		if (batch <= 1) {
			check_one(v, k);
		} else {
			if (!json_is_array(v) || json_array_size(v) != batch)
				abort();
			for (size_t i = 0; i < batch; i++)
				check_one(json_array_get(v, i), k);
		}
		json_object_del(o, keys[k]);
		json_object_del(in, keys[k]);
	}
	if (!json_equal(in, o))
		abort();
	json_decref(o);
	json_decref(in);
	h2o_mem_clear_pool(&pool);
	return 0;
}
