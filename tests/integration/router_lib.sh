# router_lib.sh — helpers for the router integration tests (sourced).
#
#   ROUTER=... FLEET=... MOCK=... SYCTL=... set by the caller (meson args)
#   rt_init NAME          temp dir $T, unique shm path $SHM, cleanup trap
#   rt_fleet DIR ARGS...  tools/mock-fleet start (URLs on stdout); DIR under $T,
#                         stopped by the trap
#   rt_router ARGS...     start switchyard-router on a free port ($PORT, $RURL,
#                         pid $RPID, log $T/router.log); waits for /health
#   rt_fail MSG           print the router log tail and exit 1
# Everything started is stopped by the EXIT trap.
set -euo pipefail
PY=/usr/bin/python3

rt_init() {
  T=$(mktemp -d "/tmp/sy-$1.XXXXXX")
  SHM=/dev/shm/sy-test-$1-$$
  RPID=""
  trap rt_cleanup EXIT
}

rt_cleanup() {
  local rc=$?
  if [ -n "${RPID:-}" ] && kill -0 "$RPID" 2>/dev/null; then
    kill -TERM "$RPID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$RPID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$RPID" 2>/dev/null || true
  fi
  # Fleets are found on disk: rt_fleet usually runs in a $(...) subshell,
  # so a shell array could not record them.
  for f in "$T"/*/fleet.tsv; do
    [ -f "$f" ] && "$FLEET" stop --dir "$(dirname "$f")" >/dev/null 2>&1 || true
  done
  rm -f "$SHM"
  if [ $rc -ne 0 ] && [ -f "$T/router.log" ]; then echo "--- router log (tail)" >&2; tail -40 "$T/router.log" >&2; fi
  rm -rf "$T"
}

rt_fail() { echo "FAIL: $*" >&2; exit 1; }

rt_free_port() {
  $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

rt_fleet() {
  local d=$1; shift
  "$FLEET" start --dir "$d" --bin "$MOCK" "$@"
}

rt_router() {
  PORT=$(rt_free_port)
  RURL=http://127.0.0.1:$PORT
  "$ROUTER" --port "$PORT" --shm "$SHM" "$@" >>"$T/router.log" 2>&1 &
  RPID=$!
  for _ in $(seq 1 100); do
    curl -fs "$RURL/health" >/dev/null 2>&1 && return 0
    kill -0 "$RPID" 2>/dev/null || rt_fail "router exited at start"
    sleep 0.05
  done
  rt_fail "router did not come up"
}

# rt_json EXPR — python expression over the JSON document on stdin (as d).
rt_json() {
  $PY -c '
import json, sys
d = json.load(sys.stdin)
r = eval(sys.argv[1])
if r is False: sys.exit("assertion failed: " + sys.argv[1] + " on " + json.dumps(d)[:400])
print("ok" if r is True else r)' "$1"
}

# rt_inflight_total — Σ in-flight over every worker (syctl inflight --json).
rt_inflight_total() {
  "$SYCTL" --shm "$SHM" inflight --json | $PY -c 'import json,sys; print(sum(w["in_flight"] for w in json.load(sys.stdin)["workers"]))'
}
