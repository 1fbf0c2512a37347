// bench/tokenize_corpus.mjs OUT.json [MB] [mixed|natural] — the benchmark
// corpus, as
// a JSON array of documents (each 1-8 KB, as prompts are): English prose
// (/usr/share/common-licenses), C code (/usr/include), JSON
// (tests/tokenizer package files and rendered tool schemas),
// multilingual text and the edge cases of tests/tokenizer/corpus.mjs.
// "natural" leaves out the edge cases (long whitespace and punctuation runs,
// random strings), on which Oniguruma's backtracking in HF is quadratic.
// Deterministic for a given machine image.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { textCases, chatCases } from "../tests/tokenizer/corpus.mjs";

const [out, mbArg, mode] = process.argv.slice(2);
const natural = mode === "natural";
const target = Math.round((Number(mbArg) || 2) * 1e6);
const here = path.dirname(fileURLToPath(import.meta.url));

function files(dir, ext, limit) {
  try {
    return fs.readdirSync(dir).filter((f) => f.endsWith(ext)).sort().slice(0, limit)
      .map((f) => { try { return fs.readFileSync(path.join(dir, f), "utf8"); } catch { return ""; } })
      .filter((s) => s && !s.includes("\uFFFD"));
  } catch { return []; }
}

const prose = files("/usr/share/common-licenses", "", 40);
const code = files("/usr/include", ".h", 120);
const json = [JSON.stringify(chatCases(), null, 2), fs.readFileSync(path.join(here, "../tests/tokenizer/package.json"), "utf8")];
const cases = Object.values(textCases()).filter((s) => s.length);
const multilingual = cases.filter((s) => /[^\x00-\x7F]/.test(s) && s.length < 2000 &&
  !/(.)\1{20}/u.test(s)).join("\n");
const sources = natural
  ? [[0.45, prose.join("\n\n")], [0.35, code.join("\n")], [0.1, json.join("\n")], [0.1, multilingual]]
  : [
      [0.4, prose.join("\n\n")],
      [0.3, code.join("\n")],
      [0.1, json.join("\n")],
      [0.1, multilingual],
      [0.1, cases.join("\n")],
    ];
const docs = [];
let total = 0;
for (const [share, text] of sources) {
  let want = share * target, pos = 0, k = 0;
  while (want > 0 && text.length) {
    const len = 1000 + ((k++ * 7919) % 7000);
    let piece = text.slice(pos, pos + len);
    pos = (pos + len) % text.length;
    if (!piece.length) continue;
    // do not cut a surrogate pair
    if (/[\uD800-\uDBFF]$/.test(piece)) piece = piece.slice(0, -1);
    if (/^[\uDC00-\uDFFF]/.test(piece)) piece = piece.slice(1);
    docs.push(piece);
    const b = Buffer.byteLength(piece);
    want -= b;
    total += b;
  }
}
fs.writeFileSync(out, JSON.stringify(docs));
console.error(`corpus: ${docs.length} documents, ${(total / 1e6).toFixed(2)} MB → ${out}`);
