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


def fleet_one(fleet, mock, d, *mock_args):
    """Starts one mock engine with mock-fleet in dir d → its fleet.json entry."""
    r = subprocess.run([fleet, "start", "--dir", d, "--bin", mock, "--count", "1", "--"]
                       + list(mock_args), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(d, "fleet.json")) as f:
        return json.load(f)[0]


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
