#!/usr/bin/env bash
# bench/mock_engine.sh — HTTP throughput of one switchyard-mock-engine process
# with zero timing costs: non-streaming chat completions, keep-alive, loopback.
# The mock is pinned to one core, wrk to another (taskset). Target:
# ≥ 20,000 req/s on one core. Prints the wrk summary and one result line;
# appends it to bench/results/mock_engine.md.
#
#   bench/mock_engine.sh [--duration S] [--connections N] [--bin PATH]
#                        [--mock-cpu C] [--wrk-cpu C]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/tools/mock-engine/switchyard-mock-engine
duration=5 conns=32 mock_cpu=0 wrk_cpu=1
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --mock-cpu) mock_cpu=$2; shift 2 ;;
    --wrk-cpu) wrk_cpu=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if ! command -v wrk >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends wrk
fi
[ -x "$bin" ] || { echo "build first: meson compile -C build" >&2; exit 1; }

dir=$(mktemp -d /tmp/sy-bench-mock.XXXXXX)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c "$mock_cpu" "$bin" --port "$port" --kv-port $((port + 1)) --load-port $((port + 2)) \
  --log-level warn &
pid=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.1; done

cat >"$dir/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"mock-model","messages":[{"role":"user","content":"hello, how are you today?"}],"max_tokens":16}'
LUA
# warm-up, then the measured run
taskset -c "$wrk_cpu" wrk -t1 -c"$conns" -d1s -s "$dir/post.lua" "http://127.0.0.1:$port/v1/chat/completions" >/dev/null
out=$(taskset -c "$wrk_cpu" wrk -t1 -c"$conns" -d"${duration}s" -s "$dir/post.lua" \
  "http://127.0.0.1:$port/v1/chat/completions")
echo "$out"
rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
errs=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
cpu=$(ps -o times= -p "$pid" | tr -d ' ')
line="| $(date -u +%Y-%m-%dT%H:%MZ) | $(nproc) vCPU, mock on cpu $mock_cpu, wrk on cpu $wrk_cpu | ${conns} conns, ${duration}s | ${rps} req/s | non-2xx: ${errs:-0} |"
echo "$line"
mkdir -p "$root/bench/results"
f=$root/bench/results/mock_engine.md
[ -f "$f" ] || printf '# mock engine HTTP throughput (bench/mock_engine.sh)\n\n| when | machine | load | result | errors |\n|---|---|---|---|---|\n' >"$f"
echo "$line" >>"$f"
awk -v r="$rps" 'BEGIN { exit (r >= 20000) ? 0 : 3 }' || { echo "below the 20,000 req/s target" >&2; exit 3; }
