#!/usr/bin/python3
"""bench/queue/wake.py ROUTER [PROCESSES] [ROUNDS] — wake-up latency of the
router queue, end to end.

A fake engine on 127.0.0.1 (this script) answers each completion after
HOLD_MS and records, in CLOCK_MONOTONIC, when it wrote the last byte of a
response and when a request arrived. The router runs with
--max-inflight-requests 1 on that one engine and --processes N: request A
is dispatched, request B arrives 20 ms later and waits in the router queue
(admission rejection). The gap between A's last byte leaving the engine
and B arriving at the engine is the whole path a wake takes: the router
reads A's end, releases the in-flight guard (the region's wake counter
moves), the waiting process notices on its 1 ms poll, runs the bucket pass
again and dispatches B (connect included). With N > 1, A and B land on
whichever processes the kernel picks (SO_REUSEPORT), so cross-process wakes
are part of the sample. Prints p50 / p90 / p99 / max in ms over ROUNDS
(default 60) pairs. Python's own scheduling is in the figure: it is an
upper bound of the router's share.
"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from benchlib import free_port, pct, wait_ok  # noqa: E402

ROUTER = sys.argv[1]
PROCS = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 60
HOLD_MS = 50
arrivals, ends = {}, {}
lock = threading.Lock()


class Engine(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # one response, no 40 ms Nagle + delayed-ACK stall

    def reply(self, body, code=200):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self):
        if self.path == "/server_info":
            self.reply({"model_path": "m", "disaggregation_mode": "null", "dp_size": 1})
        elif self.path == "/v1/models":
            self.reply({"object": "list", "data": [{"id": "m", "object": "model"}]})
        elif self.path in ("/health", "/get_model_info"):
            self.reply({"model_path": "m"})
        else:
            self.reply({}, 404)

    def do_POST(self):
        t = time.monotonic_ns()
        n = int(self.headers.get("content-length", "0"))
        tag = json.loads(self.rfile.read(n)).get("prompt", "")
        with lock:
            arrivals[tag] = t
        time.sleep(HOLD_MS / 1000)
        self.reply({"choices": [{"text": "ok"}]})
        with lock:
            ends[tag] = time.monotonic_ns()

    def log_message(self, *a):
        pass


def post(port, tag, out):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/v1/completions", body=json.dumps({"model": "m", "prompt": tag}),
              headers={"content-type": "application/json"})
    r = c.getresponse()
    r.read()
    out.append(r.status)
    c.close()


def main():
    ep = free_port()
    srv = ThreadingHTTPServer(("127.0.0.1", ep), Engine)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    rp = free_port()
    shm = "/dev/shm/sy-bench-wake-%d" % os.getpid()
    log = tempfile.NamedTemporaryFile(prefix="sy-wake-", suffix=".log", delete=False)
    r = subprocess.Popen([ROUTER, "--port", str(rp), "--shm", shm, "--processes", str(PROCS),
                          "--worker-urls", "http://127.0.0.1:%d" % ep, "--model-id", "m",
                          "--max-inflight-requests", "1", "--log-level", "warn"],
                         stdout=log, stderr=log)
    try:
        wait_ok(rp, "/readyz", tries=200)
        gaps, statuses = [], []
        for i in range(ROUNDS):
            a, b = "a%d" % i, "b%d" % i
            ta = threading.Thread(target=post, args=(rp, a, statuses))
            tb = threading.Thread(target=post, args=(rp, b, statuses))
            ta.start()
            time.sleep(0.02)
            tb.start()
            ta.join()
            tb.join()
            with lock:
                if a in ends and b in arrivals and arrivals[b] > arrivals[a]:
                    gaps.append((arrivals[b] - ends[a]) / 1e6)
        bad = [s for s in statuses if s != 200]
        gaps.sort()
        q = lambda p: pct(gaps, p)
        print("processes %d, %d pairs (%d non-200): wake gap ms p50 %.2f p90 %.2f p99 %.2f "
              "max %.2f mean %.2f" % (PROCS, len(gaps), len(bad), q(0.5), q(0.9), q(0.99),
                                      gaps[-1], statistics.mean(gaps)))
    finally:
        r.terminate()
        r.wait(timeout=20)
        srv.shutdown()
        subprocess.run(["rm", "-f", shm, log.name])


main()
