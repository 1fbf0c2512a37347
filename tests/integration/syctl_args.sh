#!/usr/bin/env bash
# syctl_args.sh SYCTL — syctl refuses odd arguments with a message that names
# the problem (defects found by QA): a --shm path too long for the region,
# a capacity of 0 (was silently the default), and `create` with capacities
# that an existing region does not have (was silently ignored).
set -euo pipefail
syctl=$1
shm=/dev/shm/sy-test-syctl-args-$$
trap 'rm -f "$shm"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

long=/dev/shm/$(printf 'a%.0s' $(seq 300))
set +e
out=$("$syctl" --shm "$long" header 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "long path: exit $rc"
grep -q "too long" <<<"$out" || fail "long path message does not say so: $out"

set +e
out=$("$syctl" --shm "$shm" create --max-workers 0 2>&1); rc=$?
set -e
[ $rc -eq 2 ] || fail "--max-workers 0: exit $rc, $out"
[ ! -e "$shm" ] || fail "--max-workers 0 created a region"

"$syctl" --shm "$shm" create --max-workers 8 >/dev/null
"$syctl" --shm "$shm" create --max-workers 8 >/dev/null || fail "create again with the same capacities"
"$syctl" --shm "$shm" create >/dev/null || fail "create again without capacities"
set +e
out=$("$syctl" --shm "$shm" create --max-workers 16 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "create with other capacities on an existing region: exit $rc"
grep -q "max_workers 8" <<<"$out" || fail "mismatch message does not name the capacity: $out"
"$syctl" --shm "$shm" destroy >/dev/null

set +e
out=$("$syctl" --shm "$shm" workers 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "workers on a missing region: exit $rc"
grep -q "no region there yet" <<<"$out" || fail "missing region message gives no hint: $out"
[ ! -e "$shm" ] || fail "workers on a missing region created it"
echo "syctl_args: OK"
