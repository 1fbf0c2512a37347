// tests/tokenizer/goldens.mjs CACHE_DIR MODEL_DIR OUT.json [DOCS.json] — golden outputs
// from the reference implementations: token ids from Hugging Face's Rust
// tokenizer (npm `tokenizers`, encode with add_special_tokens false, and
// true for "prompt" cases), chat text from @huggingface/jinja rendering the
// model's own chat_template with the inputs SGLang gives it:
//   - message content null → "", text parts joined
//   - tool_calls[].function.arguments JSON-parsed into objects (kept as the
//     string when not JSON)
//   - tools → each tool's function model {description, name, parameters,
//     strict} (null / false defaults); none when tool_choice is "none"
//   - add_generation_prompt (default true), chat_template_kwargs spread in,
//     bos_token / eos_token from tokenizer_config.json
// and the ids of the rendered text (add_special_tokens false).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { textCases, chatCases } from "./corpus.mjs";

const [cacheDir, modelDir, outFile, extraFile] = process.argv.slice(2);
const require = createRequire(path.resolve(cacheDir, "node_modules", "x.js"));
const { Tokenizer } = require("tokenizers");
const { Template } = require("@huggingface/jinja");

const tok = await Tokenizer.fromFile(path.join(modelDir, "tokenizer.json"));
const cfg = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8"));
const tokenText = (v) => (v && typeof v === "object" ? v.content : v) ?? "";
const template = new Template(cfg.chat_template);

async function ids(text, special) {
  const e = await tok.encode(text, null, { addSpecialTokens: special });
  return Array.from(e.getIds());
}

function sglangInputs(req) {
  const messages = req.messages.map((m) => {
    const d = structuredClone(m);
    if (d.content === null || d.content === undefined) d.content = "";
    if (Array.isArray(d.content)) d.content = d.content.map((p) => p.text).join("");
    if (d.tool_calls)
      for (const c of d.tool_calls) {
        try { c.function.arguments = JSON.parse(c.function.arguments); } catch { /* keep the string */ }
      }
    return d;
  });
  const tools =
    req.tools && req.tools.length && req.tool_choice !== "none"
      ? req.tools.map((t) => ({
          description: t.function.description ?? null,
          name: t.function.name ?? null,
          parameters: t.function.parameters ?? null,
          strict: t.function.strict ?? false,
        }))
      : undefined;
  return {
    messages,
    tools,
    add_generation_prompt: req.add_generation_prompt ?? true,
    bos_token: tokenText(cfg.bos_token),
    eos_token: tokenText(cfg.eos_token),
    ...(req.chat_template_kwargs ?? {}),
  };
}

const cases = [];
for (const [name, text] of Object.entries(textCases())) {
  cases.push({ name, kind: "text", text, ids: await ids(text, false) });
  if (name.startsWith("ascii") || name.startsWith("cjk") || name === "empty" || name.startsWith("special"))
    cases.push({ name: name + "/prompt", kind: "prompt", text, ids: await ids(text, true) });
}
// optional extra documents (a JSON array of strings), e.g. the benchmark corpus
if (extraFile)
  for (const [i, text] of JSON.parse(fs.readFileSync(extraFile, "utf8")).entries())
    cases.push({ name: `doc_${i}`, kind: "text", text, ids: await ids(text, false) });
for (const [name, request] of Object.entries(chatCases())) {
  const rendered = template.render(sglangInputs(request));
  cases.push({ name, kind: "chat", request, rendered, ids: await ids(rendered, false) });
}
fs.writeFileSync(outFile, JSON.stringify({ model: modelDir, cases }));
const bytes = cases.filter((c) => c.kind !== "chat").reduce((a, c) => a + Buffer.byteLength(c.text), 0);
console.error(`goldens: ${cases.length} cases (${bytes} text bytes) → ${outFile}`);
