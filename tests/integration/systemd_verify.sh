#!/usr/bin/env bash
# systemd_verify.sh UNIT... — `systemd-analyze verify` every unit built into
# build/systemd (their ExecStart= point at the built binaries). Fails on any
# warning or error systemd prints about our units.
set -euo pipefail
[ $# -gt 0 ] || { echo "no units given" >&2; exit 2; }
command -v systemd-analyze >/dev/null || { echo "systemd-analyze missing (package systemd)" >&2; exit 1; }
out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$@" 2>&1) || { echo "$out"; exit 1; }
# verify exits 0 on some warnings; treat any line naming one of our units as a failure.
bad=0
for u in "$@"; do
  if grep -F "$(basename "$u")" <<<"$out" >/dev/null; then bad=1; fi
done
echo "$out"
if [ $bad -ne 0 ]; then echo "systemd-analyze verify reported problems" >&2; exit 1; fi
echo "verified: $*"
