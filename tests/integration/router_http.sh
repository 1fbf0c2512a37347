#!/usr/bin/env bash
# router_http.sh ROUTER FLEET MOCK SYCTL — the router's HTTP surface against
# two mock engines, in degraded mode (no statebus: the master registers the
# static fleet): non-streamed and streamed chat (SSE chunk by chunk, [DONE]),
# /v1/completions, /generate, decision headers, x-request-id passthrough,
# the 400/404/413/503 error bodies with x-router-error-code, /health,
# /readyz, /v1/models, /metrics, h2c, and the workers registered in the
# state plane.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init http

urls=$(rt_fleet "$T/fleet" --count 2 -- --model m1)
rt_router --worker-urls $urls --model-id m1 --processes 2

# Degraded mode registered both workers, healthy.
"$SYCTL" --shm "$SHM" workers --json | rt_json 'len(d["workers"]) == 2 and all(w["healthy"] for w in d["workers"])' >/dev/null

chat='{"model":"m1","messages":[{"role":"user","content":"hello"}],"max_tokens":5}'
# Non-streamed chat with a client request ID.
curl -fsS -D "$T/h" -o "$T/b" -H 'content-type: application/json' -H 'x-request-id: test-id-1' \
  -d "$chat" "$RURL/v1/chat/completions" || rt_fail "chat failed"
grep -qi '^x-request-id: test-id-1' "$T/h" || rt_fail "x-request-id not passed back"
grep -qi '^x-switchyard-worker: http://127.0.0.1:' "$T/h" || rt_fail "no x-switchyard-worker"
grep -qi '^x-switchyard-bucket: ' "$T/h" || rt_fail "no x-switchyard-bucket"
grep -qi '^x-switchyard-reason: ' "$T/h" || rt_fail "no x-switchyard-reason"
rt_json 'd["object"] == "chat.completion" and d["usage"]["completion_tokens"] == 5' <"$T/b" >/dev/null

# Both workers serve. With no load, power_of_two breaks ties at random, so
# ask 32 times: all on one worker has probability 2^-31.
for i in $(seq 32); do curl -fsS -D - -o /dev/null -d "$chat" "$RURL/v1/chat/completions"; done \
  | grep -i '^x-switchyard-worker' | sort -u | wc -l | grep -q 2 || rt_fail "only one worker served"

# Streamed chat: SSE frames, final [DONE].
curl -fsS -N -D "$T/h" -o "$T/s" -d '{"model":"m1","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}' \
  "$RURL/v1/chat/completions" || rt_fail "stream failed"
grep -qi '^content-type: text/event-stream' "$T/h" || rt_fail "stream content-type"
[ "$(grep -c '^data: {' "$T/s")" -ge 5 ] || rt_fail "too few SSE chunks: $(cat "$T/s")"
tail -2 "$T/s" | grep -q '^data: \[DONE\]' || rt_fail "no [DONE]"

# /v1/completions and /generate.
curl -fsS -d '{"model":"m1","prompt":"once upon","max_tokens":3}' "$RURL/v1/completions" \
  | rt_json 'd["object"] == "text_completion"' >/dev/null
curl -fsS -d '{"text":"once upon","sampling_params":{"max_new_tokens":3}}' "$RURL/generate" \
  | rt_json '"text" in d' >/dev/null

# Errors: body shape and header.
err() { # status code body path
  local st
  st=$(curl -sS -D "$T/eh" -o "$T/eb" -w '%{http_code}' --data-binary "$3" "$RURL$4")
  [ "$st" = "$1" ] || rt_fail "$4: status $st, want $1: $(head -c 300 "$T/eb")"
  grep -qi "^x-router-error-code: $2" "$T/eh" || rt_fail "$4: no x-router-error-code $2"
  rt_json "d['error']['code'] == '$2' and d['error']['type'] == ('invalid_request_error' if $1 < 500 else 'server_error') and len(d['error']['message']) > 0 and 'http://' not in d['error']['message']" <"$T/eb" >/dev/null
}
err 400 bad_request '{"model":"m1","messages":[' /v1/chat/completions
grep -q 'byte\|offset' "$T/eb" || rt_fail "malformed JSON message does not give the offset: $(cat "$T/eb")"
err 404 model_not_found '{"model":"nope","messages":[{"role":"user","content":"x"}]}' /v1/chat/completions
err 404 not_found '{}' /v1/nothing
$PY -c 'import sys; sys.stdout.write("{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "a"*(33<<20) + "\"}]}")' >"$T/big.json"
err 413 payload_too_large @"$T/big.json" /v1/chat/completions
rm -f "$T/big.json"

# Health, readiness, models, metrics.
[ "$(curl -fsS "$RURL/healthz")" = ok ] || rt_fail healthz
curl -fsS "$RURL/readyz" >/dev/null || rt_fail readyz
curl -fsS "$RURL/v1/models" | rt_json 'd["object"] == "list" and [m["id"] for m in d["data"]] == ["m1"]' >/dev/null
curl -fsS "$RURL/metrics" >"$T/m"
for name in switchyard_requests_total switchyard_responses_total switchyard_worker_requests_total \
            switchyard_request_duration_seconds_bucket switchyard_ttft_seconds_count \
            switchyard_router_phase_seconds_bucket switchyard_policy_decisions_total \
            switchyard_worker_inflight_requests switchyard_workers; do
  grep -q "^$name" "$T/m" || rt_fail "metric $name missing"
done
# Counters are summed over both processes: ≥ 9 chat requests were made.
n=$(awk '/^switchyard_requests_total\{route="\/v1\/chat\/completions"/ {print $2}' "$T/m")
[ "$n" -ge 9 ] || rt_fail "chat requests counted $n, want ≥ 9 (summed over processes)"
grep -q 'switchyard_responses_total{route="/v1/chat/completions",method="POST",status_code="413"} 1' "$T/m" \
  || rt_fail "413 not counted"

# h2c (prior knowledge) works too.
if curl --version | grep -q HTTP2; then
  curl -fsS --http2-prior-knowledge -o /dev/null -w '%{http_version}' -d "$chat" "$RURL/v1/chat/completions" \
    | grep -q '^2' || rt_fail "h2c request failed"
fi

# A fleet of prefill workers only: 503 with the stage-specific code.
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""
rm -f "$SHM"
cat >"$T/pd.yaml" <<Y
model_id: m1
workers:
  - {url: $(echo $urls | cut -d" " -f1), role: prefill, bootstrap_port: 1}
Y
rt_router --config "$T/pd.yaml"
err 503 no_decode_workers_available "$chat" /v1/chat/completions
echo "router_http: OK"
