// tests/integration/tokenize_oracle.mjs CACHE_DIR MODEL_DIR REQUESTS.json — what
// the router's POST /v1/tokenize must answer for each request, from the
// reference implementations (tests/tokenizer/fetch.sh installs them):
// Hugging Face's Rust tokenizer (npm `tokenizers`) for ids and
// @huggingface/jinja rendering the model's chat_template with the inputs
// SGLang gives it (as tests/tokenizer/goldens.mjs). Prints a JSON array of
// {tokens, count[, text]}.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [cacheDir, modelDir, reqFile] = process.argv.slice(2);
const require = createRequire(path.resolve(cacheDir, "node_modules", "x.js"));
const { Tokenizer } = require("tokenizers");
const { Template } = require("@huggingface/jinja");
const tok = await Tokenizer.fromFile(path.join(modelDir, "tokenizer.json"));
const cfg = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8"));
const template = new Template(cfg.chat_template);
const special = (v) => (v && typeof v === "object" ? v.content : v) ?? "";
const ids = async (text, addSpecial) =>
  Array.from((await tok.encode(text, null, { addSpecialTokens: addSpecial })).getIds());

const out = [];
for (const req of JSON.parse(fs.readFileSync(reqFile, "utf8"))) {
  if (req.messages === undefined) {
    const tokens = await ids(req.prompt, true); // a completions prompt: add_special_tokens
    out.push({ tokens, count: tokens.length });
    continue;
  }
  const messages = req.messages.map((m) => ({ ...m, content: m.content ?? "" }));
  const tools =
    req.tools && req.tools.length && req.tool_choice !== "none"
      ? req.tools.map((t) => ({
          description: t.function.description ?? null,
          name: t.function.name ?? null,
          parameters: t.function.parameters ?? null,
          strict: t.function.strict ?? false,
        }))
      : undefined;
  const text = template.render({
    messages,
    tools,
    add_generation_prompt: req.add_generation_prompt ?? true,
    bos_token: special(cfg.bos_token),
    eos_token: special(cfg.eos_token),
    ...(req.chat_template_kwargs ?? {}),
  });
  const tokens = await ids(text, false);
  out.push({ tokens, count: tokens.length, text });
}
process.stdout.write(JSON.stringify(out));
