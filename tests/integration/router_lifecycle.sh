#!/usr/bin/env bash
# router_lifecycle.sh ROUTER FLEET MOCK SYCTL — process management under load:
# SIGHUP reloads (a new configuration generation, here turning decision
# headers off) while requests stream in drop nothing; a worker process
# killed with SIGKILL is restarted and its proc slot reaped; SIGTERM drains:
# /readyz turns 503, a stream in flight completes, the router exits 0.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init life

url=$(rt_fleet "$T/fleet" --count 2 -- --model m1 --decode-us-per-token 2000)
urls=$(echo $url)
cat >"$T/r.yaml" <<Y
model_id: m1
worker_urls: [$(echo $urls | sed 's/ /, /')]
router: {processes: 2, shutdown_drain_secs: 20}
Y
rt_router --config "$T/r.yaml"

# Load: 4 clients × 40 streamed requests each, every status recorded.
load() {
  for i in $(seq 1 40); do
    curl -sS -N -o /dev/null -w '%{http_code}\n' \
      -d '{"model":"m1","messages":[{"role":"user","content":"load"}],"max_tokens":8,"stream":true}' \
      "$RURL/v1/chat/completions" || echo "curl-error"
  done >"$T/load.$1"
}
for c in 1 2 3 4; do load $c & done
sleep 0.5
# Reload three times under load; the last one turns decision headers off.
kill -HUP "$RPID"; sleep 0.4
kill -HUP "$RPID"; sleep 0.4
sed -i 's/router: {processes: 2, shutdown_drain_secs: 20}/router: {processes: 2, shutdown_drain_secs: 20, no_decision_headers: true}/' "$T/r.yaml"
kill -HUP "$RPID"
wait $(jobs -p | grep -v "^$RPID$") 2>/dev/null || true
total=$(cat "$T"/load.* | wc -l)
ok=$(cat "$T"/load.* | grep -c '^200$' || true)
[ "$total" = 160 ] && [ "$ok" = 160 ] || rt_fail "reload under load: $ok of $total requests OK: $(sort "$T"/load.* | uniq -c)"
grep -q 'generation 4 installed' "$T/router.log" || rt_fail "reload did not install generation 4"
sleep 0.3
curl -fsS -D - -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}' \
  "$RURL/v1/chat/completions" | grep -qi '^x-switchyard-worker' && rt_fail "decision headers still on after the reload"

# A bad configuration is refused and the running one kept.
cp "$T/r.yaml" "$T/good.yaml"
echo "router: {port: nonsense}" >"$T/r.yaml"
kill -HUP "$RPID"; sleep 0.5
grep -q 'configuration refused' "$T/router.log" || rt_fail "bad reload not refused"
cp "$T/good.yaml" "$T/r.yaml"
curl -fsS -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}' \
  "$RURL/v1/chat/completions" || rt_fail "router broken after a refused reload"

# Crash: SIGKILL one worker process; the master restarts it and reaps its slot.
victim=$(pgrep -P "$RPID" | head -1)
kill -KILL "$victim"
for _ in $(seq 1 40); do
  [ "$(pgrep -P "$RPID" | wc -l)" = 2 ] && ! pgrep -P "$RPID" | grep -qx "$victim" && break
  sleep 0.1
done
[ "$(pgrep -P "$RPID" | wc -l)" = 2 ] || rt_fail "crashed worker not restarted"
grep -q 'died of signal 9; restarting' "$T/router.log" || rt_fail "restart not logged"
"$SYCTL" --shm "$SHM" readers --json | rt_json 'sum(1 for r in d["readers"] if r["role"] == "router") == 2' >/dev/null \
  || rt_fail "dead worker's proc slot not reaped"
for i in 1 2 3 4; do
  curl -fsS -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}' \
    "$RURL/v1/chat/completions" || rt_fail "request after restart failed"
done

# Drain: a 1.5 s stream is in flight when SIGTERM arrives; it completes.
curl -sS -N -o "$T/drain" -w '%{http_code}' \
  -d '{"model":"m1","messages":[{"role":"user","content":"drain"}],"max_tokens":300,"stream":true}' \
  "$RURL/v1/chat/completions" >"$T/drain.code" &
cpid=$!
sleep 0.4
kill -TERM "$RPID"
sleep 0.2
wait $cpid || true
[ "$(cat "$T/drain.code")" = 200 ] || rt_fail "stream in flight at SIGTERM: status $(cat "$T/drain.code")"
tail -2 "$T/drain" | grep -q '^data: \[DONE\]' || rt_fail "stream in flight at SIGTERM was cut"
for _ in $(seq 1 50); do kill -0 "$RPID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$RPID" 2>/dev/null && rt_fail "router did not exit after draining"
wait "$RPID"; rc=$?
RPID=""
[ $rc = 0 ] || rt_fail "router exit status $rc after drain"
echo "router_lifecycle: OK"
