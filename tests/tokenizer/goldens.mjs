import { existsSync } from "node:fs";
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
import { spawnSync } from "node:child_process";
import path from "node:path";
import { textCases, chatCases, llama31ChatCases } from "./corpus.mjs";

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
// SY_CHAT_CORPUS=llama31 adds the chats of Meta's Llama 3.1 template.
const chats =
  process.env.SY_CHAT_CORPUS === "llama31"
    ? { ...chatCases(), ...llama31ChatCases() }
    : chatCases();
// Python's jinja2 as transformers sets it up (jinja2_render.py): what an
// SGLang engine renders. With SY_CHAT_CORPUS=llama31 every chat is also
// rendered there and must agree with @huggingface/jinja; where the latter
// lacks a feature (Llama 3.1's `reject` filter) Python's text is the golden.
// Returns {text} | {error} | null (python3 or jinja2 missing).
// Debian's interpreter (python3-jinja2 from tools/lib/setup.sh) when present:
// the python3 on PATH may be another installation without jinja2.
const PYTHON = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
function renderPython(inputs) {
  const r = spawnSync(PYTHON, [path.join(path.dirname(new URL(import.meta.url).pathname), "jinja2_render.py")], {
    input: JSON.stringify({ template: cfg.chat_template, inputs }),
    encoding: "utf8",
  });
  if (r.error || r.status === 4) return null;
  if (r.status === 3) return { error: r.stderr.trim() };
  if (r.status !== 0) throw new Error(`jinja2_render.py: ${r.stderr}`);
  return { text: r.stdout };
}
const crossCheck = process.env.SY_CHAT_CORPUS === "llama31";
let pyChecked = 0;
for (const [name, request] of Object.entries(chats)) {
  const inputs = sglangInputs(request);
  let rendered, error;
  try {
    rendered = template.render(inputs);
  } catch (e) {
    error = String(e.message ?? e);
  }
  const py = crossCheck ? renderPython(inputs) : null;
  if (py) {
    pyChecked++;
    if (error && /^Unknown .* filter/.test(error)) {
      // an @huggingface/jinja gap: Python's rendering is the reference
      console.error(`goldens: ${name}: @huggingface/jinja cannot render it (${error}); golden from Python jinja2`);
      error = py.error;
      rendered = py.text;
      pyChecked--;
    } else if ((error === undefined) !== (py.error === undefined) || (!error && py.text !== rendered)) {
      throw new Error(`${name}: @huggingface/jinja and Python jinja2 disagree:\n js: ${JSON.stringify(error ?? rendered)}\n py: ${JSON.stringify(py.error ?? py.text)}`);
    }
  } else if (crossCheck && error && /^Unknown .* filter/.test(error)) {
    console.error(`goldens: SKIP ${name}: @huggingface/jinja cannot render it (${error}) and Python jinja2 is not installed`);
    continue;
  }
  if (error !== undefined) {
    // the template raised (raise_exception, or an error Python raises too):
    // the C renderer must refuse the request as well
    cases.push({ name, kind: "chat", request, expect_error: error, ids: [] });
    continue;
  }
  cases.push({ name, kind: "chat", request, rendered, ids: await ids(rendered, false) });
}
if (crossCheck)
  console.error(pyChecked ? `goldens: ${pyChecked} chats rendered alike by @huggingface/jinja and Python jinja2`
                          : "goldens: Python jinja2 not installed: no cross-check with it");
fs.writeFileSync(outFile, JSON.stringify({ model: modelDir, cases }));
const bytes = cases.filter((c) => c.kind !== "chat").reduce((a, c) => a + Buffer.byteLength(c.text), 0);
console.error(`goldens: ${cases.length} cases (${bytes} text bytes) → ${outFile}`);
