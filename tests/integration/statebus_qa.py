#!/usr/bin/python3
"""statebus_qa.py STATEBUS SYCTL — QA regressions of switchyard-statebus
against hostile fake engines (Python only: http.server, python3-zmq XPUB,
python3-msgpack), asserted through `syctl --json`.

1. dp_size over the region's rank capacity (32 > 16): the worker's KV events
   are not indexed and its load stays unknown — ranks 0..15 reporting must
   never be summed as if they were the whole worker (sglang-wire.md §13).
2. dp_size out of [1, 1024] in /server_info: rejected (bad_facts), never
   taken as dp 1.
3. Hostile KV frames and payloads (wrong frame counts, 7-byte seqs, forged
   msgpack lengths, deep nesting, wrong types, NaN ts, odd bin hashes,
   hashes >= 2^63, negative block sizes, over-cap events) on one engine:
   the daemon stays up, counts them, and a good engine's stream keeps
   flowing; the hostile engine's good batches around them still apply.
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
from sytest import fail, free_ports, wait_for  # noqa: E402

STATEBUS, SYCTL = sys.argv[1:3]
SHM = "/dev/shm/sy-test-qa-%d" % os.getpid()
CTL = "ipc://%s.ctl" % SHM
LOG = "/tmp/sy-test-qa-%d.log" % os.getpid()
Z = zmq.Context.instance()
procs = []


@sytest.on_fail
def show_log():
    sytest.print_tail(LOG)


def sy(*args):
    return sytest.syctl_json(SYCTL, SHM, *args)


class Engine:
    """/server_info + XPUB per KV rank (`kv_ranks` bound) + LoadStat XPUBs."""

    def __init__(self, dp, kv_ranks, load_ranks, block_size=4, info_dp=None):
        self.kv_base = free_ports(kv_ranks)
        self.load_base = free_ports(max(load_ranks, 1))
        kv = {"publisher": "zmq", "endpoint_host": "*", "endpoint_port_base": self.kv_base,
              "topic": "", "block_size": block_size,
              "dp_size": dp if info_dp is None else info_dp,
              "load_endpoint_port_base": self.load_base, "load_topic": "load"}
        body = json.dumps({"dp_size": dp, "kv_events": kv}).encode()

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                b = body if self.path == "/server_info" else b""
                self.send_response(200)
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def log_message(self, *a):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.http.server_address[1]
        self.kv, self.load = [], []
        for r in range(kv_ranks):
            s = Z.socket(zmq.XPUB)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.SNDHWM, 0)
            s.bind("tcp://127.0.0.1:%d" % (self.kv_base + r))
            self.kv.append(s)
        for r in range(load_ranks):
            s = Z.socket(zmq.XPUB)
            s.setsockopt(zmq.LINGER, 0)
            s.bind("tcp://127.0.0.1:%d" % (self.load_base + r))
            self.load.append(s)
        self.seq = 0

    def wait_subscribed(self, socks):
        for s in socks:
            s.setsockopt(zmq.RCVTIMEO, 10000)
            try:
                s.recv()
            except zmq.Again:
                fail("the statebus never subscribed to " + self.url)

    def send(self, payload, frames=None, rank=0):
        if frames is None:
            frames = [b"", struct.pack(">q", self.seq), payload]
            self.seq += 1
        self.kv[rank].send_multipart(frames)

    def loadstat(self, rank, running, waiting):
        self.load[rank].send_multipart([b"load", struct.pack(">q", 0), msgpack.packb(
            ["LoadStat", running, waiting, 10, 1000, rank])])


def batch(events, ts=None):
    return msgpack.packb([time.time() if ts is None else ts, events, 0], use_bin_type=True)


def stored(hashes, parent=None, bs=4, medium="GPU"):
    return ["BlockStored", hashes, parent, list(range(bs * len(hashes))), bs, None, medium]


def depth(hashes, url):
    m = sy("match", "--hashes", ",".join(str(h) for h in hashes))
    return max([x["depth"] for x in m["matches"] if x["worker"] == url] or [0])


def worker(url):
    for w in sy("workers")["workers"]:
        if w["worker"] == url:
            return w
    fail("no worker " + url)


def load_of(url):
    for w in sy("load")["workers"]:
        if w["worker"] == url:
            return w
    fail("no load record for " + url)


def main():
    good = Engine(dp=1, kv_ranks=1, load_ranks=1)
    wide = Engine(dp=32, kv_ranks=16, load_ranks=16)
    huge_dp = Engine(dp=1, kv_ranks=1, load_ranks=1, info_dp=100000)
    hostile = Engine(dp=1, kv_ranks=1, load_ranks=1)
    p = subprocess.Popen([STATEBUS, "--shm", SHM, "--log-level", "debug", "--worker-urls",
                          good.url, wide.url, huge_dp.url, hostile.url],
                         stdout=open(LOG, "w"), stderr=subprocess.STDOUT)
    procs.append(p)
    good.wait_subscribed(good.kv)
    hostile.wait_subscribed(hostile.kv)

    # 1. dp_size 32 > 16 region ranks: KV rejected, load never summed over 16.
    w = wait_for("wide worker discovered", lambda: (worker(wide.url)["kv_events"]["block_size"]
                                                   and worker(wide.url)))
    if w["kv_events"]["rejected"] != "bad_facts":
        fail("dp_size 32 over 16 ranks: kv_events.rejected = %r, want bad_facts"
             % w["kv_events"]["rejected"])
    for r in range(16):
        for _ in range(3):
            wide.loadstat(r, 1, 1)
    time.sleep(0.5)
    lw = load_of(wide.url)
    if lw["fresh"]:
        fail("dp 32 worker with 16 ranks reporting is 'fresh' (partial sum): %s" % lw)
    # 2. dp_size 100000: rejected, not taken as dp 1.
    w = wait_for("huge-dp worker discovered",
                 lambda: worker(huge_dp.url)["kv_events"]["block_size"] and worker(huge_dp.url))
    if w["kv_events"]["rejected"] != "bad_facts":
        fail("dp_size 100000: rejected = %r (dp %s), want bad_facts"
             % (w["kv_events"]["rejected"], w["dp_size"]))

    # 3. hostile payloads on one engine, a good engine alongside.
    hostile.send(batch([stored([1, 2, 3])]))
    p8 = lambda x: msgpack.packb(x, use_bin_type=True)
    raw = [
        [b"x"], [b"", b"\0" * 8], [b"", b"\0" * 8, b"\x90", b"a", b"b"],
        [b"", b"\0" * 7, batch([stored([9])])],
    ]
    for frames in raw:
        hostile.send(None, frames=frames)
    bad = [
        b"", b"\xc1", b"\xdd\xff\xff\xff\xff", b"\x93\xcb" + b"\0" * 8 + b"\xdd\x7f\xff\xff\xff",
        b"\xdf\xff\xff\xff\xff", b"\x93\x00\x91\xdb\xff\xff\xff\xff", b"\x91" * 100000 + b"\xc0",
        b"\x93\x00" + b"\x91" * 5000 + b"\xc0" + b"\x00",
        batch([], ts=float("nan")), batch([stored([5])], ts=float("inf")),
        p8(["x", [], 0]), p8([0, "notalist", 0]), p8([0, [[1, 2, 3]], 0]),
        p8([0, [["BlockStored", "x", None, [], 4]], 0]),
        p8([0, [["BlockStored", [1.5], None, [], 4]], 0]),
        p8([0, [["BlockStored", [7], None, [], -4]], 0]),
        p8([0, [["BlockStored", [7], None, [-1], 4]], 0]),
        p8([0, [["BlockStored", [7], None, [2 ** 40], 4]], 0]),
        p8([0, [["BlockRemoved", [7], 12]], 0]),
        p8([0, [{"type": 5}], 0]), p8([0, [{"type": "BlockStored"}], 0]),
        p8({"ts": "x", "events": []}), p8({1: 2}),
        p8([0, [["BlockStored", list(range(70000)), None, [], 4]], 0]),
    ]
    for b in bad:
        hostile.send(b)
    # Good batches with odd but valid ids: bin hashes of odd sizes, ids ≥ 2^63.
    hostile.send(batch([stored([b"\x01\x02\x03", b"\xff" * 33])]))
    hostile.send(batch([stored([2 ** 64 - 1, 2 ** 63])]))
    hostile.send(batch([stored([4], parent=3)]))
    for i in range(20000):
        good.send(batch([stored([1000 + i % 50])]))
    good.send(batch([stored([11, 12, 13])]))
    wait_for("good engine's last batch", lambda: depth([11, 12, 13], good.url) == 3, 20)
    wait_for("hostile engine's later batch", lambda: depth([1, 2, 3, 4], hostile.url) == 4)
    if depth([0x0102030000000000, -1], hostile.url) != 2:
        fail("bin hashes of 3 and 33 bytes: want ids 0x0102030000000000 and -1")
    if depth([-1], hostile.url) < 1 or depth([-1, -2 ** 63], hostile.url) != 2:
        fail("u64 ids above i64 max must be stored as i64 bits")
    st = [s for s in sy("streams")["streams"] if s["worker"] == hostile.url][0]
    if st["decode_failures"] < len(raw) + 10:
        fail("decode failures not counted: %s" % st)
    if p.poll() is not None:
        fail("statebus died: rc %s" % p.returncode)
    print("ok")


def stop_all():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


try:
    main()
    stop_all()
    # Under ASan/UBSan (suite 'sanitize'): any report, leaks at exit included.
    text = open(LOG, errors="replace").read()
    if "Sanitizer" in text or "runtime error" in text:
        fail("sanitizer report in the statebus log")
    if procs[0].returncode != 0:
        fail("statebus exit status %s after SIGTERM" % procs[0].returncode)
finally:
    stop_all()
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    for f in (SHM, SHM + ".ctl", LOG):
        try:
            os.unlink(f)
        except OSError:
            pass
