#!/usr/bin/env bash
# router_admin.sh ROUTER FLEET MOCK SYCTL — the admin API without a statebus
# (degraded mode: the router edits the workers table itself): 404 without
# --admin-api-key, 401 without the bearer, GET lists, POST adds a worker that
# then serves, DELETE removes it; POST /flush_cache fans out to every worker
# (with the admin key). Keys: --api-key-file guards inference and model
# routes, the admin key the admin routes, 401 otherwise; rotation on SIGHUP;
# keys never in the logs; the admin listener (--admin-port) serves the admin
# routes alone; impossible settings refused at --check-config.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init admin

a=$(rt_fleet "$T/a" --count 1 -- --model m1)
b=$(rt_fleet "$T/b" --count 1 -- --model m1)
rt_router --worker-urls "$a" --model-id m1
[ "$(curl -sS -o /dev/null -w '%{http_code}' "$RURL/workers")" = 404 ] || rt_fail "admin API on without a key"
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

rt_router --worker-urls "$a" --model-id m1 --policy round_robin --admin-api-key sekrit
[ "$(curl -sS -o /dev/null -w '%{http_code}' "$RURL/workers")" = 401 ] || rt_fail "no 401 without bearer"
[ "$(curl -sS -o /dev/null -w '%{http_code}' -H 'authorization: Bearer wrong' "$RURL/workers")" = 401 ] || rt_fail "wrong bearer accepted"
auth=(-H 'authorization: Bearer sekrit')
curl -fsS "${auth[@]}" "$RURL/workers" | rt_json 'len(d["workers"]) == 1 and d["statebus_live"] is False' >/dev/null
st=$(curl -sS -o "$T/o" -w '%{http_code}' "${auth[@]}" -d "{\"url\":\"$b\",\"role\":\"plain\",\"model\":\"m1\"}" "$RURL/workers")
[ "$st" = 201 ] || rt_fail "POST /workers: $st $(cat "$T/o")"
curl -fsS "${auth[@]}" "$RURL/workers" | rt_json 'len(d["workers"]) == 2' >/dev/null
st=$(curl -sS -o "$T/o" -w '%{http_code}' "${auth[@]}" -d '{"url":"https://127.0.0.1:1","role":"plain"}' "$RURL/workers")
[ "$st" = 400 ] && grep -q 'https:// workers are not supported' "$T/o" || rt_fail "https worker added: $st $(cat "$T/o")"
sleep 0.1   # the selection core refreshes its fleet snapshot every 20 ms
seen=$(for i in 1 2 3 4 5 6; do curl -fsS -D - -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}' "$RURL/v1/chat/completions"; done | grep -i '^x-switchyard-worker' | sort -u | wc -l)
[ "$seen" = 2 ] || rt_fail "added worker does not serve ($seen workers seen)"
[ "$(curl -sS -o /dev/null -w '%{http_code}' "$RURL/flush_cache" -X POST)" = 401 ] || rt_fail "/flush_cache open with an admin key"
curl -fsS "${auth[@]}" "$RURL/flush_cache" -X POST | rt_json 'len(d["results"]) == 2 and all(r["status"] == 200 for r in d["results"])' >/dev/null
enc=$($PY -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$b")
[ "$(curl -sS -o /dev/null -w '%{http_code}' "${auth[@]}" -X DELETE "$RURL/workers/$enc")" = 200 ] || rt_fail "DELETE failed"
curl -fsS "${auth[@]}" "$RURL/workers" | rt_json 'len(d["workers"]) == 1' >/dev/null
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

# Keys: --api-key-file guards the inference and model routes, the admin
# key the admin routes; health, readiness and metrics stay open.
umask 077
printf 'client-k3y\n' >"$T/api.key"
printf 'adm1n-k3y' >"$T/admin.key"
rt_router --worker-urls "$a" --model-id m1 --api-key-file "$T/api.key" \
  --admin-api-key-file "$T/admin.key" --access-log "$T/access.log"
chat='{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}'
code() { curl -sS -o "$T/o" -w '%{http_code}' "$@"; }
for r in "/v1/chat/completions -d $chat" "/v1/completions -d {\"model\":\"m1\",\"prompt\":\"x\"}" \
         "/generate -d {\"text\":\"x\"}" "/v1/models" "/v1/tokenize -d {\"prompt\":\"x\"}" \
         "/flush_cache -X POST" "/workers"; do
  set -- $r
  p=$1; shift
  st=$(code "$RURL$p" "$@")
  [ "$st" = 401 ] || rt_fail "$p without a key: $st"
  rt_json 'd["error"]["code"] == "unauthorized"' <"$T/o" >/dev/null
  st=$(code -H 'authorization: Bearer client-k3yX' "$RURL$p" "$@")
  [ "$st" = 401 ] || rt_fail "$p with a wrong key: $st"
done
ok=(-H 'authorization: Bearer client-k3y')
adm=(-H 'authorization: bearer adm1n-k3y')
[ "$(code "${ok[@]}" -d "$chat" "$RURL/v1/chat/completions")" = 200 ] || rt_fail "chat with the API key: $(cat "$T/o")"
[ "$(code "${ok[@]}" "$RURL/v1/models")" = 200 ] || rt_fail "models with the API key"
[ "$(code "${adm[@]}" -d "$chat" "$RURL/v1/chat/completions")" = 401 ] || rt_fail "the admin key opens inference"
[ "$(code "${ok[@]}" -X POST "$RURL/flush_cache")" = 401 ] || rt_fail "the API key opens /flush_cache"
[ "$(code "${ok[@]}" "$RURL/workers")" = 401 ] || rt_fail "the API key opens /workers"
[ "$(code "${adm[@]}" -X POST "$RURL/flush_cache")" = 200 ] || rt_fail "/flush_cache with the admin key"
[ "$(code "${adm[@]}" "$RURL/workers")" = 200 ] || rt_fail "/workers with the admin key"
for p in /health /healthz /readyz /metrics; do
  [ "$(code "$RURL$p")" = 200 ] || rt_fail "$p needs a key"
done
curl -sS -D "$T/h" -o /dev/null "$RURL/v1/models"
grep -qi '^www-authenticate: Bearer' "$T/h" || rt_fail "401 without WWW-Authenticate"
# A reload reads the key file again: the new key works, the old one not.
printf 'rotated-k3y\n' >"$T/api.key"
kill -HUP "$RPID"
for _ in $(seq 1 50); do
  [ "$(code -H 'authorization: Bearer rotated-k3y' "$RURL/v1/models")" = 200 ] && break
  sleep 0.1
done
[ "$(code -H 'authorization: Bearer rotated-k3y' "$RURL/v1/models")" = 200 ] || rt_fail "rotated key not taken on SIGHUP"
[ "$(code "${ok[@]}" "$RURL/v1/models")" = 401 ] || rt_fail "old key still accepted after the reload"
if grep -q -e 'client-k3y' -e 'adm1n-k3y' -e 'rotated-k3y' "$T/router.log" "$T/access.log"; then
  rt_fail "a key reached a log"
fi
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

# The admin listener: admin routes there only, and only they (with health,
# readiness, metrics) served there.
APORT=$(rt_free_port)
AURL=http://127.0.0.1:$APORT
rt_router --worker-urls "$a" --model-id m1 --admin-api-key sekrit --admin-port "$APORT"
[ "$(code "${auth[@]}" "$RURL/workers")" = 404 ] || rt_fail "/workers on the main listener"
grep -q 'served on the admin listener' "$T/o" || rt_fail "main listener 404: $(cat "$T/o")"
[ "$(code "${auth[@]}" -X POST "$RURL/flush_cache")" = 404 ] || rt_fail "/flush_cache on the main listener"
[ "$(code "${auth[@]}" "$AURL/workers")" = 200 ] || rt_fail "/workers on the admin listener"
[ "$(code "$AURL/workers")" = 401 ] || rt_fail "admin listener without the key"
[ "$(code "${auth[@]}" -X POST "$AURL/flush_cache")" = 200 ] || rt_fail "/flush_cache on the admin listener"
[ "$(code -d "$chat" "$AURL/v1/chat/completions")" = 404 ] || rt_fail "inference on the admin listener"
for p in /health /readyz /metrics; do
  [ "$(code "$AURL$p")" = 200 ] || rt_fail "$p on the admin listener"
done
[ "$(code -d "$chat" "$RURL/v1/chat/completions")" = 200 ] || rt_fail "inference on the main listener"
kill -TERM "$RPID"; wait "$RPID" || true; RPID=""; rm -f "$SHM"

# Key and listener settings that cannot work are refused at --check-config.
chk() { "$ROUTER" --check-config --worker-urls "$a" "$@" 2>&1; }
out=$(chk --api-key k --api-key-file "$T/api.key") && rt_fail "key and key file both accepted"
grep -q 'router.api_key_file: set together with router.api_key' <<<"$out" || rt_fail "both: $out"
out=$(chk --api-key-file "$T/missing.key") && rt_fail "missing key file accepted"
grep -q "router.api_key_file: cannot read $T/missing.key" <<<"$out" || rt_fail "missing: $out"
printf '\n' >"$T/empty.key"
out=$(chk --admin-api-key-file "$T/empty.key") && rt_fail "empty key accepted"
grep -q 'router.admin_api_key_file: the key in .* must be 1 to 4096 characters' <<<"$out" || rt_fail "empty: $out"
out=$(chk --api-key 'two words') && rt_fail "key with a space accepted"
grep -q -- '--api-key: must be visible ASCII' <<<"$out" || rt_fail "space: $out"
grep -q 'two words' <<<"$out" && rt_fail "a refused key is echoed: $out"
out=$(chk --port 30000 --admin-port 30000) && rt_fail "admin port = port accepted"
grep -q 'router.admin_port: 30000 is the main listener' <<<"$out" || rt_fail "same port: $out"
out=$(chk --admin-host 127.0.0.1) && rt_fail "admin host without port accepted"
grep -q 'router.admin_host: needs router.admin_port' <<<"$out" || rt_fail "admin host: $out"
echo "router_admin: OK"
