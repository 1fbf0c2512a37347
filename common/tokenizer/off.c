/* off.c — the "off" tokenizer: no token ids.
 *
 * For fleets where the router does not tokenize: encode and decode are
 * SY_EUNSUPPORTED (the generic layer answers for the missing ops), so
 * callers fall back to a size estimate; render_chat still gives the plain
 * ChatML text, whose length is a usable basis for that estimate. One static
 * instance serves every open.
 */
#include "common/errors.h"
#include "common/tokenizer/tokenizer-impl.h"

static void off_close(struct sy_tokenizer *tok)
{
	(void)tok; /* static instance */
}

static const struct sy_tokenizer_ops off_ops = {
	.kind = "off",
	.encode_text = NULL,
	.encode_chat = NULL,
	.render_chat = NULL, /* plain ChatML */
	.decode = NULL,
	.close = off_close,
};

static struct sy_tokenizer off_instance = {.ops = &off_ops};

int sy_tokenizer_off_open(const char *path, struct sy_tokenizer **out,
			  char *errbuf, size_t errcap)
{
	(void)path;
	(void)errbuf;
	(void)errcap;
	*out = &off_instance;
	return SY_OK;
}
