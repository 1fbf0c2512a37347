#!/usr/bin/env bash
# systemd_sysusers.sh SYSUSERS UNIT... — the sysusers.d file creates user and
# group `switchyard` (applied by systemd-sysusers to an empty scratch root,
# never to this host), and every service unit runs as that user and group.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 SYSUSERS UNIT..." >&2; exit 2; }
command -v systemd-sysusers >/dev/null || { echo "systemd-sysusers missing (package systemd)" >&2; exit 1; }
sysusers=$1; shift
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$sysusers"
grep -E '^switchyard:x:[0-9]+:[0-9]+:' "$root/etc/passwd" || { echo "no user switchyard" >&2; exit 1; }
grep -E '^switchyard:x:[0-9]+:' "$root/etc/group" || { echo "no group switchyard" >&2; exit 1; }
uid=$(awk -F: '$1=="switchyard"{print $3}' "$root/etc/passwd")
[ "$uid" -ne 0 ] || { echo "switchyard got uid 0" >&2; exit 1; }
n=0
for u in "$@"; do
  case "$u" in *.service) ;; *) continue ;; esac
  grep -qx 'User=switchyard' "$u" || { echo "$u: no User=switchyard" >&2; exit 1; }
  grep -qx 'Group=switchyard' "$u" || { echo "$u: no Group=switchyard" >&2; exit 1; }
  if grep -q '^DynamicUser=yes' "$u"; then echo "$u: DynamicUser=" >&2; exit 1; fi
  n=$((n + 1))
done
[ "$n" -ge 2 ] || { echo "expected the statebus and router services, got $n" >&2; exit 1; }
echo "systemd_sysusers: OK (uid $uid, $n services)"
