#!/usr/bin/python3
"""bench/quality/overload.py — the router queue under overload: open-loop
arrivals above the fleet's capacity, two classes, three router set-ups on
the same mock engines:

  engine queue   no admission cap: every request is dispatched at once and
                 waits in the engine's own FIFO (behind bulk work)
  503 at once    --max-inflight-requests CAP, --queue-size 0: over the cap
                 the router answers 503 (switchyard before the queue)
  router queue   --max-inflight-requests CAP, the router queue (x-smg-priority
                 interactive before bulk; --tenant-max-priority interactive)

Workload (seeded, the same for every run): RATE requests/s for SECONDS s,
INTERACTIVE_SHARE of them `x-smg-priority: interactive`, the rest `bulk`;
streamed completions of MAX_TOKENS tokens. ENGINES mocks run MAX_RUNNING at
a time (DECODE_US µs per token), so capacity ≈ ENGINES × MAX_RUNNING /
(MAX_TOKENS × DECODE_US) requests/s. Reported per set-up: TTFT p50 / p99 of
each class (client side, first SSE chunk, successes only), goodput (200s
per second of the run, the run lasting until the last answer), 503s.
Prints a Markdown table.

Env (defaults): ENGINES 2, MAX_RUNNING 4, DECODE_US 10000, MAX_TOKENS 20,
RATE 60, SECONDS 8, INTERACTIVE_SHARE 0.2, CAP 4, QUEUE_TIMEOUT 30.
"""
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from benchlib import MOCK, ROUTER, env, free_port, pct, wait_ok  # noqa: E402

ENGINES = env("ENGINES", 2)
MAX_RUNNING = env("MAX_RUNNING", 4)
DECODE_US = env("DECODE_US", 10000)
MAX_TOKENS = env("MAX_TOKENS", 20)
RATE = env("RATE", 60.0)
SECONDS = env("SECONDS", 8.0)
SHARE = env("INTERACTIVE_SHARE", 0.2)
CAP = env("CAP", 4)
QUEUE_TIMEOUT = env("QUEUE_TIMEOUT", 30)
T = tempfile.mkdtemp(prefix="sy-overload.")
procs = []


def wait_ready(port, path):
    if not wait_ok(port, path):
        sys.exit("port %d never answered %s" % (port, path))


def one(port, prio, out, lock):
    t0 = time.monotonic()
    ttft = None
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("POST", "/v1/completions",
                  body=json.dumps({"model": "m", "prompt": "p", "max_tokens": MAX_TOKENS,
                                   "stream": True}),
                  headers={"content-type": "application/json", "x-smg-priority": prio})
        r = c.getresponse()
        st = r.status
        if st == 200:
            while True:
                line = r.fp.readline()
                if not line:
                    break
                if ttft is None and line.startswith(b"data:"):
                    ttft = time.monotonic() - t0
        else:
            r.read()
        c.close()
    except OSError:
        st = 0
    with lock:
        out.append((prio, st, ttft, time.monotonic()))


def run(name, flags, engines):
    port = free_port()
    shm = "/dev/shm/sy-bench-overload-%d" % os.getpid()
    r = subprocess.Popen([ROUTER, "--port", str(port), "--shm", shm, "--model-id", "m",
                          "--log-level", "warn", "--worker-urls"]
                         + ["http://127.0.0.1:%d" % e for e in engines] + flags,
                         stdout=open(os.path.join(T, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    wait_ready(port, "/readyz")
    rng = random.Random(7)
    out, lock, ts = [], threading.Lock(), []
    t0 = time.monotonic()
    n = int(RATE * SECONDS)
    for i in range(n):
        due = t0 + i / RATE
        d = due - time.monotonic()
        if d > 0:
            time.sleep(d)
        prio = "interactive" if rng.random() < SHARE else "bulk"
        t = threading.Thread(target=one, args=(port, prio, out, lock))
        t.start()
        ts.append(t)
    for t in ts:
        t.join()
    end = max(x[3] for x in out)
    r.terminate()
    r.wait(timeout=30)
    subprocess.run(["rm", "-f", shm])
    ok = [x for x in out if x[1] == 200]
    row = {"name": name, "goodput": len(ok) / (end - t0),
           "503": sum(1 for x in out if x[1] == 503), "other": sum(1 for x in out if x[1] not in (200, 503))}
    for cls in ("interactive", "bulk"):
        v = [x[2] for x in ok if x[0] == cls and x[2] is not None]
        row[cls] = (pct(v, 0.5) * 1000, pct(v, 0.99) * 1000, len(v))
    return row


def main():
    engines = []
    for k in range(ENGINES):
        p = free_port()
        procs.append(subprocess.Popen([MOCK, "--port", str(p), "--model", "m", "--max-running",
                                       str(MAX_RUNNING), "--decode-us-per-token", str(DECODE_US)],
                                      stdout=open(os.path.join(T, "mock%d.log" % k), "a"),
                                      stderr=subprocess.STDOUT))
        wait_ready(p, "/health")
        engines.append(p)
    cap = ENGINES * MAX_RUNNING / (MAX_TOKENS * DECODE_US / 1e6)
    print("%d engines × %d running, %d tokens × %d µs: capacity ≈ %.0f req/s; arrivals %.0f "
          "req/s for %.0f s, %.0f %% interactive\n" % (ENGINES, MAX_RUNNING, MAX_TOKENS,
                                                    DECODE_US, cap, RATE, SECONDS, SHARE * 100))
    rows = [
        run("engine queue", [], engines),
        run("503 at once", ["--max-inflight-requests", str(CAP), "--queue-size", "0"], engines),
        run("router queue", ["--max-inflight-requests", str(CAP), "--queue-size", "100000",
                             "--queue-timeout-secs", str(QUEUE_TIMEOUT),
                             "--tenant-max-priority", "interactive"], engines),
    ]
    print("| set-up | interactive TTFT p50 / p99 ms | bulk TTFT p50 / p99 ms | goodput req/s "
          "| 503 | other errors |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.0f / %.0f (%d) | %.0f / %.0f (%d) | %.1f | %d | %d |" % (
            r["name"], r["interactive"][0], r["interactive"][1], r["interactive"][2],
            r["bulk"][0], r["bulk"][1], r["bulk"][2], r["goodput"], r["503"], r["other"]))


try:
    main()
finally:
    for p in procs:
        p.terminate()
        p.wait(timeout=10)
    subprocess.run(["rm", "-rf", T])
