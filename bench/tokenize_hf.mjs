// bench/tokenize_hf.mjs CACHE_DIR TOKENIZER_DIR CORPUS.json [SECONDS] —
// Hugging Face's Rust tokenizer (npm `tokenizers`) on the same corpus, one
// document at a time (one encode in flight, RAYON_NUM_THREADS=1), after a
// warm-up pass; prints MB/s, ns/token and the tokens of one pass.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [cacheDir, tokDir, corpus, secArg] = process.argv.slice(2);
const require = createRequire(path.resolve(cacheDir, "node_modules", "x.js"));
const { Tokenizer } = require("tokenizers");
const secs = Number(secArg) || 3;
const tok = await Tokenizer.fromFile(path.join(tokDir, "tokenizer.json"));
const docs = JSON.parse(fs.readFileSync(corpus, "utf8"));
let bytes = 0, tokens = 0;
for (const d of docs) {
  bytes += Buffer.byteLength(d);
  tokens += (await tok.encode(d, null, { addSpecialTokens: false })).getIds().length;
}
// CPU seconds of the whole process (JS thread + the native worker), as the
// machine is shared; the C bench also counts CPU time.
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
let passes = 0;
const start = cpu();
let el = 0;
do {
  for (const d of docs) await tok.encode(d, null, { addSpecialTokens: false });
  passes++;
  el = cpu() - start;
} while (el < secs);
console.log(`huggingface tokenizers (Rust, npm, 1 thread): ${(bytes * passes / el / 1e6).toFixed(1)} MB/s, ` +
  `${(el * 1e9 / (tokens * passes)).toFixed(1)} ns/token (${docs.length} docs, ${bytes} bytes, ${tokens} tokens/pass, ${passes} passes)`);
