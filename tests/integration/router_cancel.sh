#!/usr/bin/env bash
# router_cancel.sh ROUTER FLEET MOCK SYCTL — a client that goes away releases
# its in-flight guard at once (syctl inflight --json), for a stream cut
# mid-way and for a request still waiting for the engine's first byte; a
# cut stream's upstream request is aborted (the mock's num_running_reqs,
# /v1/loads, drops to 0 long before the 10 s the stream would last).
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init cancel

# 100 ms per output token: a 100-token stream lasts 10 s.
url=$(rt_fleet "$T/fleet" --count 1 -- --model m1 --decode-us-per-token 100000)
rt_router --worker-urls "$url" --model-id m1

# mock_running — Σ num_running_reqs over the mock's DP ranks.
mock_running() {
  curl -fsS "$url/v1/loads" | $PY -c 'import json,sys; print(sum(l["num_running_reqs"] for l in json.load(sys.stdin)["loads"]))'
}

curl -sS -N -o /dev/null --max-time 1.5 \
  -d '{"model":"m1","messages":[{"role":"user","content":"long"}],"max_tokens":100,"stream":true}' \
  "$RURL/v1/chat/completions" &
cpid=$!
sleep 0.6
[ "$(rt_inflight_total)" = 1 ] || rt_fail "stream in flight not counted: $(rt_inflight_total)"
[ "$(mock_running)" = 1 ] || rt_fail "the engine does not run the stream: $(mock_running)"
wait $cpid || true   # curl gives up after 1.5 s
for _ in $(seq 1 20); do [ "$(rt_inflight_total)" = 0 ] && break; sleep 0.1; done
[ "$(rt_inflight_total)" = 0 ] || rt_fail "guard not released after the client cancelled a stream"
for _ in $(seq 1 20); do [ "$(mock_running)" = 0 ] && break; sleep 0.1; done
[ "$(mock_running)" = 0 ] || rt_fail "upstream request not aborted: the engine still runs $(mock_running)"

# Waiting for the first byte: the mock stalls 3 s before queueing.
curl -fsS -X POST -d '{"stall_ms":3000}' "$url/mock/faults" >/dev/null || rt_fail "cannot set mock fault"
curl -sS -o /dev/null --max-time 0.8 -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":2}' \
  "$RURL/v1/chat/completions" || true
for _ in $(seq 1 20); do [ "$(rt_inflight_total)" = 0 ] && break; sleep 0.1; done
[ "$(rt_inflight_total)" = 0 ] || rt_fail "guard not released after the client cancelled before the first byte"
curl -fsS "$RURL/metrics" >"$T/m"; grep -q 'outcome="cancelled"} [1-9]' "$T/m" || rt_fail "cancel not counted in metrics"
echo "router_cancel: OK"
