#!/usr/bin/python3
"""statebus_qa_known.py STATEBUS SYCTL — known statebus defects, each a
failing reproduction. NOT registered in meson (they fail today); run by hand:

  /usr/bin/python3 tests/integration/statebus_qa_known.py \\
      build/statebus/daemon/switchyard-statebus build/tools/syctl [crash|hol]

crash  An engine killed (-9, no END_SEQ) and restarted on the same ports
       publishes seq 0.. before the statebus's SUB has reconnected (ZMQ
       reconnect backoff up to 2 s; slow joiner). seq 0 — the only restart
       signal of sglang-wire.md §9 — is lost, so the dead process's blocks
       stay in the index (false hits; stream not even marked untrusted when
       the first seq seen happens to be cursor + 1).
hol    /server_info and /health run one at a time on one HTTP thread: one
       engine whose /server_info hangs (timeout 2 s × 3 attempts + backoff)
       delays the discovery of every engine queued behind it by ~6.3 s
       (and its health probes likewise): N hung engines, N × 6.3 s.
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

STATEBUS, SYCTL = sys.argv[1:3]
WHICH = sys.argv[3:] or ["crash", "hol"]
SHM = "/dev/shm/sy-test-qak-%d" % os.getpid()
Z = zmq.Context.instance()
procs = []
failed = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def sy(*args):
    out = subprocess.run([SYCTL, "--shm", SHM, "--json"] + list(args), capture_output=True,
                         text=True, timeout=10)
    try:
        return json.loads(out.stdout)
    except ValueError:  # region not created yet
        return {"matches": [], "workers": [], "streams": []}


def http(body_fn):
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            b = body_fn(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def log_message(self, *a):
            pass
    s = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return "http://127.0.0.1:%d" % s.server_address[1]


def info(kv_port):
    return json.dumps({"dp_size": 1, "kv_events": {"endpoint_host": "*", "endpoint_port_base": kv_port,
                                                   "topic": "", "block_size": 4, "dp_size": 1}}).encode()


def xpub(port):
    s = Z.socket(zmq.XPUB)
    s.setsockopt(zmq.LINGER, 0)
    s.bind("tcp://127.0.0.1:%d" % port)
    s.setsockopt(zmq.RCVTIMEO, 10000)
    return s


def batch(seq, hashes):
    return [b"", struct.pack(">q", seq), msgpack.packb(
        [time.time(), [["BlockStored", hashes, None, list(range(4 * len(hashes))), 4, None, "GPU"]], 0])]


def depth(hashes, url):
    m = sy("match", "--hashes", ",".join(map(str, hashes)))
    return max([x["depth"] for x in m["matches"] if x["worker"] == url] or [0])


def start(urls):
    p = subprocess.Popen([STATEBUS, "--shm", SHM, "--log-level", "warn", "--worker-urls"] + urls,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    return p


def crash():
    port = free_port()
    url = http(lambda path: info(port))
    pub = xpub(port)
    start([url])
    pub.recv()  # subscribed
    for seq in range(6):
        pub.send_multipart(batch(seq, [1, 2, 3] if seq == 0 else [100 + seq]))
    end = time.time() + 5
    while depth([1, 2, 3], url) != 3 and time.time() < end:
        time.sleep(0.05)
    time.sleep(1.5)  # the statebus's reconnect backoff grows meanwhile
    pub.close()      # kill -9: no END_SEQ
    time.sleep(1.0)
    pub = xpub(port)  # restarted engine, empty cache, seq from 0
    pub.send_multipart(batch(0, [7]))  # before the SUB reconnected: lost
    pub.send_multipart(batch(1, [8]))
    pub.recv()  # the statebus reconnected
    for seq in range(2, 8):
        pub.send_multipart(batch(seq, [200 + seq]))
    time.sleep(1.0)
    d = depth([1, 2, 3], url)
    st = [s for s in sy("streams")["streams"] if s["worker"] == url][0]
    pub.close()
    if d != 0:
        failed.append("crash: blocks [1,2,3] of the killed engine process still indexed "
                      "(depth %d) after it restarted; stream %s" % (d, {k: st[k] for k in (
                          "cursor", "resets", "skipped", "untrusted")}))


def hol():
    slow = http(lambda path: (time.sleep(10), b"{}")[1] if path == "/server_info" else b"")
    port = free_port()
    fast = http(lambda path: info(port))
    t0 = time.time()
    start([slow, fast])
    while time.time() - t0 < 12:
        w = [x for x in sy("workers").get("workers", []) if x["worker"] == fast]
        if w and w[0]["kv_events"]["block_size"]:
            break
        time.sleep(0.05)
    took = time.time() - t0
    if took > 1.5:
        failed.append("hol: the fast engine was discovered after %.1f s, behind one hung "
                      "/server_info (want < 1.5 s)" % took)


try:
    for name in WHICH:
        {"crash": crash, "hol": hol}[name]()
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(5)
        procs.clear()
        subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
finally:
    for p in procs:
        p.kill()
        p.wait()
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
for f in failed:
    print("FAIL:", f, file=sys.stderr)
print("ok" if not failed else "%d known defect(s) reproduced" % len(failed))
sys.exit(1 if failed else 0)
