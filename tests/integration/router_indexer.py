#!/usr/bin/python3
"""router_indexer.py ROUTER STATEBUS FLEET MOCK SYCTL — remote prefix lookups
(cache_prefix_provider: indexer, docs/query.md) never block the event loop.

One mock engine (block 16) and a statebus give the router the model's block
size; a fake remote statebus (a ZeroMQ ROUTER in this script, msgpack as in
docs/query.md) answers every prefix query after 500 ms with a confirmed miss.

  slow      a router with ONE worker process (--processes 1 in its YAML) and
            kv_indexer_timeout_ms 2000: a chat request waits for the answer
            (>= 450 ms); meanwhile GET /health and GET /v1/models on the same
            process answer in < 200 ms, before the chat request ends; two
            chat requests sent together both end in about 500 ms (they wait
            side by side, not one after the other); /metrics counts the
            indexer lookups as found.
  cancel    three clients close their connection while their lookup waits;
            the answers that come later find no request, and the process
            serves on.
  timeout   a second router with kv_indexer_timeout_ms 100: the chat request
            is served after ~100 ms (< 400 ms) by the load fallback, and
            /metrics shows the lookup as unavailable, reason timeout — the
            answer that comes 400 ms later changes nothing.
Servers bind 127.0.0.1 on free ports; everything started is stopped on exit.
"""
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import msgpack  # noqa: E402  (Debian python3-msgpack)
import zmq  # noqa: E402  (Debian python3-zmq)

import sytest  # noqa: E402
from sytest import check, fail, free_port, request, wait_for  # noqa: E402

ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-rindexer.")
SHM = "/dev/shm/sy-test-rindexer-%d" % os.getpid()
DELAY = 0.5
procs = []
fleets = []
sytest.on_fail(lambda: sytest.print_dir_logs(T))


def log(msg):
    print(msg, flush=True)


class FakeStatebus(threading.Thread):
    """ROUTER on tcp://127.0.0.1:PORT: answers each query DELAY s after it came."""

    def __init__(self):
        super().__init__(daemon=True)
        self.port = free_port()
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind("tcp://127.0.0.1:%d" % self.port)
        self.queries = 0
        self.stop = False

    def run(self):
        held = []
        while not self.stop:
            if self.sock.poll(5):
                frames = self.sock.recv_multipart()
                q = msgpack.unpackb(frames[-1], raw=False)
                self.queries += 1
                reply = msgpack.packb({"v": 1, "id": q["id"], "status": "ok",
                                       "query_blocks": len(q["hashes"]), "matches": []})
                held.append((time.monotonic() + DELAY, frames[:-1] + [reply]))
            now = time.monotonic()
            for due in [h for h in held if h[0] <= now]:
                self.sock.send_multipart(due[1])
                held.remove(due)
        self.sock.close()
        self.ctx.term()


def start_router(name, timeout_ms, endpoint):
    port = free_port()
    sytest.start_router(ROUTER, T, name, port,
                        "model_id: m1\nstate: {shm_path: %s}\nworker_urls: [%s]\n"
                        "router: {host: 127.0.0.1, port: %d, processes: 1}\n"
                        "policy: {type: cache_aware, cache_prefix_provider: indexer,\n"
                        "         kv_indexer_endpoint: '%s', kv_indexer_timeout_ms: %d}\n"
                        % (SHM, URL, port, endpoint, timeout_ms), procs, timeout=20)
    return port


PROMPT = " ".join("word%d" % i for i in range(120))  # well over one 16-token block


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0, time.monotonic()


def chat(port, user="hello"):
    st, hd, body = request(port, "POST", "/v1/chat/completions",
                           {"model": "m1", "max_tokens": 2,
                            "messages": [{"role": "system", "content": PROMPT},
                                         {"role": "user", "content": user}]}, timeout=20)
    check(st == 200, "chat via %d: %d %s" % (port, st, body[:300]))
    return hd.get("x-switchyard-reason")


def connected(port):
    """Chat requests until one reaches the fake statebus: a query sent before
    the router's connection exists is unavailable (unreachable), at once."""
    def one():
        asked = fake.queries
        chat(port, "warm-up")
        return fake.queries > asked
    wait_for("a query reaching the fake statebus", one, timeout=10)


def lookups(port, outcome, reason):
    text = request(port, "GET", "/metrics")[2].decode()
    key = ('switchyard_cache_prefix_lookups_total{source="indexer",outcome="%s",reason="%s"}'
           % (outcome, reason))
    for line in text.splitlines():
        if line.startswith(key + " "):
            return float(line.rsplit(" ", 1)[1])
    fail("no %s on /metrics" % key)


fake = FakeStatebus()
fake.start()
try:
    d = os.path.join(T, "fleet")
    fleets.append(d)
    URL = sytest.fleet_one(FLEET, MOCK, d, "--model", "m1", "--block-size", "16",
                           "--load-interval-ms", "200")["url"]
    sbcfg = os.path.join(T, "statebus.yaml")
    with open(sbcfg, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\nworker_urls: [%s]\n" % (SHM, URL))
    procs.append(sytest.subprocess.Popen(
        [STATEBUS, "--config", sbcfg, "--heartbeat-interval-ms", "200"],
        stdout=open(os.path.join(T, "statebus.log"), "a"), stderr=sytest.subprocess.STDOUT))

    def kv_known():
        r = sytest.subprocess.run([SYCTL, "--shm", SHM, "--json", "workers"],
                                  capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            return False  # the region is not there yet
        ws = sytest.json.loads(r.stdout)["workers"]
        return ws and ws[0].get("kv_events", {}).get("block_size") == 16
    wait_for("the engine's KV facts", kv_known, timeout=20)

    endpoint = "tcp://127.0.0.1:%d" % fake.port
    S = start_router("slow", 2000, endpoint)

    # ---- slow: the loop keeps serving while a lookup waits -----------------
    connected(S)
    found0 = lookups(S, "found", "none")
    reason, took, _ = timed(lambda: chat(S, "first"))
    check(took >= DELAY - 0.05, "the first request waited for the answer (%.3f s)" % took)
    res = {}

    def slow():
        res["slow"] = timed(lambda: chat(S, "slow one"))
    th = threading.Thread(target=slow)
    th.start()
    time.sleep(0.1)
    (h_st, _, _), h_took, h_end = timed(lambda: request(S, "GET", "/health", timeout=5))
    (m_st, _, _), m_took, m_end = timed(lambda: request(S, "GET", "/v1/models", timeout=5))
    th.join(10)
    check("slow" in res, "the slow request ended")
    _, s_took, s_end = res["slow"]
    check(h_st == 200 and m_st == 200, "health %d, models %d" % (h_st, m_st))
    check(s_took >= DELAY - 0.05, "slow request took %.3f s (< %.2f)" % (s_took, DELAY - 0.05))
    check(h_took < 0.2 and m_took < 0.2,
          "the concurrent requests waited: /health %.3f s, /v1/models %.3f s" % (h_took, m_took))
    check(h_end < s_end and m_end < s_end, "the concurrent requests ended after the slow one")
    log("slow: chat %.0f ms while /health %.1f ms and /v1/models %.1f ms on the same process"
        % (s_took * 1000, h_took * 1000, m_took * 1000))

    both = {}

    def one(k):
        both[k] = timed(lambda: chat(S, "pair %d" % k))[1]
    ts = [threading.Thread(target=one, args=(k,)) for k in range(2)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    pair = time.monotonic() - t0
    check(len(both) == 2 and pair < 2 * DELAY - 0.1,
          "two lookups waited one after the other: %.3f s (%s)" % (pair, both))
    found = lookups(S, "found", "none") - found0
    check(found == 4, "indexer lookups found: %s, want 4" % found)
    check(lookups(S, "unavailable", "timeout") == 0, "no timeout with a 2 s limit")
    log("slow: two chat requests together in %.0f ms; indexer lookups found %d"
        % (pair * 1000, found))

    # ---- cancel: a client gone while its lookup waits -----------------------
    import json
    import socket
    body = json.dumps({"model": "m1", "max_tokens": 2,
                       "messages": [{"role": "user", "content": PROMPT}]}).encode()
    for _ in range(3):
        c = socket.create_connection(("127.0.0.1", S), timeout=5)
        c.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                  b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                  % (len(body), body))
        time.sleep(0.1)
        c.close()
    time.sleep(DELAY + 0.1)  # the answers come for requests that are gone
    check(request(S, "GET", "/health", timeout=5)[0] == 200, "router unhealthy after cancels")
    _, took, _ = timed(lambda: chat(S, "after cancels"))
    check(took >= DELAY - 0.05 and took < 3 * DELAY, "a request after cancels took %.3f s" % took)
    log("cancel: 3 clients gone while waiting; the process serves on (%.0f ms)" % (took * 1000))

    # ---- timeout: an answer after the limit is the unavailable miss ---------
    Q = start_router("fast", 100, endpoint)
    connected(Q)
    time.sleep(DELAY)  # the warm-up's late answer arrives and is dropped
    tmo0 = lookups(Q, "unavailable", "timeout")
    asked = fake.queries
    reason, took, _ = timed(lambda: chat(Q, "too late"))
    check(fake.queries == asked + 1, "the request asked the fake statebus")
    check(took < 0.4, "a 100 ms limit held the request %.3f s" % took)
    check(reason == "no_cache_candidate", "reason %s, want the load fallback" % reason)
    check(lookups(Q, "unavailable", "timeout") == tmo0 + 1, "timeout not counted on /metrics")
    time.sleep(DELAY)  # its late answer arrives and is dropped
    check(lookups(Q, "found", "none") == 0, "a late answer counted as found")
    log("timeout: served in %.0f ms by the load fallback; unavailable/timeout counted"
        % (took * 1000))
    log("router_indexer: ok")
finally:
    fake.stop = True
    sytest.stop_procs(procs)
    for d in fleets:
        sytest.subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    sytest.subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    sytest.subprocess.run(["rm", "-rf", T])
