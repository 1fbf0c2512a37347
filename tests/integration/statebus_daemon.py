#!/usr/bin/python3
"""statebus_daemon.py STATEBUS SYCTL — switchyard-statebus against
fake SGLang engines written independently of its decoder.

Each fake engine is Python only: http.server for /server_info and /health,
ZeroMQ XPUB sockets (wire-compatible with the engine's PUB; XPUB tells us when
the statebus's subscription arrived, so nothing is lost to the slow-joiner
window) for KV events and LoadStat, msgpack from Debian's python3-msgpack.
Payloads follow sglang-wire.md §2, §4, §5, §12 in both event encodings.
Assertions read the region through `syctl --json` (workers, load, streams,
match, header); every wait
polls for a state with a deadline, never sleeps for a fixed time and hopes.
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
from sytest import fail, free_port, free_ports  # noqa: E402

STATEBUS, SYCTL = sys.argv[1:3]
SHM = "/dev/shm/sy-test-sbd-%d" % os.getpid()
CTL = "ipc://%s.ctl" % SHM
LOG = "/tmp/sy-test-sbd-%d.log" % os.getpid()
ZCTX = zmq.Context.instance()
END_SEQ = b"\xff" * 8
procs = []


class Engine:
    """A fake SGLang engine: HTTP + KV XPUB per rank + LoadStat XPUB."""

    def __init__(self, name, block_size=4, dp=1, kv=True, load=True, spec=None, replay=False):
        self.name = name
        self.http_port = free_port()
        self.kv_base = free_ports(dp)
        self.load_base = free_ports(dp) if load else None
        self.health = 200
        info = {"model_path": "m", "disaggregation_mode": "null", "dp_size": dp}
        if spec:
            info["speculative_algorithm"] = spec
        if kv:
            info["kv_events"] = {"publisher": "zmq", "endpoint_host": "*",
                                 "endpoint_port_base": self.kv_base, "topic": "",
                                 "block_size": block_size, "dp_size": dp}
            if load:
                info["kv_events"]["load_endpoint_port_base"] = self.load_base
                info["kv_events"]["load_topic"] = "load"
        self.info = info
        self.buffer = {}  # seq -> payload bytes, answered by the replay ROUTER
        if replay:
            self.replay_port = free_port()
            info["kv_events"]["replay_port_base"] = self.replay_port
            self.router = ZCTX.socket(zmq.ROUTER)
            self.router.setsockopt(zmq.LINGER, 0)
            self.router.bind("tcp://127.0.0.1:%d" % self.replay_port)
            threading.Thread(target=self.serve_replay, daemon=True).start()
        self.kv = []
        self.load = []
        for r in range(dp):
            s = ZCTX.socket(zmq.XPUB)
            s.setsockopt(zmq.LINGER, 0)
            s.bind("tcp://127.0.0.1:%d" % (self.kv_base + r))
            self.kv.append(s)
            if load:
                t = ZCTX.socket(zmq.XPUB)
                t.setsockopt(zmq.LINGER, 0)
                t.bind("tcp://127.0.0.1:%d" % (self.load_base + r))
                self.load.append(t)
        engine = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/server_info":
                    body, code = json.dumps(engine.info).encode(), 200
                elif self.path == "/health":
                    body, code = b"", engine.health
                else:
                    body, code = b"not found", 404
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.http_port), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.http_port

    def serve_replay(self):
        """sglang-wire.md §3, newer 4-frame form: ["", topic, seq, payload]... END_SEQ."""
        while True:
            ident, delim, start = self.router.recv_multipart()
            first = struct.unpack(">q", start)[0]
            for seq in sorted(q for q in self.buffer if q >= first):
                self.router.send_multipart([ident, b"", b"", struct.pack(">q", seq), self.buffer[seq]])
            self.router.send_multipart([ident, b"", b"", END_SEQ, b""])

    def wait_subscribed(self, sock, timeout=10):
        deadline = time.monotonic() + timeout
        while True:  # skip unsubscriptions of an earlier statebus
            left = deadline - time.monotonic()
            if left <= 0 or sock.poll(int(left * 1000)) == 0:
                fail("%s: the statebus never subscribed" % self.name)
            if sock.recv()[:1] == b"\x01":
                return

    def send_kv(self, seq, payload, rank=0, raw=False, publish=True):
        data = payload if raw else msgpack.packb(payload, use_bin_type=True)
        seq8 = seq if isinstance(seq, bytes) else struct.pack(">q", seq)
        if isinstance(seq, int):
            self.buffer[seq] = data
        if not publish:  # lost on the live stream (PUB HWM), kept for replay
            return
        self.kv[rank].send_multipart([b"", seq8, data])

    def send_load(self, fields, rank=0, seq=0):
        self.load[rank].send_multipart([b"load", struct.pack(">q", seq),
                                        msgpack.packb(fields)])


def syctl(*args):
    return sytest.syctl_json(SYCTL, SHM, *args)


def depths(hashes):
    m = syctl("match", "--hashes", ",".join(str(h) for h in hashes))
    assert m["blocks"] == len(hashes), m
    return {(x["worker"], x["dp_rank"]): x["depth"] for x in m["matches"]}


def wait_for(what, fn, timeout=10.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (KeyError, IndexError, TypeError):
            pass
        time.sleep(0.05)
    fail("timed out waiting for %s (last: %r)" % (what, last))


def workers():
    return {w["worker"]: w for w in syctl("workers")["workers"]}


def stream(url, rank=0):
    for s in syctl("streams")["streams"]:
        if s["worker"] == url and s["dp_rank"] == rank:
            return s
    return None


def counters():
    return syctl("streams")["counters"]


def start_statebus(urls, log):
    p = subprocess.Popen([STATEBUS, "--shm", SHM, "--log-level", "debug",
                          "--control-endpoint", CTL, "--health-interval-ms", "100",
                          "--discovery-retry-ms", "200", "--worker-urls"] + urls,
                         stdout=log, stderr=log)
    procs.append(p)
    return p


def restart_statebus(urls, log, a, e):
    """Starts the statebus again; returns once it is live and subscribed to
    A and E again."""
    for sock in (a.kv[0], e.kv[0]):
        # every subscription reported, even one that overlaps the old
        # statebus's (not yet dropped); what is queued is from before
        sock.setsockopt(zmq.XPUB_VERBOSE, 1)
        while sock.poll(0):
            sock.recv()
    p = start_statebus(urls, log)
    a.wait_subscribed(a.kv[0])
    e.wait_subscribed(e.kv[0])
    wait_for("statebus live", lambda: syctl("header")["statebus"]["live"])
    return p


def control(req):
    s = ZCTX.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(CTL)
    s.send(json.dumps(req).encode())
    if s.poll(5000) == 0:
        fail("control socket did not answer %r" % req)
    rep = json.loads(s.recv())
    s.close()
    return rep


def main():
    a = Engine("A", block_size=4, spec="eagle3")   # indexed, bigram
    b = Engine("B", block_size=8)                  # same model, other block size
    c = Engine("C", kv=False, load=False)          # no kv_events block
    log = open(LOG, "wb")
    sb = start_statebus([a.url, b.url, c.url], log)

    # ---- discovery ----------------------------------------------------------
    a.wait_subscribed(a.kv[0])
    a.wait_subscribed(a.load[0])
    w = wait_for("discovery of A, B, C", lambda: (lambda ws: ws if
                 ws[a.url]["kv_events"]["endpoint_port_base"] == a.kv_base and
                 ws[b.url]["kv_events"]["rejected"] == "block_size_mismatch" and
                 ws[c.url]["kv_events"]["has_cache_signal"] is False and
                 ws[c.url]["health_checked_age_ms"] is not None else None)(workers()))
    wa = w[a.url]["kv_events"]
    assert wa["block_size"] == 4 and wa["bigram"] is True and wa["endpoint_host"] == "127.0.0.1", wa
    assert wa["load_endpoint_port_base"] == a.load_base and wa["rejected"] is None, wa
    assert w[b.url]["kv_events"]["block_size"] == 8, w[b.url]
    ctr = counters()
    assert ctr["switchyard_worker_block_size_mismatch_total"] == 1, ctr
    assert ctr["switchyard_worker_no_cache_signal_total"] >= 1, ctr
    assert stream(b.url)["subscribed"] is False and stream(a.url)["subscribed"] is True

    # ---- both event encodings ------------------------------------------------
    a.send_kv(0, [time.time(), [["BlockStored", [1, 2, 3, 4], None, list(range(16)), 4, None, "GPU"]], 0])
    a.send_kv(1, [time.time(), [{"type": "BlockStored", "block_hashes": [5], "parent_block_hash": 4,
                                 "token_ids": [[1, 2], [2, 3]], "block_size": 4, "lora_id": None,
                                 "medium": "CPU_PINNED", "cache_salt": None}], 0])
    wait_for("chain 1..5 indexed", lambda: depths([1, 2, 3, 4, 5]).get((a.url, 0)) == 5)

    # ---- a malformed batch is counted and the stream continues --------------
    a.send_kv(2, b"\xc1not msgpack", raw=True)
    a.kv[0].send_multipart([b"", b"\x00\x01"])  # bad frames: 2 parts, short seq
    a.send_kv(3, [time.time(), [{"type": "BlockRemoved", "block_hashes": [4], "medium": "GPU"},
                                ["BlockTeleported", [1]]], 0])
    wait_for("remove of block 4 (GPU)", lambda: depths([1, 2, 3, 4, 5]).get((a.url, 0)) == 3)
    s = stream(a.url)
    assert s["cursor"] == 3 and s["decode_failures"] == 3, s  # payload, frames, unknown tag
    assert s["gaps"] == 0 and s["untrusted"] is False, s

    # ---- gap, stale seq -------------------------------------------------------
    a.send_kv(6, [time.time(), [["BlockStored", [9], None, [1, 2, 3, 4], 4, None]], 0])
    a.send_kv(5, [time.time(), [["BlockStored", [10], None, [1, 2, 3, 4], 4, None]], 0])
    a.send_kv(7, [time.time(), [["BlockStored", [11], 9, [1, 2, 3, 4], 4, None]], 0])
    s = wait_for("seq 7", lambda: (lambda x: x if x["cursor"] == 7 else None)(stream(a.url)))
    assert (s["gaps"], s["missing"], s["skipped"], s["untrusted"]) == (1, 2, 1, True), s
    assert depths([9, 11]).get((a.url, 0)) == 2 and depths([10]) == {}, "stale seq applied"

    # ---- LoadStat: V3 twice → derived throughput -----------------------------
    a.send_load(["LoadStat", 3, 2, 1000, 8000, 0, 512, 1200, 64, 10000, 2000000])
    a.send_load(["LoadStat", 3, 2, 1000, 8000, 0, 512, 1200, 64, 20000, 3000000])
    ld = wait_for("A's load", lambda: (lambda x: x if x.get("prefill_tokens_per_s") else None)(
        {l["worker"]: l for l in syctl("load")["workers"]}[a.url]))
    assert ld["fresh"] and ld["native"], ld
    assert (ld["num_running_reqs"], ld["num_waiting_reqs"], ld["num_used_tokens"],
            ld["max_total_num_tokens"]) == (3, 2, 1000, 8000), ld
    assert abs(ld["prefill_tokens_per_s"] - 10000.0) < 1e-3, ld
    a.send_load(["LoadStat", 1, 2, 3])                        # malformed: 3 counts
    a.send_load(["LoadStat", 4, 0, 10, 8000, 0, 1, 2])        # 8 elements: basic + counted
    ld = wait_for("basic LoadStat", lambda: (lambda x: x if x["num_running_reqs"] == 4 else None)(
        {l["worker"]: l for l in syctl("load")["workers"]}[a.url]))
    assert ld["native"] is False, ld
    ctr = counters()
    assert ctr["switchyard_load_decode_failures_total"] == 1, ctr
    assert ctr["switchyard_load_partial_v3_total"] == 1, ctr

    # ---- publisher reset (END_SEQ), then a fresh stream ----------------------
    a.kv[0].send_multipart([b"", END_SEQ, b""])
    s = wait_for("reset", lambda: (lambda x: x if x["resets"] == 1 else None)(stream(a.url)))
    assert s["untrusted"] is False and s["cursor"] is None, s
    wait_for("rank cleared", lambda: depths([1, 2, 3]) == {} and depths([9, 11]) == {})
    a.send_kv(1, [time.time(), [["BlockStored", [1, 2], None, list(range(8)), 4, None]], 0])
    wait_for("post-reset store", lambda: depths([1, 2, 3]).get((a.url, 0)) == 2)
    # seq 0 behind the cursor: engine restarted in place → rank cleared, new stream applied
    a.send_kv(0, [time.time(), [["BlockStored", [21], None, [1, 2, 3, 4], 4, None]], 0])
    wait_for("restart", lambda: depths([1]) == {} and depths([21]).get((a.url, 0)) == 1)
    assert stream(a.url)["resets"] == 2
    # AllBlocksCleared clears the rank
    a.send_kv(1, [time.time(), [{"type": "AllBlocksCleared"}], 0])
    wait_for("AllBlocksCleared", lambda: depths([21]) == {})

    # ---- health: an unhealthy worker stays listed -----------------------------
    c.health = 503
    wait_for("C unhealthy", lambda: workers()[c.url]["healthy"] is False)
    assert workers()[c.url]["state"] == "active"
    c.health = 200
    wait_for("C healthy again", lambda: workers()[c.url]["healthy"] is True)

    # ---- control socket --------------------------------------------------------
    st = control({"op": "status"})
    assert st["ok"] and st["pid"] == sb.pid and len(st["workers"]) == 3, st
    d = Engine("D", block_size=4)
    rep = control({"op": "add_worker", "url": d.url + "/"})
    assert rep["ok"] and rep["worker"] == d.url, rep
    d.wait_subscribed(d.kv[0])
    d.send_kv(0, [1.0, [["BlockStored", [31, 32], None, list(range(8)), 4, None]], 0])
    wait_for("D indexed", lambda: depths([31, 32]).get((d.url, 0)) == 2)
    assert control({"op": "remove_worker", "url": d.url})["ok"]
    wait_for("D removed", lambda: d.url not in workers() and depths([31, 32]) == {})
    assert control({"op": "frobnicate"})["ok"] is False

    # ---- a model is plain or prefill + decode: a prefill engine of model m
    # (served plain by A, B, C) is refused at registration, logged and counted
    p = Engine("P", block_size=4)
    p.info["disaggregation_mode"] = "prefill"
    assert control({"op": "add_worker", "url": p.url})["ok"]
    wait_for("P refused", lambda: counters()["switchyard_worker_role_conflicts_total"] == 1)
    wait_for("P not in the table", lambda: p.url not in workers())
    assert a.url in workers() and b.url in workers(), workers()

    # ---- a forward gap filled from the replay ROUTER --------------------------
    e = Engine("E", block_size=4, replay=True)
    assert control({"op": "add_worker", "url": e.url})["ok"]
    e.wait_subscribed(e.kv[0])
    wait_for("E discovered", lambda: workers()[e.url]["kv_events"]["replay_port_base"] == e.replay_port)
    e.send_kv(0, [1.0, [["BlockStored", [61], None, [1, 2, 3, 4], 4, None]], 0])
    e.send_kv(1, [1.0, [["BlockStored", [62], 61, [1, 2, 3, 4], 4, None]], 0], publish=False)
    e.send_kv(2, [1.0, [{"type": "BlockStored", "block_hashes": [63], "parent_block_hash": 62,
                         "token_ids": [1, 2, 3, 4], "block_size": 4}], 0], publish=False)
    e.send_kv(3, [1.0, [["BlockStored", [64], 63, [1, 2, 3, 4], 4, None]], 0])
    wait_for("replayed chain", lambda: depths([61, 62, 63, 64]).get((e.url, 0)) == 4)
    s = stream(e.url)
    assert (s["cursor"], s["gaps"], s["missing"], s["untrusted"], s["replaying"]) == (3, 0, 0, False, False), s
    ctr = counters()
    assert ctr["switchyard_kv_event_replay_requests_total"] == 1, ctr
    assert ctr["switchyard_kv_event_replayed_batches_total"] == 2, ctr

    # ---- a second statebus on the same region refuses to start ---------------
    out = subprocess.run([STATEBUS, "--shm", SHM, "--control-endpoint", CTL + "2"],
                         capture_output=True, text=True, timeout=10)
    if out.returncode == 0 or "refusing" not in out.stderr:
        fail("second statebus: rc %d, %s" % (out.returncode, out.stderr))

    # ---- restart (SIGTERM): the index is kept, streams resume at their cursor --
    a.send_kv(2, [1.0, [["BlockStored", [41, 42], None, list(range(8)), 4, None]], 0])
    wait_for("A indexed before restart", lambda: depths([41, 42]).get((a.url, 0)) == 2)
    inc = syctl("header")["index_incarnation"]
    s0 = stream(a.url)
    sb.send_signal(signal.SIGTERM)
    if sb.wait(timeout=10) != 0:
        fail("statebus exit status %d on SIGTERM" % sb.returncode)
    h = syctl("header")
    assert h["statebus"]["pid"] is None, h
    assert depths([41, 42]).get((a.url, 0)) == 2, "index lost while the statebus is down"
    sb = restart_statebus([a.url, b.url, c.url], log, a, e)
    assert syctl("header")["index_incarnation"] == inc, "index rebuilt on restart"
    assert depths([41, 42]).get((a.url, 0)) == 2, "index lost on restart"
    w = workers()
    assert sorted(w) == sorted([a.url, b.url, c.url, e.url]), w   # same slots adopted
    a.send_kv(3, [1.0, [["BlockStored", [51], None, [1, 2, 3, 4], 4, None]], 0])
    wait_for("A indexed after the restart", lambda: depths([51]).get((a.url, 0)) == 1)
    s = stream(a.url)
    assert (s["cursor"], s["gaps"], s["untrusted"]) == (3, s0["gaps"], False), s   # no gap
    ctr = counters()
    assert ctr["switchyard_statebus_index_kept_total"] == 1, ctr
    assert ctr["switchyard_kv_event_streams_resumed_total"] >= 2, ctr   # A and E

    # ---- kill -9: the batches published meanwhile come back by replay ---------
    replayed = ctr["switchyard_kv_event_replayed_batches_total"]
    sb.send_signal(signal.SIGKILL)
    sb.wait(timeout=10)
    e.send_kv(4, [1.0, [["BlockStored", [65], 64, [1, 2, 3, 4], 4, None]], 0], publish=False)
    sb = restart_statebus([a.url, b.url, c.url], log, a, e)
    e.send_kv(5, [1.0, [["BlockStored", [66], 65, [1, 2, 3, 4], 4, None]], 0])
    wait_for("E's gap filled", lambda: depths([61, 62, 63, 64, 65, 66]).get((e.url, 0)) == 6)
    s = stream(e.url)
    assert (s["cursor"], s["gaps"], s["missing"], s["untrusted"]) == (5, 0, 0, False), s
    assert s["batches"] == 6, s   # seqs 0..5, each applied once
    ctr = counters()
    assert ctr["switchyard_kv_event_replayed_batches_total"] == replayed + 1, ctr
    assert ctr["switchyard_kv_event_resume_rebuilds_total"] == 0, ctr

    # ---- a gap the engine's replay buffer no longer holds: rank rebuilt -------
    sb.send_signal(signal.SIGKILL)
    sb.wait(timeout=10)
    e.send_kv(6, [1.0, [["BlockRemoved", [66]]], 0], publish=False)
    e.send_kv(7, [1.0, [["BlockStored", [67], 65, [1, 2, 3, 4], 4, None]], 0], publish=False)
    e.buffer = {7: e.buffer[7]}   # the buffer moved on: seqs 0..6 are gone
    sb = restart_statebus([a.url, b.url, c.url], log, a, e)
    e.send_kv(8, [1.0, [["BlockStored", [68], 67, [1, 2, 3, 4], 4, None]], 0])
    wait_for("E rebuilt", lambda: counters()["switchyard_kv_event_resume_rebuilds_total"] == 1
             and stream(e.url)["cursor"] == 8 and not stream(e.url)["replaying"])
    assert depths([61, 62]) == {}, "blocks of a gap that could not be filled still indexed"
    assert stream(e.url)["partial"], stream(e.url)   # rebuilt from seq 7, not 0

    # ---- the publisher restarted while the statebus was down ------------------
    sb.send_signal(signal.SIGKILL)
    sb.wait(timeout=10)
    e.buffer = {}
    e.send_kv(0, [1.0, [["BlockStored", [71], None, [1, 2, 3, 4], 4, None]], 0], publish=False)
    sb = restart_statebus([a.url, b.url, c.url], log, a, e)
    e.send_kv(1, [1.0, [["BlockStored", [72], 71, [1, 2, 3, 4], 4, None]], 0])
    wait_for("E rebuilt from the new publisher",
             lambda: depths([71, 72]).get((e.url, 0)) == 2)
    assert depths([68]) == {} and stream(e.url)["cursor"] == 1, "old publisher's blocks kept"
    s = stream(e.url)
    assert (s["cursor"], s["partial"], s["untrusted"]) == (1, False, False), s
    assert counters()["switchyard_kv_event_resume_rebuilds_total"] == 2
    assert syctl("header")["index_incarnation"] == inc, "index rebuilt on a restart"
    assert control({"op": "remove_worker", "url": e.url})["ok"]

    sb.send_signal(signal.SIGTERM)
    if sb.wait(timeout=10) != 0:
        fail("statebus exit status %d" % sb.returncode)
    print("statebus_daemon: 1 passed, 0 failed")


if __name__ == "__main__":
    def cleanup(ok):
        sytest.kill_procs(procs)
        sytest.unlink_quiet(SHM)
        if not ok and os.path.exists(LOG):
            sys.stderr.write("---- statebus log (last 60 lines) ----\n")
            sys.stderr.write("".join(open(LOG, errors="replace").readlines()[-60:]))
        if os.path.exists(LOG):
            os.unlink(LOG)
    os._exit(0 if sytest.run_main(main, cleanup) else 1)
