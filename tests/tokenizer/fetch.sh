#!/usr/bin/env bash
# tests/tokenizer/fetch.sh SRC_ROOT — install the pinned oracle packages
# (tests/tokenizer/package.json) into SRC_ROOT/.cache/tok-oracle (git-ignored)
# with /usr/bin/npm, once. Prints the cache dir. Exit 77 (meson: skipped)
# with a visible message only when the npm registry cannot be reached.
set -euo pipefail
root=$1
cache="${SY_TOK_ORACLE_DIR:-$root/.cache/tok-oracle}"
pkg="$root/tests/tokenizer/package.json"
npm=/usr/bin/npm
[ -x "$npm" ] || npm=$(command -v npm || true)
mkdir -p "$cache"
if [ -f "$cache/.installed" ] && cmp -s "$pkg" "$cache/package.json"; then
  echo "$cache"
  exit 0
fi
if [ -z "$npm" ]; then
  echo "SKIP: npm is not installed; the tokenizer oracle tests need it" >&2
  exit 77
fi
if ! timeout 60 "$npm" view tokenizers@0.23.2 version >/dev/null 2>&1; then
  echo "SKIP: the npm registry is unreachable; tokenizer oracle tests not run" >&2
  exit 77
fi
cp "$pkg" "$cache/package.json"
rm -f "$cache/.installed"
(cd "$cache" && timeout 600 "$npm" install --no-audit --no-fund --no-save --loglevel=error >&2)
touch "$cache/.installed"
echo "$cache"
