#!/usr/bin/env bash
# router_resilience.sh ROUTER FLEET MOCK SYCTL — behaviour kept from SGLang's
# router: --retry-once moves a failed request (engine 500) to the other
# worker before any byte reached the client; the circuit breaker
# (--cb-threshold) opens on consecutive failures and then leaves the worker
# out of selection (every later request goes to the good one, none is
# refused); --override-sampling-params with
# --sampling-param-conflict reject answers a differing client value with 400
# sampling_contract_violation and overrides otherwise; the stream idle
# timeout cuts a stream whose engine went quiet.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init resil

good=$(rt_fleet "$T/good" --count 1 -- --model m1)
bad=$(rt_fleet "$T/bad" --count 1 -- --model m1 --fail-rate 1)
chat='{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'

# Retry: every request succeeds although one of the two workers always fails.
rt_router --worker-urls $good $bad --model-id m1 --policy round_robin --retry-once
for i in $(seq 1 6); do
  curl -fsS -D "$T/h" -o /dev/null -d "$chat" "$RURL/v1/chat/completions" || rt_fail "retry: request $i failed"
  grep -qi "^x-switchyard-worker: $good" "$T/h" || rt_fail "retry: answer not from the good worker"
done
curl -fsS "$RURL/metrics" >"$T/m"; grep -q '^switchyard_retries_total [1-9]' "$T/m" || rt_fail "retries not counted"
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

# Breaker: without retry, the bad worker's 500s open its breaker after 2
# failures (round robin alternates: requests 1 and 3 fail); from then on it
# is no candidate: the other 8 requests all go to the good worker.
rt_router --worker-urls $good $bad --model-id m1 --policy round_robin --cb-threshold 2 --cb-cool-down-secs 60
codes=""
for i in $(seq 1 10); do
  codes="$codes $(curl -sS -o "$T/b" -D "$T/h" -w '%{http_code}' -d "$chat" "$RURL/v1/chat/completions")"
  grep -qi '^x-router-error-code: breaker_open' "$T/h" && rt_fail "breaker_open answered: $codes"
done
n500=$(echo "$codes" | awk '{for (i = 1; i <= NF; i++) n += $i == 500} END {print n + 0}')
n200=$(echo "$codes" | awk '{for (i = 1; i <= NF; i++) n += $i == 200} END {print n + 0}')
[ "$n500" = 2 ] && [ "$n200" = 8 ] || rt_fail "breaker: expected 2 failures then only 200s, got: $codes"
curl -fsS "$RURL/metrics" >"$T/m"; grep "switchyard_worker_cb_state" "$T/m" | grep -q "} 1" || rt_fail "cb_state gauge not open"
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

# Sampling override.
rt_router --worker-urls $good --model-id m1 --override-sampling-params '{"temperature":0.5}' \
  --sampling-param-conflict reject
st=$(curl -sS -D "$T/h" -o "$T/b" -w '%{http_code}' \
  -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":2,"temperature":0.9}' "$RURL/v1/chat/completions")
[ "$st" = 400 ] || rt_fail "conflicting temperature: status $st"
grep -qi '^x-router-error-code: sampling_contract_violation' "$T/h" || rt_fail "no sampling_contract_violation"
grep -q temperature "$T/b" || rt_fail "message does not name the parameter"
curl -fsS -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":2,"temperature":0.5}' \
  "$RURL/v1/chat/completions" || rt_fail "equal temperature refused"
curl -fsS -o /dev/null -d "$chat" "$RURL/v1/chat/completions" || rt_fail "no temperature refused"
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

# Stream idle timeout: 1.5 s between tokens, idle limit 1 s → the stream is cut.
slow=$(rt_fleet "$T/slow" --count 1 -- --model m1 --decode-us-per-token 1500000)
rt_router --worker-urls $slow --model-id m1 --stream-idle-timeout-secs 1
curl -sS -N -o "$T/s" --max-time 10 \
  -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":5,"stream":true}' \
  "$RURL/v1/chat/completions" && rt_fail "idle stream was not cut" || true
grep -q '\[DONE\]' "$T/s" && rt_fail "idle stream completed"
grep -q 'stream idle timeout' "$T/router.log" || rt_fail "idle timeout not logged"
sleep 0.2
[ "$(rt_inflight_total)" = 0 ] || rt_fail "guard left after the idle timeout"
echo "router_resilience: OK"
