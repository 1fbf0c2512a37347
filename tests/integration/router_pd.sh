#!/usr/bin/env bash
# router_pd.sh ROUTER FLEET MOCK SYCTL — PD disaggregation round trip: one
# prefill and one decode mock engine (the decode mock fetches the KV of the
# request's bootstrap_room from the prefill mock's bootstrap port, so a
# wrong or missing splice fails the request), non-streamed and streamed,
# with the client's own bootstrap fields replaced; decision headers name
# both workers; guards are released on both.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init pd

rt_fleet "$T/fleet" --prefill 1 --decode 1 -- --model m1 >/dev/null
# fleet.tsv: name role url http kv load replay bootstrap pid
read -r _ _ purl _ _ _ _ pboot _ < <(awk '$2=="prefill"' "$T/fleet/fleet.tsv")
read -r _ _ durl _ < <(awk '$2=="decode"' "$T/fleet/fleet.tsv")
cat >"$T/r.yaml" <<Y
model_id: m1
workers:
  - {url: $purl, role: prefill, bootstrap_port: $pboot}
  - {url: $durl, role: decode}
Y
rt_router --config "$T/r.yaml"

body='{"model":"m1","messages":[{"role":"user","content":"tell me"}],"max_tokens":4,"bootstrap_room":7,"bootstrap_host":"evil","bootstrap_port":1}'
curl -fsS -D "$T/h" -o "$T/b" -d "$body" "$RURL/v1/chat/completions" || rt_fail "PD chat failed: $(cat "$T/b" 2>/dev/null)"
grep -qi "^x-switchyard-worker: $durl" "$T/h" || rt_fail "x-switchyard-worker is not the decode worker"
grep -qi "^x-switchyard-prefill-worker: $purl" "$T/h" || rt_fail "no x-switchyard-prefill-worker"
grep -qi "^x-sgl-decode-url: $durl" "$T/h" || rt_fail "no x-sgl-decode-url"
# Both stages' decisions: the decode's in x-switchyard-reason, the prefill's
# beside it (default buckets: power_of_n for both stages).
grep -qi "^x-switchyard-reason: power_of_n" "$T/h" || rt_fail "no decode x-switchyard-reason"
grep -qi "^x-switchyard-prefill-reason: power_of_n" "$T/h" || rt_fail "no x-switchyard-prefill-reason: $(cat "$T/h")"
rt_json 'd["usage"]["completion_tokens"] == 4' <"$T/b" >/dev/null

curl -fsS -N -o "$T/s" -d '{"model":"m1","messages":[{"role":"user","content":"stream"}],"max_tokens":3,"stream":true}' \
  "$RURL/v1/chat/completions" || rt_fail "PD stream failed"
tail -2 "$T/s" | grep -q '^data: \[DONE\]' || rt_fail "PD stream: no [DONE]"

# Several in a row: fresh rooms every time (a reused room would collide).
for i in 1 2 3 4 5; do
  curl -fsS -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"again"}],"max_tokens":2}' \
    "$RURL/v1/chat/completions" || rt_fail "PD request $i failed"
done
# Both mocks served all 7 requests (their stats), and no guard is left.
sleep 0.3
[ "$(rt_inflight_total)" = 0 ] || rt_fail "in-flight guards left: $("$SYCTL" --shm "$SHM" inflight)"
for u in "$purl" "$durl"; do
  curl -fsS "$u/mock/stats" | rt_json 'd["requests"] == 7' >/dev/null ||
    rt_fail "$u served $(curl -fsS "$u/mock/stats" | rt_json 'd["requests"]') requests, not 7"
done
# One decision per stage per request: 7 prefill and 7 decode, none plain.
curl -fsS "$RURL/metrics" >"$T/m"
for stage in prefill decode; do
  n=$(awk -v s="$stage" 'index($0, "switchyard_policy_decisions_total{stage=\"" s "\"") == 1 {t += $NF} END {print t + 0}' "$T/m")
  [ "$n" = 7 ] || rt_fail "$stage decisions: $n, want 7: $(grep policy_decisions "$T/m")"
done
grep -q '^switchyard_policy_decisions_total{stage="plain"' "$T/m" && rt_fail "plain decisions counted for PD requests"

# --no-decision-headers turns the prefill reason off with the others.
kill -TERM "$RPID"; wait "$RPID" 2>/dev/null || true
rt_router --config "$T/r.yaml" --no-decision-headers
curl -fsS -D "$T/h2" -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"quiet"}],"max_tokens":2}' \
  "$RURL/v1/chat/completions" || rt_fail "PD chat without decision headers failed"
grep -qi '^x-switchyard-' "$T/h2" && rt_fail "decision headers with --no-decision-headers: $(grep -i x-switchyard "$T/h2")"
echo "router_pd: OK"
