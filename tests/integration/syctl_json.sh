#!/usr/bin/env bash
# syctl_json.sh SYCTL FIXTURE — syctl's stable JSON shapes on a known region:
# create/header/workers/load/inflight/readers/destroy, unknown load as null,
# bad region paths and layout refused with a clear message.
set -euo pipefail
syctl=$1 fixture=$2
shm=/dev/shm/sy-test-syctl-$$
py=/usr/bin/python3
fix_pid=""
cleanup() { if [ -n "$fix_pid" ]; then kill "$fix_pid" 2>/dev/null || true; fi; rm -f "$shm" "$shm.bad"; }
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# Attach-only commands refuse a missing region with the path in the message.
if out=$("$syctl" --shm "$shm" header 2>&1); then fail "header on a missing region succeeded"; fi
grep -q "$shm" <<<"$out" || fail "missing-region message does not name the path: $out"

# The fixture fills the region and holds its slot until its stdin closes.
coproc FIX { "$fixture" --shm "$shm"; }
fix_in=${FIX[1]} fix_pid=$FIX_PID  # bash unsets FIX_PID when the coproc exits
read -r line <&"${FIX[0]}"
[ "$line" = ready ] || fail "fixture did not start: $line"

"$syctl" --shm "$shm" header --json | $py -c '
import json,sys; h=json.load(sys.stdin)
assert h["valid"] is True and h["layout_version"] >= 1, h
assert h["capacities"]["max_workers"] == 256, h
assert h["statebus"]["live"] is False and h["statebus"]["pid"] is None, h
'
"$syctl" --shm "$shm" workers --json | $py -c '
import json,sys; w={x["worker"]: x for x in json.load(sys.stdin)["workers"]}
assert sorted(w) == ["http://127.0.0.1:30001","http://127.0.0.1:30002","http://127.0.0.1:30003"], w
a,b,c = w["http://127.0.0.1:30001"], w["http://127.0.0.1:30002"], w["http://127.0.0.1:30003"]
assert (a["role"], a["healthy"], a["dp_size"]) == ("plain", True, 1), a
assert (b["role"], b["healthy"], b["dp_size"], b["bootstrap_port"]) == ("prefill", False, 2, 8998), b
assert c["role"] == "decode" and c["bootstrap_port"] is None, c
assert a["kv_events"]["block_size"] == 16 and a["kv_events"]["has_cache_signal"] is True, a
assert b["kv_events"]["block_size"] is None, b
'
"$syctl" --shm "$shm" load --json | $py -c '
import json,sys; w={x["worker"]: x for x in json.load(sys.stdin)["workers"]}
a,b,c = w["http://127.0.0.1:30001"], w["http://127.0.0.1:30002"], w["http://127.0.0.1:30003"]
assert a["fresh"] is True and a["native"] is True, a
assert (a["num_running_reqs"], a["num_waiting_reqs"], a["num_used_tokens"], a["max_total_num_tokens"]) == (3,2,1000,8000), a
assert a["num_waiting_uncached_tokens"] == 512 and a["max_running_requests"] == 64, a
for x, why in ((b, "missing"), (c, "stale")):
    assert x["fresh"] is False and x["unknown_reason"] == why, x
    for k in ("num_running_reqs","num_waiting_reqs","num_used_tokens","max_total_num_tokens"):
        assert x[k] is None, (k, x)   # unknown is null, never zero
assert [r["state"] for r in b["ranks"]] == ["reported", "missing"], b
'
"$syctl" --shm "$shm" inflight --json | $py -c '
import json,sys; w={x["worker"]: x for x in json.load(sys.stdin)["workers"]}
a = w["http://127.0.0.1:30001"]
assert a["in_flight"] == 2 and a["dispatches"] == 2 and len(a["rows"]) == 1, a
assert w["http://127.0.0.1:30002"]["in_flight"] == 0
'
"$syctl" --shm "$shm" affinity --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert d["capacity"] == 65536 and d["bound"] == 2 and d["counters"]["binds"] == 2, d
e = {x["kind"]: x for x in d["entries"]}
s, k = e["session"], e["sticky"]
assert s["worker"] == "http://127.0.0.1:30001" and s["worker_valid"] is True, s
assert s["ttl_ms"] == 600000 and 0 < s["expires_in_ms"] <= 600000 and len(s["key"]) == 32, s
assert k["worker"] == "http://127.0.0.1:30003" and k["ttl_ms"] == 10000, k
'
"$syctl" --shm "$shm" readers --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert len(d["readers"]) == 1 and d["readers"][0]["role"] == "tool" and d["readers"][0]["alive"], d
'
# Index and match (fixture: chain of tokens 1..64 at block size 16).
"$syctl" --shm "$shm" index --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert d["nodes"] == 5 and d["owners"] == 10 and d["evictions"] == 0, d
w={(x["worker"], x["dp_rank"]): x for x in d["workers"]}
a = w[("http://127.0.0.1:30001", 0)]
assert a["blocks"] == 5 and a["tiers"]["device"] == 5 and a["tiers"]["host"] == 0 and a["current"], a
b = w[("http://127.0.0.1:30002", 1)]
assert b["blocks"] == 2 and b["tiers"]["host"] == 2 and b["tiers"]["device"] == 0, b
assert w[("http://127.0.0.1:30003", 0)]["blocks"] == 3, w
'
"$syctl" --shm "$shm" index --worker http://127.0.0.1:30002/ --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert [(x["worker"], x["dp_rank"], x["blocks"]) for x in d["workers"]] == [("http://127.0.0.1:30002", 1, 2)], d
'
tokens=$(seq -s, 1 64)
"$syctl" --shm "$shm" match --tokens "$tokens" --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert d["blocks"] == 4 and d["block_size"] == 16, d   # block size from the worker records
got = [(m["worker"], m["dp_rank"], m["depth"]) for m in d["matches"]]
assert got == [("http://127.0.0.1:30001", 0, 4), ("http://127.0.0.1:30002", 1, 2),
               ("http://127.0.0.1:30003", 0, 1)], got
assert d["matches"][1]["tiers"] == ["host"], d
'
"$syctl" --shm "$shm" match --tokens "$tokens" --block-size 32 --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert d["blocks"] == 2 and d["matches"] == [], d
'
for args in "--hashes -3488128144981237669" "--tokens 1,2,3,4 --block-size 4"; do
"$syctl" --shm "$shm" match $args --json | $py -c '
import json,sys; d=json.load(sys.stdin)
assert d["blocks"] == 1, d
assert [(m["worker"], m["dp_rank"], m["depth"]) for m in d["matches"]] == [("http://127.0.0.1:30001", 0, 1)], d
'
done
"$syctl" --shm "$shm" match --tokens "$tokens" | grep -q "http://127.0.0.1:30002 .*rank 1 .*depth 2" || fail "text match output"
"$syctl" --shm "$shm" header --json | $py -c '
import json,sys; h=json.load(sys.stdin)
for t in ("index_nodes", "index_buckets", "index_overflow"):
    assert h["tables"][t]["size"] > 0, h
assert h["capacities"]["index_nodes"] == 131072, h
'

# Text output names every worker.
"$syctl" --shm "$shm" workers | grep -q "http://127.0.0.1:30003" || fail "text workers output"

# Closing the fixture's stdin releases its slot and its in-flight row.
eval "exec ${fix_in}>&-"
wait "$fix_pid" || fail "fixture exited non-zero"
"$syctl" --shm "$shm" inflight --json | $py -c '
import json,sys; w={x["worker"]: x for x in json.load(sys.stdin)["workers"]}
assert w["http://127.0.0.1:30001"]["in_flight"] == 0, w
'
"$syctl" --shm "$shm" readers --json | $py -c '
import json,sys; assert json.load(sys.stdin)["readers"] == []'

# Usage errors exit 2.
set +e
"$syctl" --shm "$shm" frobnicate >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown command must exit 2"
"$syctl" --shm "$shm" workers --max-workers 3 >/dev/null 2>&1; [ $? -eq 2 ] || fail "capacity option outside create must exit 2"
"$syctl" --shm "$shm" match >/dev/null 2>&1; [ $? -eq 2 ] || fail "match without --tokens/--hashes must exit 2"
"$syctl" --shm "$shm" match --tokens 1,x >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad token list must exit 2"
set -e

# A region of another layout version is refused with a clear message.
printf 'SYSTBUS1' > "$shm.bad"; dd if=/dev/zero bs=4096 count=2 >>"$shm.bad" 2>/dev/null
$py - "$shm.bad" <<'PY'
import struct, sys
p = sys.argv[1]
with open(p, "r+b") as f:
    f.seek(8); f.write(struct.pack("<I", 999))
PY
if out=$("$syctl" --shm "$shm.bad" header 2>&1); then rm -f "$shm.bad"; fail "foreign region accepted"; fi
rm -f "$shm.bad"
grep -qiE "layout|version|malformed|corrupt" <<<"$out" || fail "foreign-region message unclear: $out"

"$syctl" --shm "$shm" destroy --json | $py -c '
import json,sys; assert json.load(sys.stdin)["destroyed"] is True'
[ ! -e "$shm" ] || fail "destroy left the file"
echo "syctl_json: 1 passed, 0 failed"
