"""bench/lib/benchlib.py — helpers shared by the Python benchmarks under bench/
(imported; not a benchmark). A script under bench/X/ finds it with
`sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))`.

Paths are those of the meson build in ROOT/build (the `tests/run` and
`tools/lib/setup.sh` layout)."""
import http.client
import os
import socket
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
ROUTER = os.path.join(BUILD, "router/switchyard-router")
STATEBUS = os.path.join(BUILD, "statebus/daemon/switchyard-statebus")
MOCK = os.path.join(BUILD, "tools/mock-engine/switchyard-mock-engine")
SYCTL = os.path.join(BUILD, "tools/syctl")


def env(name, dflt):
    """Environment variable name converted to dflt's type; dflt when unset."""
    return type(dflt)(os.environ.get(name, dflt))


def free_port():
    """A TCP port on 127.0.0.1 free at the time of the call."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ok(port, path, tries=300, interval=0.05):
    """Polls GET path on 127.0.0.1:port until it answers 200: True, or False
    after `tries` attempts `interval` s apart (connection errors count as
    attempts)."""
    for _ in range(tries):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(interval)
    return False


def pct(v, p):
    """The p-quantile (0..1) of the values v by rank floor(p × n) (the
    largest for p = 1); NaN when v is empty."""
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
