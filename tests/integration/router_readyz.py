#!/usr/bin/python3
"""router_readyz.py ROUTER STATEBUS FLEET MOCK SYCTL — /readyz follows whether
a complete selection is possible (issue 11 §8).

A PD fleet (one prefill, one decode mock engine), a statebus probing their
health every 100 ms, and a router whose static fleet names the roles (so
its only bucket is PD). /readyz is 200 while both are healthy. The prefill
engine is stopped (SIGSTOP): once the statebus marks it unhealthy, /readyz
answers 503 with the JSON error body {"error": {"code":
"no_prefill_workers_available", "message": names the bucket and what is
missing}} — on a connection opened before, too — and an inference request
gets the same code. SIGCONT: /readyz is 200 again. Bounded: about 10 s.
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import check, fail, free_port, request, wait_for  # noqa: E402

ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-readyz.")
SHM = "/dev/shm/sy-test-readyz-%d" % os.getpid()
procs = []
fleet_dir = os.path.join(T, "fleet")
stopped = []


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    for name in ("router.log", "statebus.log"):
        sytest.print_tail(os.path.join(T, name))


def cleanup():
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    sytest.stop_procs(procs)
    subprocess.run([FLEET, "stop", "--dir", fleet_dir], capture_output=True)
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    subprocess.run(["rm", "-rf", T])


def main():
    r = subprocess.run([FLEET, "start", "--dir", fleet_dir, "--bin", MOCK, "--prefill", "1",
                        "--decode", "1", "--", "--model", "m1"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(fleet_dir, "fleet.json")) as f:
        fleet = {m["role"]: m for m in json.load(f)}
    p, d = fleet["prefill"], fleet["decode"]
    cfg = os.path.join(T, "r.yaml")
    port = free_port()
    with open(cfg, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\n"
                "workers:\n  - {url: %s, role: prefill, bootstrap_port: %d}\n"
                "  - {url: %s, role: decode}\n"
                "router: {host: 127.0.0.1, port: %d, processes: 1}\n"
                % (SHM, p["url"], p["bootstrap_port"], d["url"], port))
    sb = subprocess.Popen([STATEBUS, "--config", cfg, "--health-interval-ms", "100",
                           "--health-timeout-ms", "200", "--health-failure-threshold", "2",
                           "--control-endpoint", "ipc://%s.ctl" % SHM],
                          stdout=open(os.path.join(T, "statebus.log"), "a"), stderr=subprocess.STDOUT)
    procs.append(sb)
    rp = subprocess.Popen([ROUTER, "--config", cfg],
                          stdout=open(os.path.join(T, "router.log"), "a"), stderr=subprocess.STDOUT)
    procs.append(rp)

    def readyz(conn=None):
        check(rp.poll() is None, "router exited")
        try:
            if conn is None:
                st, _, body = request(port, "GET", "/readyz", timeout=2)
                return st, body
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            return resp.status, resp.read()
        except OSError:
            return None, b""
    wait_for("/readyz 200 with a healthy prefill and decode", lambda: readyz()[0] == 200,
             timeout=15)
    open_conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    check(readyz(open_conn)[0] == 200, "/readyz on the open connection")

    os.kill(p["pid"], signal.SIGSTOP)
    stopped.append(p["pid"])
    st, body = wait_for("/readyz 503 with the prefill engine stopped",
                        lambda: (lambda x: x if x[0] == 503 else None)(readyz(open_conn)),
                        timeout=10)
    err = json.loads(body)["error"]
    log("prefill stopped: /readyz %d %s" % (st, json.dumps(err)))
    check(err["code"] == "no_prefill_workers_available", "code %r" % err)
    check("prefill" in err["message"] and "default-pd" in err["message"]
          and "http" not in err["message"], "message %r" % err["message"])
    st, hd, body = request(port, "POST", "/v1/chat/completions",
                           {"model": "m1", "max_tokens": 1,
                            "messages": [{"role": "user", "content": "x"}]})
    check(st == 503 and json.loads(body)["error"]["code"] == "no_prefill_workers_available",
          "chat with the prefill engine stopped: %d %s" % (st, body[:200]))

    os.kill(p["pid"], signal.SIGCONT)
    stopped.remove(p["pid"])
    wait_for("/readyz 200 again", lambda: readyz()[0] == 200, timeout=10)
    open_conn.close()
    log("router_readyz: 1 passed, 0 failed")


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
