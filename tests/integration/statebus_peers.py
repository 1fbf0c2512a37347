#!/usr/bin/python3
"""statebus_peers.py STATEBUS SYCTL [case...] — switchyard-statebus against
engines that die, restart, hang or misreport (Python fakes: http.server,
python3-zmq XPUB/ROUTER, python3-msgpack), asserted through `syctl --json`.

crash          An engine killed (-9, no END_SEQ) and restarted on the same
               ports publishes seq 0.. before the statebus's SUB reconnected
               (ZMQ reconnect backoff, slow joiner), so the seq-0 restart
               signal is lost. The SUB's monitor sees the peer go and come
               back: the rank is cleared (no false hits from the dead
               process), the stream starts over (cursor = first seq seen, no
               gap, no skip), peer_reconnects_total counts it, the rank is
               partial (no replay endpoint).
crash_replay   The same with a replay endpoint: the rank is rebuilt from seq
               0 (what the new process published before the reconnect is
               indexed), not partial; a replay buffer that no longer has seq
               0 leaves the rank partial and counts partial_rebuilds_total.
late_copy      Deterministic form of a crash_replay race: the restarted
               engine's replay answers seqs whose live copies reach the SUB
               only after the rebuild ended (two connections, no order
               between them). Those late copies are duplicates: not skipped,
               not untrusted; a seq repeated after them still is stale.
hol            One engine whose /server_info and /health hang does not delay
               another engine's discovery or health checks (concurrent HTTP).
facts          A negative block_size in /server_info is bad_facts (not
               subscribed, not indexed); without a configured model the
               worker takes served_model_name (else model_path) from
               /server_info; a configured model wins.
adopt          A worker's health failure count does not carry over to the
               next statebus (reset on adoption).
order          Block size per model goes to the first worker in registration
               order, not to the first /server_info answer (discovery is
               concurrent): A (block 4, listed first) answers only after B
               (block 8) was subscribed and indexed; A then takes the model
               over, B is rejected (unsubscribed, its blocks cleared).
Run with /usr/bin/python3 (Debian's python3-zmq and python3-msgpack).
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgpack
import zmq

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import fail, free_port, wait_for  # noqa: E402

STATEBUS, SYCTL = sys.argv[1:3]
CASES = sys.argv[3:] or ["crash", "crash_replay", "late_copy", "hol", "facts", "adopt", "order"]
SHM = "/dev/shm/sy-test-peers-%d" % os.getpid()
LOG = "/tmp/sy-test-peers-%d.log" % os.getpid()
END_SEQ = b"\xff" * 8
Z = zmq.Context.instance()
procs = []


@sytest.on_fail
def show_log():
    sytest.print_tail(LOG)


def sy(*args):
    out = subprocess.run([SYCTL, "--shm", SHM, "--json"] + list(args), capture_output=True,
                         text=True, timeout=10)
    try:
        return json.loads(out.stdout)
    except ValueError:  # region not created yet
        return {"matches": [], "workers": [], "streams": [], "counters": {}}


def http(body_fn, status_fn=lambda path: 200):
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            b = body_fn(self.path)
            self.send_response(status_fn(self.path))
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def log_message(self, *a):
            pass
    s = ThreadingHTTPServer(("127.0.0.1", 0), H)
    s.daemon_threads = True
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return "http://127.0.0.1:%d" % s.server_address[1]


def info(kv_port, replay_port=None, block_size=4, **top):
    kv = {"endpoint_host": "*", "endpoint_port_base": kv_port, "topic": "",
          "block_size": block_size, "dp_size": 1}
    if replay_port:
        kv["replay_port_base"] = replay_port
    d = {"dp_size": 1, "kv_events": kv}
    d.update(top)
    return json.dumps(d).encode()


def xpub(port):
    s = Z.socket(zmq.XPUB)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.SNDHWM, 0)
    s.bind("tcp://127.0.0.1:%d" % port)
    s.setsockopt(zmq.RCVTIMEO, 10000)
    return s


def wait_sub(pub):
    while True:  # skip unsubscriptions
        try:
            if pub.recv()[:1] == b"\x01":
                return
        except zmq.Again:
            fail("the statebus never subscribed")


def payload(hashes):
    return msgpack.packb([time.time(), [["BlockStored", hashes, None,
                                         list(range(4 * len(hashes))), 4, None, "GPU"]], 0])


class Replay:
    """A replay ROUTER (sglang-wire.md §3, 4-frame answers) over `buffer`."""

    def __init__(self, port):
        self.buffer = {}
        self.sock = Z.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind("tcp://127.0.0.1:%d" % port)
        self.stop = False
        self.th = threading.Thread(target=self.serve, daemon=True)
        self.th.start()

    def serve(self):
        while not self.stop:
            if not self.sock.poll(50):
                continue
            ident, _, start = self.sock.recv_multipart()
            first = struct.unpack(">q", start)[0]
            for seq in sorted(q for q in list(self.buffer) if q >= first):
                self.sock.send_multipart([ident, b"", b"", struct.pack(">q", seq), self.buffer[seq]])
            self.sock.send_multipart([ident, b"", b"", END_SEQ, b""])

    def close(self):
        self.stop = True
        self.th.join()
        self.sock.close()


def send(pub, seq, hashes, replay=None, publish=True):
    data = payload(hashes)
    if replay is not None:
        replay.buffer[seq] = data
    if publish:
        pub.send_multipart([b"", struct.pack(">q", seq), data])


def depth(hashes, url):
    m = sy("match", "--hashes", ",".join(map(str, hashes)))
    return max([x["depth"] for x in m.get("matches", []) if x["worker"] == url] or [0])


def stream(url):
    for s in sy("streams").get("streams", []):
        if s["worker"] == url:
            return s
    return None


def worker(url):
    for w in sy("workers").get("workers", []):
        if w["worker"] == url:
            return w
    return None


def start(urls, *extra):
    p = subprocess.Popen([STATEBUS, "--shm", SHM, "--log-level", "info"] + list(extra) +
                         ["--worker-urls"] + urls,
                         stdout=open(LOG, "a"), stderr=subprocess.STDOUT)
    procs.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p.returncode != 0:
        fail("statebus exit status %s after SIGTERM" % p.returncode)


def crash_restart(port, url, replay=None, before=(0, 1)):
    """Old process: seq 0..5 ([1,2,3] then [101..105]); killed; new process
    publishes `before` seqs ([7], [8], ...) while no SUB is connected, then
    the SUB reconnects and seqs 2..7 follow ([202..207])."""
    pub = xpub(port)
    wait_sub(pub)
    for seq in range(6):
        send(pub, seq, [1, 2, 3] if seq == 0 else [100 + seq])
    wait_for("old blocks indexed", lambda: depth([1, 2, 3], url) == 3)
    time.sleep(1.5)  # the statebus's reconnect backoff grows meanwhile
    pub.close()      # kill -9: no END_SEQ
    time.sleep(1.0)
    if replay is not None:
        replay.buffer.clear()
    pub = xpub(port)  # restarted engine, empty cache, seq from 0
    for i, seq in enumerate(before):
        send(pub, seq, [7 + i], replay)  # no subscriber yet: lost live
    wait_sub(pub)
    for seq in range(max(before) + 1, 8):
        send(pub, seq, [200 + seq], replay)
    return pub


def crash():
    port = free_port()
    url = http(lambda path: info(port))
    p = start([url])
    pub = crash_restart(port, url)
    wait_for("new process's blocks", lambda: depth([207], url) == 1)
    st = stream(url)
    if depth([1, 2, 3], url) != 0 or depth([101], url) != 0:
        fail("crash: blocks of the killed engine process still indexed; stream %s" % st)
    if (st["cursor"], st["gaps"], st["skipped"], st["untrusted"], st["partial"]) != (7, 0, 0, False, True):
        fail("crash: stream after the reconnect: %s" % st)
    ctr = sy("streams")["counters"]
    if ctr["switchyard_kv_event_peer_reconnects_total"] != 1:
        fail("crash: peer_reconnects_total = %s" % ctr["switchyard_kv_event_peer_reconnects_total"])
    pub.close()
    stop(p)


def crash_replay():
    # complete rebuild: the replay buffer still has seq 0
    port, rport = free_port(), free_port()
    url = http(lambda path: info(port, rport))
    rep = Replay(rport)
    p = start([url])
    pub = crash_restart(port, url, rep)
    wait_for("rebuilt from seq 0", lambda: depth([7], url) == 1 and depth([8], url) == 1)
    wait_for("live batches after the rebuild", lambda: depth([207], url) == 1)
    st = stream(url)
    if depth([1, 2, 3], url) != 0:
        fail("crash_replay: old blocks still indexed: %s" % st)
    if (st["cursor"], st["gaps"], st["skipped"], st["untrusted"], st["partial"], st["replaying"]) != \
            (7, 0, 0, False, False, False):
        fail("crash_replay: stream after the rebuild: %s" % st)
    ctr = sy("streams")["counters"]
    if ctr["switchyard_kv_event_partial_rebuilds_total"] != 0 or \
            ctr["switchyard_kv_event_peer_reconnects_total"] != 1:
        fail("crash_replay: counters %s" % ctr)
    # now the engine dies again; its replay buffer no longer holds seq 0
    time.sleep(1.5)
    pub.close()
    time.sleep(1.0)
    rep.buffer.clear()
    pub = xpub(port)
    for seq in range(3):
        send(pub, seq, [300 + seq], rep, publish=False)
    del rep.buffer[0]  # rolled out of the engine's buffer
    wait_sub(pub)
    for seq in range(3, 6):
        send(pub, seq, [300 + seq], rep)
    wait_for("second rebuild", lambda: depth([305], url) == 1)
    st = stream(url)
    if depth([7], url) != 0 or depth([301], url) != 1 or depth([300], url) != 0:
        fail("crash_replay: partial rebuild indexed the wrong blocks: %s" % st)
    if not st["partial"] or st["cursor"] != 5 or st["skipped"] != 0:
        fail("crash_replay: partial rebuild: stream %s" % st)
    ctr = sy("streams")["counters"]
    if ctr["switchyard_kv_event_partial_rebuilds_total"] != 1 or \
            ctr["switchyard_kv_event_peer_reconnects_total"] != 2:
        fail("crash_replay: counters after the partial rebuild %s" % ctr)
    pub.close()
    rep.close()
    stop(p)


def late_copy():
    port, rport = free_port(), free_port()
    url = http(lambda path: info(port, rport))
    rep = Replay(rport)
    p = start([url])
    pub = crash_restart(port, url, rep)
    wait_for("first rebuild", lambda: depth([207], url) == 1)
    pub.close()  # killed again
    time.sleep(1.0)
    rep.buffer.clear()
    pub = xpub(port)
    for seq in range(5):  # in the replay buffer, live copies not sent yet
        send(pub, seq, [400 + seq], rep, publish=False)
    wait_sub(pub)
    wait_for("rebuilt by replay", lambda: depth([404], url) == 1 and
             not stream(url)["replaying"])
    for seq in range(2, 7):  # late live copies of 2..4, then 5, 6
        send(pub, seq, [400 + seq], rep)
    wait_for("live after the late copies", lambda: depth([406], url) == 1)
    st = stream(url)
    if (st["cursor"], st["skipped"], st["untrusted"], st["partial"]) != (6, 0, False, False):
        fail("late_copy: late live copies of replayed seqs: %s" % st)
    send(pub, 5, [405])  # a real stale seq
    wait_for("stale seq counted", lambda: stream(url)["skipped"] == 1)
    if not stream(url)["untrusted"]:
        fail("late_copy: stale seq did not mark the stream untrusted: %s" % stream(url))
    pub.close()
    rep.close()
    stop(p)


def hol():
    hung = lambda path: (time.sleep(10), b"{}")[1]
    slow = [http(hung) for _ in range(2)]
    port = free_port()
    health = {"n": 0}

    def fast_body(path):
        if path == "/health":
            health["n"] += 1
            return b""
        return info(port)
    fast = http(fast_body)
    t0 = time.time()
    p = start(slow + [fast], "--health-interval-ms", "200")
    w = wait_for("fast engine discovered",
                 lambda: (worker(fast) or {}).get("kv_events", {}).get("block_size"), 12)
    took = time.time() - t0
    if took > 1.5:
        fail("hol: the fast engine was discovered after %.1f s, behind two hung "
             "/server_info (want < 1.5 s)" % took)
    n0 = health["n"]
    time.sleep(1.5)
    if health["n"] - n0 < 4:
        fail("hol: %d /health probes of the fast engine in 1.5 s at 200 ms, two hung "
             "engines alongside" % (health["n"] - n0))
    del w
    stop(p)


def facts():
    neg_port, named_port, cfg_port = free_port(), free_port(), free_port()
    neg = http(lambda path: info(neg_port, block_size=-16))
    named = http(lambda path: info(named_port, model_path="/models/qwen",
                                   served_model_name="qwen-chat"))
    pl_port = free_port()
    path_only = http(lambda path: info(pl_port, model_path="/models/llama",
                                       served_model_name=None))
    negpub = xpub(neg_port)
    p = start([neg, named, path_only])
    w = wait_for("negative block_size worker discovered",
                 lambda: (worker(neg) or {}).get("kv_events", {}).get("rejected") and worker(neg))
    if w["kv_events"]["rejected"] != "bad_facts":
        fail("facts: block_size -16: rejected = %r, want bad_facts" % w["kv_events"]["rejected"])
    time.sleep(0.3)
    st = stream(neg)
    if st is not None and st["subscribed"]:
        fail("facts: block_size -16 worker is subscribed: %s" % st)
    negpub.setsockopt(zmq.RCVTIMEO, 300)
    try:
        negpub.recv()
        fail("facts: the statebus subscribed to a bad_facts worker")
    except zmq.Again:
        pass
    wait_for("model from served_model_name", lambda: (worker(named) or {}).get("model") == "qwen-chat")
    wait_for("model from model_path", lambda: (worker(path_only) or {}).get("model") == "/models/llama")
    stop(p)
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    # a configured model wins
    p = start([named], "--model-id", "mine")
    wait_for("discovered", lambda: (worker(named) or {}).get("kv_events", {}).get("block_size"))
    if worker(named)["model"] != "mine":
        fail("facts: configured model_id lost to /server_info: %s" % worker(named)["model"])
    negpub.close()
    stop(p)


def adopt():
    port = free_port()
    bad = http(lambda path: b"" if path == "/health" else info(port),
               lambda path: 503 if path == "/health" else 200)
    p = start([bad], "--health-interval-ms", "100")
    wait_for("health failures counted", lambda: (worker(bad) or {}).get("health_failures", 0) >= 3)
    if worker(bad)["healthy"]:
        fail("adopt: a worker failing /health stays healthy")
    stop(p)
    if worker(bad)["health_failures"] < 3:
        fail("adopt: failures not kept in the table after the statebus stopped")
    p = start([bad], "--health-interval-ms", "60000")
    wait_for("the second statebus ready",
             lambda: (sy("header").get("statebus") or {}).get("pid") == p.pid)
    w = worker(bad)
    if w["health_failures"] != 0:
        fail("adopt: health_failures %d carried over from the previous statebus" % w["health_failures"])
    stop(p)


def order():
    a_port, b_port = free_port(), free_port()
    a_may_answer = threading.Event()
    a = http(lambda path: b"" if path == "/health" else
             (a_may_answer.wait(20), info(a_port, block_size=4))[1])
    b = http(lambda path: b"" if path == "/health" else info(b_port, block_size=8))
    apub, bpub = xpub(a_port), xpub(b_port)
    p = start([a, b], "--discovery-timeout-ms", "30000")
    wait_sub(bpub)
    send(bpub, 0, [901])
    wait_for("B indexed before A answered", lambda: depth([901], b) == 1)
    a_may_answer.set()
    wait_sub(apub)
    wb = wait_for("B rejected", lambda: (worker(b) or {}).get("kv_events", {}).get("rejected")
                  and worker(b))
    if wb["kv_events"]["rejected"] != "block_size_mismatch":
        fail("order: B rejected = %r, want block_size_mismatch" % wb["kv_events"]["rejected"])
    wa = worker(a)
    if wa["kv_events"]["rejected"] is not None or wa["kv_events"]["block_size"] != 4:
        fail("order: A (listed first) did not set the model's block size: %s" % wa["kv_events"])
    wait_for("B's blocks cleared", lambda: depth([901], b) == 0)
    wait_for("B unsubscribed", lambda: (stream(b) or {}).get("subscribed") is False)
    ctr = sy("streams")["counters"]
    if ctr["switchyard_worker_block_size_mismatch_total"] != 1:
        fail("order: block_size_mismatch_total %d, want 1"
             % ctr["switchyard_worker_block_size_mismatch_total"])
    send(apub, 0, [902])
    wait_for("A indexed", lambda: depth([902], a) == 1)
    apub.close()
    bpub.close()
    stop(p)


try:
    for name in CASES:
        {"crash": crash, "crash_replay": crash_replay, "late_copy": late_copy, "hol": hol, "facts": facts,
         "adopt": adopt, "order": order}[name]()
        procs.clear()
        subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    # Under ASan/UBSan (suite 'sanitize'): any report, leaks at exit included.
    text = open(LOG, errors="replace").read()
    if "Sanitizer" in text or "runtime error" in text:
        fail("sanitizer report in the statebus log")
    print("ok")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    for f in (SHM, SHM + ".ctl", LOG):
        try:
            os.unlink(f)
        except OSError:
            pass
