#!/usr/bin/python3
"""router_predict_modes.py ROUTER STATEBUS MOCK SYCTL — predicted cache state
with KV events switched off by configuration and with KV events that arrive
late, against mock engines that publish KV events.

  off      statebus `--kv-events off` over 3 engines that do publish KV events:
           no subscription, every engine is `predicted` in `syctl workers` and
           in the router's /metrics (switchyard_worker_cache_signal); 4
           prefixes × 2 turns: each second turn goes to its first turn's
           engine as cache_candidate; the prefixes use at least 2 engines.
  delayed  3 engines publishing each KV-event batch 1 s late
           (--kv-event-delay-ms 1000): a burst of 16 concurrent requests on a
           new prefix lands on one engine (the prediction of the first pick
           covers the window); the late BlockStored then confirms it.
  lifetime predictions never outlive their engine: the burst engine
           restarted → its predicted blocks are gone; an engine holding a
           prediction (syctl predict) removed → nothing of it is matched, and
           added again (a new generation) → it holds no predicted block.
Everything started is stopped on exit."""
import json
import os
import subprocess
import sys
import socket
import tempfile
import threading
import time

import zmq

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, request  # noqa: E402

ROUTER, STATEBUS, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-rpmodes.")
procs = []
shms = []
sytest.on_fail(lambda: sytest.print_dir_logs(T))


def start_mock(port, kv_port, *extra):
    p = subprocess.Popen([MOCK, "--host", "127.0.0.1", "--port", str(port), "--block-size", "16",
                          "--served-model-name", "m1", "--kv-port", str(kv_port)] + list(extra),
                         stdout=open(os.path.join(T, "mock-%d.log" % port), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    return p


def fleet(tag, mock_extra, sb_flags, processes):
    """3 mocks, a statebus, a cache_aware router → (urls, shm, router port,
    {url: (mock Popen, port, kv port)})."""
    shm = "/dev/shm/sy-test-rpm-%s-%d" % (tag, os.getpid())
    shms.append(shm)
    base = sytest.free_ports(6)
    ports = [base + k for k in range(6)]
    mocks = {}
    for i in range(3):
        port, kv = ports[2 * i], ports[2 * i + 1]
        url = "http://127.0.0.1:%d" % port
        mocks[url] = (start_mock(port, kv, *mock_extra), port, kv)
    urls = sorted(mocks)
    procs.append(sytest.start_statebus(STATEBUS, shm, urls,
                                       open(os.path.join(T, "statebus-%s.log" % tag), "w"),
                                       *sb_flags))
    rport = sytest.free_port()
    return urls, shm, rport, mocks


def workers(shm):
    return {w["worker"]: w for w in sytest.syctl_json(SYCTL, shm, "workers")["workers"]}


def start_router(tag, shm, urls, rport, processes):
    sytest.start_router(ROUTER, T, "router-" + tag, rport, """
model_id: m1
state: {shm_path: %s}
statebus: {control_endpoint: "ipc://%s.ctl"}
workers: [%s]
router: {host: 127.0.0.1, port: %d, processes: %d}
policy: {type: cache_aware}
""" % (shm, shm, ", ".join("{url: %s}" % u for u in urls), rport, processes), procs)


def chat(rport, text):
    st, h, body = request(rport, "POST", "/v1/chat/completions", {
        "model": "m1", "max_tokens": 2, "messages": [{"role": "user", "content": text}]})
    check(st == 200, "status %d %s" % (st, body[:200]))
    return h.get("x-switchyard-worker"), h.get("x-switchyard-reason")


def prefix(k, words=400):
    return ("prefix %d " % k) + " ".join("w%d_%d" % (k, i) for i in range(words))


def part_off():
    urls, shm, rport, _ = fleet("off", ["--decode-us-per-token", "100000"],
                                ["--kv-events", "off"], 2)
    sytest.wait_for("3 engines discovered, KV events off", lambda: os.path.exists(shm) and (
        lambda ws: len(ws) == 3 and all(w["healthy"] and w["cache_signal"] == "predicted"
                                        for w in ws.values()))(workers(shm)), timeout=20)
    for w in workers(shm).values():
        check(w["kv_events"]["has_cache_signal"] is False, "subscribed to %s" % w)
    start_router("off", shm, urls, rport, 2)
    st, _, body = request(rport, "GET", "/metrics")
    text = body.decode()
    for u in urls:
        line = ('switchyard_worker_cache_signal{worker_url="%s",model_id="m1",mode="plain",'
                'state="predicted"} 1' % u)
        check(line in text, "/metrics lacks %s" % line)

    def blocks_of(url):
        return workers(shm)[url]["predicted"]["blocks"]
    # first turns together (each engine answers in 200 ms): the load fallback
    # sees the in-flight ones, so distinct prefixes spread
    first = {}
    ths = [threading.Thread(target=lambda k=k: first.__setitem__(k, chat(rport, prefix(k) +
                                                                        " turn 0")[0]))
           for k in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(30)
    check(len(first) == 4, "first turns answered: %s" % first)
    # two router processes: the other one sees a prediction once the
    # statebus drained it (every prediction_drain_ms, 2)
    sytest.wait_for("first turns predicted", lambda: all(
        blocks_of(u) > 0 for u in set(first.values())), timeout=5)
    for k in range(4):
        w1, r1 = chat(rport, prefix(k) + " turn 1")
        check(w1 == first[k] and r1 == "cache_candidate",
              "prefix %d turn 1 → %s (%s), first turn → %s" % (k, w1, r1, first[k]))
    check(len(set(first.values())) >= 2, "4 prefixes all on one engine: %s" % first)
    log = open(os.path.join(T, "statebus-off.log")).read()
    check("KV events off (statebus.kv_events)" in log, "no 'KV events off' line in the log")
    print("off: 4 prefixes stick, %d engines used" % len(set(first.values())))


def part_delayed():
    urls, shm, rport, mocks = fleet("delayed", ["--kv-event-delay-ms", "1000"], [], 1)
    sytest.wait_for("3 engines discovered with KV events", lambda: os.path.exists(shm) and (
        lambda ws: len(ws) == 3 and all(w["healthy"] and w["cache_signal"] == "events"
                                        for w in ws.values()))(workers(shm)), timeout=20)
    start_router("delayed", shm, urls, rport, 1)
    text = prefix(99, 600) + " burst"
    # 16 connections opened first, then the 16 requests written back to back
    # (microseconds apart): the router reads them in one loop turn, faster
    # than the statebus drains the prediction ring
    body = json.dumps({"model": "m1", "max_tokens": 2,
                       "messages": [{"role": "user", "content": text}]}).encode()
    raw = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
           b"\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    conns = [socket.create_connection(("127.0.0.1", rport), timeout=30) for _ in range(16)]
    t0 = time.monotonic()
    for c in conns:
        c.sendall(raw)
    got = []
    for c in conns:
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        c.close()
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower().split("\r\n")
        check(head[0].startswith("http/1.1 200"), "burst answer: %s" % head[0])
        hs = dict(x.split(": ", 1) for x in head[1:] if ": " in x)
        got.append((hs.get("x-switchyard-worker"), hs.get("x-switchyard-reason")))
    took = time.monotonic() - t0
    check(len(got) == 16, "%d of 16 burst requests answered" % len(got))
    engines = set(w for w, _ in got)
    check(len(engines) == 1, "burst of 16 spread over %s: %s" % (engines, got))
    hot = engines.pop()
    hits = sum(1 for _, r in got if r == "cache_candidate")
    check(hits == 15, "burst: %d cache_candidate of 16, want 15" % hits)
    # the mock holds its KV events for 1 s: read early enough, nothing is
    # confirmed yet (checked only when this read came in time)
    early = workers(shm)[hot]["predicted"]
    if time.monotonic() - t0 < 0.9:
        check(early["confirmed"] == 0 and early["blocks"] > 0,
              "events not delayed: %s %.2f s after the burst" % (early, time.monotonic() - t0))
    sytest.wait_for("late BlockStored confirms the prediction",
                    lambda: workers(shm)[hot]["predicted"]["confirmed"] > 0, timeout=10)
    print("delayed: burst of 16 on %s in %.2f s, 15 cache_candidate" % (hot, took))
    return urls, shm, mocks, hot


def part_lifetime(urls, shm, mocks, hot):
    # restart the burst engine: its predictions go with it
    p, port, kv = mocks[hot]

    def owned(url):
        idx = sytest.syctl_json(SYCTL, shm, "index")
        return sum(o["blocks"] for o in idx.get("workers", []) if o.get("worker") == url)
    check(owned(hot) > 0, "the burst engine owns no block before its restart")
    p.kill()
    p.wait()
    sytest.wait_for("burst engine seen down", lambda: not workers(shm)[hot]["healthy"], timeout=10)
    mocks[hot] = (start_mock(port, kv, "--kv-event-delay-ms", "1000"), port, kv)
    sytest.wait_for("restarted engine without predicted blocks", lambda: (
        lambda w: w["healthy"] and w["predicted"]["blocks"] == 0)(workers(shm)[hot]), timeout=15)
    check(owned(hot) == 0, "restarted engine still owns %d blocks" % owned(hot))

    # remove an engine holding a prediction: nothing of it is matched
    other = next(u for u in urls if u != hot)
    hashes = "9001,9002,9003"
    subprocess.run([SYCTL, "--shm", shm, "predict", "--worker", other, "--hashes", hashes],
                   check=True, stdout=subprocess.DEVNULL)

    def matched():
        m = sytest.syctl_json(SYCTL, shm, "match", "--hashes", hashes)
        return [x for x in m.get("matches", []) if x.get("worker") == other]
    sytest.wait_for("prediction on %s" % other, lambda: matched(), timeout=5)
    ctx = zmq.Context()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("ipc://%s.ctl" % shm)

    def control(req):
        s.send(json.dumps(req).encode())
        check(s.poll(5000) != 0, "control socket did not answer %r" % req)
        return json.loads(s.recv())
    check(control({"op": "remove_worker", "url": other})["ok"], "remove_worker failed")
    sytest.wait_for("removed engine unmatched", lambda: not matched(), timeout=5)
    check(other not in workers(shm), "removed engine still listed")
    rep = control({"op": "add_worker", "url": other})
    check(rep["ok"], "add_worker: %s" % rep)
    sytest.wait_for("engine back", lambda: other in workers(shm) and
                    workers(shm)[other]["healthy"], timeout=10)
    check(workers(shm)[other]["predicted"]["blocks"] == 0, workers(shm)[other])
    check(not matched(), "re-added engine matches the old prediction")
    s.close()
    ctx.term()
    print("lifetime: restart and removal drop an engine's predictions")


def main():
    part_off()
    urls, shm, mocks, hot = part_delayed()
    part_lifetime(urls, shm, mocks, hot)
    print("router_predict_modes: 3 passed, 0 failed")


def cleanup(ok):
    sytest.stop_procs(procs)
    for shm in shms:
        sytest.unlink_quiet(shm, shm + ".ctl")
    if ok:
        import shutil
        shutil.rmtree(T, ignore_errors=True)


sys.exit(0 if sytest.run_main(main, cleanup) else 1)
