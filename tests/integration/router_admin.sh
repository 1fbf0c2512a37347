#!/usr/bin/env bash
# router_admin.sh ROUTER FLEET MOCK SYCTL — the admin API without a statebus
# (degraded mode: the router edits the workers table itself): 404 without
# --admin-api-key, 401 without the bearer, GET lists, POST adds a worker that
# then serves, DELETE removes it; POST /flush_cache fans out to every worker.
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
sleep 0.1   # the selection core refreshes its fleet snapshot every 20 ms
seen=$(for i in 1 2 3 4 5 6; do curl -fsS -D - -o /dev/null -d '{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}' "$RURL/v1/chat/completions"; done | grep -i '^x-switchyard-worker' | sort -u | wc -l)
[ "$seen" = 2 ] || rt_fail "added worker does not serve ($seen workers seen)"
curl -fsS "$RURL/flush_cache" -X POST | rt_json 'len(d["results"]) == 2 and all(r["status"] == 200 for r in d["results"])' >/dev/null
enc=$($PY -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$b")
[ "$(curl -sS -o /dev/null -w '%{http_code}' "${auth[@]}" -X DELETE "$RURL/workers/$enc")" = 200 ] || rt_fail "DELETE failed"
curl -fsS "${auth[@]}" "$RURL/workers" | rt_json 'len(d["workers"]) == 1' >/dev/null
echo "router_admin: OK"
