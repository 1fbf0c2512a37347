"""sytest.py — helpers shared by the Python integration tests (imported; not a
test). The scripts run as `/usr/bin/python3 tests/integration/X.py ...` and
put their own folder first on sys.path, so `import sytest` finds this file
from any working directory.

fail(msg) prints "FAIL: msg", then whatever each function registered with
on_fail() prints (log tails), and exits 1. Everything here that gives up
does so through fail()."""
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

_on_fail = []
FAIL_PREFIX = "FAIL"  # a script may name its variant: "FAIL (lean client)"


def on_fail(fn):
    """Registers fn() to print diagnostics (log tails) when fail() runs."""
    _on_fail.append(fn)
    return fn


def fail(msg):
    print("%s: %s" % (FAIL_PREFIX, msg), file=sys.stderr, flush=True)
    for fn in _on_fail:
        fn()
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def print_tail(path, chars=3000):
    """Prints the last `chars` characters of a log; a missing log prints nothing."""
    try:
        with open(path, errors="replace") as f:
            print(f.read()[-chars:], file=sys.stderr)
    except OSError:
        pass


def print_dir_logs(d, chars=3000):
    """Prints `--- path` and the last `chars` characters of every *.log in d."""
    for log in glob.glob(os.path.join(d, "*.log")):
        print(f"--- {log}", open(log).read()[-chars:], sep="\n", file=sys.stderr)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def free_ports(n):
    """Base of n consecutive free ports (rank r at base + r)."""
    for _ in range(200):
        base = free_port()
        if base + n > 65535:
            continue
        ok = True
        for k in range(n):
            t = socket.socket()
            try:
                t.bind(("127.0.0.1", base + k))
            except OSError:
                ok = False
            t.close()
        if ok:
            return base
    fail("no free port range")


def wait_for(what, pred, timeout=10.0, interval=0.05):
    """Polls pred() until it returns something true (returned) or timeout s pass."""
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    fail("timed out waiting for " + what)


def syctl_json(syctl, shm, *args):
    """`syctl --shm SHM --json ARGS...` parsed; a non-zero exit fails the test."""
    out = subprocess.run([syctl, "--shm", shm, "--json"] + list(args), capture_output=True,
                         text=True, timeout=10)
    if out.returncode != 0:
        fail("syctl %s: %s" % (" ".join(args), out.stderr))
    return json.loads(out.stdout)


def request(port, method, path, body=None, headers=None, timeout=30):
    """One HTTP/1.1 request to 127.0.0.1:port (a dict body is sent as JSON) →
    (status, {lower-case header: value}, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"content-type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=json.dumps(body) if isinstance(body, dict) else body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


def stop_procs(procs, timeout=8):
    """SIGTERM to every live process of procs, then waits for each (SIGKILL
    after timeout s)."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def start_router(router, d, name, port, config, procs, timeout=10.0):
    """switchyard-router on the YAML text config (written to d/name.yaml),
    stdout/stderr appended to d/name.log, its Popen added to procs; waits
    until GET /readyz on port answers 200 (the router exiting fails the test)."""
    cfg = os.path.join(d, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(config)
    p = subprocess.Popen([router, "--config", cfg], stdout=open(os.path.join(d, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    wait_router_ready(p, port, name, timeout=timeout)


def wait_router_ready(p, port, name, timeout=10.0):
    """Waits until GET /readyz on 127.0.0.1:port answers 200; the router
    process p (a Popen) exiting first fails the test as "router NAME exited"."""
    def ready():
        if p.poll() is not None:
            fail("router %s exited" % name)
        try:
            return request(port, "GET", "/readyz", timeout=2)[0] == 200
        except OSError:
            return False
    wait_for("router %s ready" % name, ready, timeout=timeout)


def wait_statebus_live(syctl, shm, p, timeout=15):
    """Waits until the region shm's header (`syctl header`) names the
    statebus process p (a Popen) as its live statebus."""
    def live():
        r = subprocess.run([syctl, "--shm", shm, "--json", "header"], capture_output=True,
                           text=True, timeout=10)
        if r.returncode != 0:
            return False
        st = json.loads(r.stdout)["statebus"]
        return st.get("pid") == p.pid and st.get("live")
    wait_for("statebus %d live" % p.pid, live, timeout=timeout)


# Words of the generated prompts (prefix_text).
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()


def prefix_text(rng, k, chars):
    """A prompt prefix of at least `chars` characters: "prefix-K" and words
    of WORDS drawn from the random.Random rng, space-separated."""
    out = ["prefix-%d" % k]
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(WORDS))
    return " ".join(out)


def resume_pids(pids):
    """SIGCONT to each of pids (processes a test stopped with SIGSTOP and
    left stopped), so that a later SIGTERM can end them; a pid gone already
    is passed over."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass


def kill_procs(procs):
    """SIGKILL to every live process of procs."""
    for p in procs:
        if p.poll() is None:
            p.kill()


def unlink_quiet(*paths):
    """Removes each of paths that exists."""
    for f in paths:
        try:
            os.unlink(f)
        except OSError:
            pass


def run_main(main, cleanup):
    """main(), then cleanup(ok) whatever happened → ok: main returned or
    exited with status 0 (an AssertionError's traceback is printed: not ok).
    Any other exception goes on after cleanup."""
    ok = False
    try:
        main()
        ok = True
    except AssertionError:
        import traceback
        traceback.print_exc()
    except SystemExit as e:
        ok = not e.code
    finally:
        cleanup(ok)
    return ok


class PacedLoad:
    """Open-loop load: `rate` calls per second of self.one(i) (i = 0, 1, ...),
    each on its own daemon thread, from start() until stop(). A subclass
    defines one(i), which appends its record (a dict with "t_send", the wall
    time it sent) to self.done under self.lock."""

    def __init__(self, rate):
        self.rate = rate
        self.done = []
        self.lock = threading.Lock()
        self.running = False
        self.n = 0
        self.threads = []

    def run(self):
        nxt = time.time()
        while self.running:
            t = threading.Thread(target=self.one, args=(self.n,), daemon=True)
            self.n += 1
            t.start()
            self.threads.append(t)
            nxt += 1.0 / self.rate
            time.sleep(max(0, nxt - time.time()))

    def start(self):
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def stop(self):
        """Stops sending and waits up to 25 s for each request under way
        (one still running then fails the test)."""
        self.running = False
        self.thread.join()
        for t in self.threads:
            t.join(25)
        check(all(not t.is_alive() for t in self.threads), "load: requests still running after 25 s")
        self.threads = []

    def window(self, t0, t1):
        """The records sent in [t0, t1) (wall time)."""
        with self.lock:
            return [r for r in self.done if t0 <= r["t_send"] < t1]


class HeldStream(threading.Thread):
    """One streamed request (body, a dict sent as JSON) to 127.0.0.1:port on
    its own connection, held open until close(); what it receives builds up
    in self.data (bytes)."""

    def __init__(self, port, body, path="/v1/chat/completions"):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        data = json.dumps(body).encode()
        self.sock.sendall(b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                          b"content-length: %d\r\n\r\n" % (path.encode(), len(data)) + data)
        self.data = b""
        self.start()

    def run(self):
        try:
            while True:
                b = self.sock.recv(65536)
                if not b:
                    break
                self.data += b
        except OSError:
            pass

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def fleet_one(fleet, mock, d, *mock_args):
    """Starts one mock engine with mock-fleet in dir d → its fleet.json entry."""
    r = subprocess.run([fleet, "start", "--dir", d, "--bin", mock, "--count", "1", "--"]
                       + list(mock_args), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(d, "fleet.json")) as f:
        return json.load(f)[0]


def restart_mock(mock, m, d, mock_args, procs, timeout=5.0):
    """Starts mock engine m (a mock-fleet fleet.json entry of fleet dir d)
    again on the same ports with mock_args, its output appended to
    d/NAME.log and its pid written to m["pid"] and d/NAME.pid (so that
    `mock-fleet stop` stops it); waits until its /health answers 200 →
    the wall time it did."""
    args = [mock, "--host", "127.0.0.1", "--port", str(m["http_port"]), "--kv-port", str(m["kv_port"]),
            "--load-port", str(m["load_port"]), "--replay-port", str(m["replay_port"]), "--dp-size", "1",
            "--disaggregation-bootstrap-port", str(m["bootstrap_port"])]
    if m["role"] != "plain":
        args += ["--disaggregation-mode", m["role"]]
    p = subprocess.Popen(args + list(mock_args), stdout=open(os.path.join(d, m["name"] + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    m["pid"] = p.pid
    with open(os.path.join(d, m["name"] + ".pid"), "w") as f:
        f.write(str(p.pid))
    end = time.time() + timeout
    while time.time() < end:
        try:
            if request(m["http_port"], "GET", "/health", timeout=1)[0] == 200:
                return time.time()
        except OSError:
            pass
        time.sleep(0.01)
    fail("mock %s did not come back" % m["name"])


def wait_refused(port, timeout=2.0):
    """Waits until 127.0.0.1:port refuses connections (a killed listener)."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
        except ConnectionRefusedError:
            return
        except OSError:
            pass
        time.sleep(0.005)
    fail("port %d still accepts after the kill" % port)


def fleet_stop_checked(fleet, d, active):
    """Stops the fleet in d; a sanitizer report in a mock's log fails the
    test; then takes d off the list active and removes it."""
    subprocess.run([fleet, "stop", "--dir", d], check=True, timeout=30)
    for log in glob.glob(os.path.join(d, "*.log")):
        text = open(log).read()
        if "Sanitizer" in text or "runtime error" in text:
            fail(f"sanitizer report in {log}:\n{text[-3000:]}")
    active.remove(d)
    shutil.rmtree(d, ignore_errors=True)


class KvEngine:
    """A minimal fake SGLang engine for statebus tests: /server_info (`info`,
    with a kv_events block on an XPUB socket when kv=True) and /health on
    127.0.0.1, KV events sent with send_kv (sglang-wire.md §2). Needs
    Debian's python3-zmq and python3-msgpack (imported here, not by every
    user of this module)."""

    def __init__(self, block_size=4, kv=True, **info):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        import zmq
        self.http_port = free_port()
        self.info = {"model_path": "m", "disaggregation_mode": "null", "dp_size": 1}
        self.info.update(info)
        self.sock = None
        if kv:
            self.kv_port = free_port()
            self.info["kv_events"] = {"publisher": "zmq", "endpoint_host": "*",
                                      "endpoint_port_base": self.kv_port, "topic": "",
                                      "block_size": block_size, "dp_size": 1}
            self.sock = zmq.Context.instance().socket(zmq.XPUB)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.bind("tcp://127.0.0.1:%d" % self.kv_port)
        engine = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                ok = self.path in ("/server_info", "/health")
                body = json.dumps(engine.info).encode() if self.path == "/server_info" else b""
                self.send_response(200 if ok else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.http_port), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.http_port

    def wait_subscribed(self, timeout=10):
        """Waits for a subscription on the KV XPUB (the statebus connected)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.sock.poll(int(left * 1000)) == 0:
                fail("the statebus never subscribed to %s" % self.url)
            if self.sock.recv()[:1] == b"\x01":
                return

    def send_kv(self, seq, events):
        """One KV-event batch [ts, events, dp_rank 0] with sequence number seq."""
        import struct
        import msgpack
        data = msgpack.packb([time.time(), events, 0], use_bin_type=True)
        self.sock.send_multipart([b"", struct.pack(">q", seq), data])

    def close(self):
        self.httpd.shutdown()
        if self.sock is not None:
            self.sock.close()


def start_statebus(statebus, shm, urls, log, *flags):
    """switchyard-statebus on region shm (control socket beside it) for urls,
    stdout/stderr to the open file log → the Popen."""
    return subprocess.Popen([statebus, "--shm", shm, "--log-level", "debug",
                             "--control-endpoint", "ipc://%s.ctl" % shm,
                             "--health-interval-ms", "100", "--discovery-retry-ms", "200"]
                            + list(flags) + ["--worker-urls"] + list(urls),
                            stdout=log, stderr=log)
