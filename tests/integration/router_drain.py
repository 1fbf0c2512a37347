#!/usr/bin/python3
"""router_drain.py ROUTER FLEET MOCK SYCTL — SIGTERM drain under a steady load
on keep-alive connections (issue 11 §6).

Two mock engines (20 ms per output token), a router with two worker
processes and --shutdown-drain-secs 15. Six client threads, each on one
keep-alive HTTP/1.1 connection, alternate plain requests (4 tokens) and
streamed ones (40 tokens, about 0.8 s); one more connection, opened before
the signal, asks GET /readyz every 50 ms. After 2.5 s of load the master gets
SIGTERM. Then:
  - no request that was sent on an open connection fails: each gets its
    whole answer (a stream ends with data: [DONE]), none is reset;
  - the streams in flight at the signal complete;
  - /readyz answers 503 {"error": {"code": "draining"}} on the connection
    that was already open;
  - every listening socket is closed at once: a new connection made right
    after the signal is refused (not accepted and then reset), and so is
    every reconnect of a client whose connection the drain closed;
  - the router exits 0 once the work in flight is done, long before the
    drain deadline.
Figures: sent / ok / failed / refused. Bounded: about 10 s.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import check, fail, free_port, request, wait_for  # noqa: E402

ROUTER, FLEET, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-drain.")
SHM = "/dev/shm/sy-test-drain-%d" % os.getpid()
CLIENTS = 6
DRAIN_SECS = 15
procs = []
fleet_dir = os.path.join(T, "fleet")


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    sytest.print_tail(os.path.join(T, "router.log"))


def cleanup():
    sytest.stop_procs(procs)
    subprocess.run([FLEET, "stop", "--dir", fleet_dir], capture_output=True)
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    subprocess.run(["rm", "-rf", T])


class Clients:
    """Client threads on keep-alive connections. A result is (kind, start,
    end, outcome, detail): outcome ok, refused (a connect that was refused:
    nothing was sent) or failed (anything else: reset, cut, bad status)."""

    def __init__(self, port):
        self.port = port
        self.results = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.chat, args=(i,), daemon=True)
                        for i in range(CLIENTS)]
        self.threads.append(threading.Thread(target=self.readyz, daemon=True))
        for t in self.threads:
            t.start()

    def add(self, *r):
        with self.lock:
            self.results.append(r)

    def connect(self):
        """A new connection, or None when it was refused."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            c.connect()
        except ConnectionRefusedError:
            return None
        return c

    def one(self, c, kind, method, path, body):
        """One request on c → (outcome, status, body); the caller reconnects
        when the answer said Connection: close."""
        t0 = time.monotonic()
        try:
            c.request(method, path, body=body, headers={"content-type": "application/json"})
            resp = c.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            self.add(kind, t0, time.monotonic(), "failed", repr(e))
            return None, True
        ok = resp.status == 200 and (kind != "stream" or data.rstrip().endswith(b"data: [DONE]"))
        if kind == "readyz":
            ok = resp.status in (200, 503)
        self.add(kind, t0, time.monotonic(), "ok" if ok else "failed",
                 (resp.status, data[-120:]))
        return (resp.status, data), resp.will_close

    def chat(self, i):
        time.sleep(0.15 * i)  # out of step, so that streams are always in flight
        c = self.connect()
        n = 0
        while c is not None and not self.stop.is_set():
            stream = n % 2 == 1
            n += 1
            body = json.dumps({"model": "m1", "stream": stream, "max_tokens": 40 if stream else 4,
                               "messages": [{"role": "user", "content": "drain %d.%d" % (i, n)}]})
            _, closed = self.one(c, "stream" if stream else "plain", "POST",
                                 "/v1/chat/completions", body)
            time.sleep(0.05)
            if closed:
                c.close()
                c = self.connect()
                if c is None:
                    self.add("reconnect", time.monotonic(), time.monotonic(), "refused", None)
        if c is not None:
            c.close()

    def readyz(self):
        c = self.connect()
        self.readyz_statuses = []
        while c is not None and not self.stop.is_set():
            res, closed = self.one(c, "readyz", "GET", "/readyz", None)
            if res is not None:
                self.readyz_statuses.append((time.monotonic(), res[0], res[1]))
            time.sleep(0.05)
            if closed:
                c.close()
                c = self.connect()
        if c is not None:
            c.close()

    def done(self):
        return all(not t.is_alive() for t in self.threads)


def main():
    r = subprocess.run([FLEET, "start", "--dir", fleet_dir, "--bin", MOCK, "--count", "2", "--",
                        "--model", "m1", "--decode-us-per-token", "20000"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(fleet_dir, "fleet.json")) as f:
        urls = [m["url"] for m in json.load(f)]
    port = free_port()
    rp = subprocess.Popen([ROUTER, "--host", "127.0.0.1", "--port", str(port), "--processes", "2",
                           "--shm", SHM, "--model-id", "m1", "--shutdown-drain-secs",
                           str(DRAIN_SECS), "--worker-urls"] + urls,
                          stdout=open(os.path.join(T, "router.log"), "a"), stderr=subprocess.STDOUT)
    procs.append(rp)

    def ready():
        check(rp.poll() is None, "router exited at start-up")
        try:
            return request(port, "GET", "/readyz", timeout=2)[0] == 200
        except OSError:
            return False
    wait_for("router ready", ready)

    cl = Clients(port)
    time.sleep(2.5)
    t_term = time.monotonic()
    rp.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    # a new connection once the signal was handled: refused, not accepted
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        new_conn = "accepted: %r" % s.recv(200)
    except ConnectionRefusedError:
        new_conn = "refused"
    except OSError as e:
        new_conn = "accepted, then %r" % e
    s.close()
    try:
        rc = rp.wait(timeout=DRAIN_SECS + 10)
    except subprocess.TimeoutExpired:
        fail("router still running %d s after SIGTERM" % (DRAIN_SECS + 10))
    t_exit = time.monotonic()
    cl.stop.set()
    wait_for("client threads done", cl.done, timeout=10)

    res = cl.results
    chats = [x for x in res if x[0] in ("plain", "stream")]
    sent = len(chats)
    ok = sum(1 for x in chats if x[3] == "ok")
    failed = [x for x in res if x[3] == "failed"]
    refused = sum(1 for x in res if x[3] == "refused")
    in_flight = [x for x in chats if x[0] == "stream" and x[1] < t_term < x[2]]
    after = [x for x in chats if x[1] > t_term]
    r503 = [x for x in cl.readyz_statuses if x[0] > t_term and x[1] == 503]
    log("sent %d / ok %d / failed %d / refused reconnects %d; %d streams in flight at "
        "SIGTERM, %d requests sent on open connections after it; new connection: %s; "
        "router exit %d after %.2f s; /readyz 503 on the open connection: %d" % (
            sent, ok, len(failed), refused, len(in_flight), len(after), new_conn, rc,
            t_exit - t_term, len(r503)))
    check(not failed, "%d requests failed, e.g. %s" % (len(failed), failed[:3]))
    check(in_flight and all(x[3] == "ok" for x in in_flight),
          "streams in flight at SIGTERM: %s" % in_flight)
    check(new_conn == "refused", "a new connection during the drain was %s" % new_conn)
    check(r503, "/readyz never answered 503 on the open connection: %s"
          % [x[:2] for x in cl.readyz_statuses if x[0] > t_term])
    check(json.loads(r503[0][2])["error"]["code"] == "draining", "503 body %r" % r503[0][2])
    check(rc == 0, "router exit status %d" % rc)
    check(t_exit - t_term < 5, "drain took %.1f s for sub-second work" % (t_exit - t_term))
    log("router_drain: 1 passed, 0 failed")


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
