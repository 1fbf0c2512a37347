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
gets the same code. SIGCONT: /readyz is 200 again.

Then the region's health table, with a router of its own (no statebus: its
master probes; a failed probe never turns a worker unhealthy here,
--health-failure-threshold 1000, so only the health table can leave the
two plain engines out): /readyz answers 503 no_healthy_workers naming how
many workers are left out, and 200 again afterwards, when
  breaker   both engines answer 500 (--cb-threshold 2): "2 breaker open";
            200 again once the cool-down lets a half-open probe through;
  stall     both engines stopped with a streamed request in flight each (1 s stall
            timeout): "2 stalled"; 200 again after SIGCONT;
  down      both engines killed, one request each is refused: "2 passively
            down"; 200 again after a health probe of the restarted engines
            passes (its log line).
SGLang's GET /readiness answers 503 with the same reason each time.
Bounded: about 25 s.
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import check, fail, free_port, request, wait_for  # noqa: E402

ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-readyz.")
SHM = "/dev/shm/sy-test-readyz-%d" % os.getpid()
SHM2 = SHM + "-plain"
MOCK_ARGS = ["--model", "m1", "--decode-us-per-token", "2000", "--log-level", "warn"]
procs = []
fleet_dir = os.path.join(T, "fleet")
plain_dir = os.path.join(T, "plain")
stopped = []


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    for name in ("router.log", "statebus.log", "plain.log"):
        sytest.print_tail(os.path.join(T, name))


def cleanup():
    sytest.resume_pids(stopped)
    sytest.stop_procs(procs)
    for d in (fleet_dir, plain_dir):
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    for shm in (SHM, SHM2):
        subprocess.run([SYCTL, "--shm", shm, "destroy"], capture_output=True)
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
    health_table()
    log("router_readyz: 1 passed, 0 failed")


def health_table():
    r = subprocess.run([FLEET, "start", "--dir", plain_dir, "--bin", MOCK, "--count", "2", "--"]
                       + MOCK_ARGS, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(plain_dir, "fleet.json")) as f:
        fleet = json.load(f)
    port = free_port()
    rlog = os.path.join(T, "plain.log")
    rp = subprocess.Popen([ROUTER, "--host", "127.0.0.1", "--port", str(port), "--shm", SHM2,
                           "--processes", "1", "--model-id", "m1", "--policy", "round_robin",
                           "--health-interval-ms", "200", "--health-timeout-ms", "300",
                           "--health-failure-threshold", "1000", "--stall-timeout-secs", "1",
                           "--cb-threshold", "2", "--cb-cool-down-secs", "2", "--worker-urls"]
                          + [m["url"] for m in fleet],
                          stdout=open(rlog, "a"), stderr=subprocess.STDOUT)
    procs.append(rp)

    def readyz():
        check(rp.poll() is None, "router (plain) exited")
        try:
            st, _, body = request(port, "GET", "/readyz", timeout=3)
            return st, body
        except OSError:
            return None, b""

    def not_ready(what, left_out):
        """Waits for /readyz 503 no_healthy_workers whose message says
        left_out (e.g. "0 passively down, 2 stalled, 0 breaker open")."""
        def pred():
            st, body = readyz()
            if st != 503:
                return None
            err = json.loads(body)["error"]
            return err if left_out in err["message"] else None
        err = wait_for("/readyz 503 with %s" % what, pred, timeout=5, interval=0.02)
        check(err["code"] == "no_healthy_workers", "%s: code %r" % (what, err))
        check("http" not in err["message"], "%s: message names a URL: %r" % (what, err))
        # SGLang's /readiness gives the same verdict (the probe still
        # counts both workers healthy)
        st, _, body = request(port, "GET", "/readiness", timeout=3)
        d = json.loads(body)
        check(st == 503 and d["status"] == "not ready" and left_out in d["reason"],
              "%s: /readiness %d %r" % (what, st, d))
        log("%s: /readyz 503 %s" % (what, json.dumps(err)))

    def chat(timeout=10, stream=False):
        try:
            st, h, body = request(port, "POST", "/v1/chat/completions",
                                  {"model": "m1", "max_tokens": 4, "stream": stream,
                                   "messages": [{"role": "user", "content": "readyz"}]},
                                  timeout=timeout)
            return st, h.get("x-switchyard-worker")
        except OSError:
            return 0, None

    def all_served():
        """Requests until each engine answered one (breakers closed again)."""
        seen = set()
        for _ in range(10):
            st, w = chat()
            if st == 200:
                seen.add(w)
            if len(seen) == len(fleet):
                return
        fail("not every engine answered: %r" % seen)

    wait_for("/readyz 200 (plain)", lambda: readyz()[0] == 200, timeout=15)
    all_served()

    # breakers: every engine answers 500 until each breaker is open
    for m in fleet:
        request(m["http_port"], "POST", "/mock/faults", {"fail_rate": 1})
    for _ in range(2 * len(fleet)):
        st, _ = chat()
        check(st == 500, "an injected failure answered %d" % st)
    not_ready("both breakers open", "0 passively down, 0 stalled, 2 breaker open")
    for m in fleet:
        request(m["http_port"], "POST", "/mock/faults", {"fail_rate": 0})
    wait_for("/readyz 200 after the breaker cool-down", lambda: readyz()[0] == 200, timeout=5)
    all_served()

    # stalls: a streamed request (the stall evidence) in flight on each
    # stopped engine
    for m in fleet:
        os.kill(m["pid"], signal.SIGSTOP)
        stopped.append(m["pid"])
    results = []
    threads = [threading.Thread(target=lambda: results.append(chat(30, True)), daemon=True)
               for _ in fleet]
    for t in threads:
        t.start()
        time.sleep(0.1)
    not_ready("both engines stalled", "0 passively down, 2 stalled, 0 breaker open")
    for m in fleet:
        os.kill(m["pid"], signal.SIGCONT)
        stopped.remove(m["pid"])
    wait_for("/readyz 200 after SIGCONT", lambda: readyz()[0] == 200, timeout=5)
    for t in threads:
        t.join(30)
    check(sorted(st for st, _ in results) == [200, 200], "stalled requests: %r" % results)

    # passive down: both engines gone, a request refused by each
    for m in fleet:
        os.kill(m["pid"], signal.SIGKILL)
    for m in fleet:
        sytest.wait_refused(m["http_port"])
    t_kill = time.time()
    for _ in fleet:
        st, _ = chat()
        check(st in (502, 503), "a request to a dead fleet answered %d" % st)
    not_ready("both engines passively down", "2 passively down, 0 stalled, 0 breaker open")
    with open(rlog, errors="replace") as f:
        probes0 = f.read().count("health probe passed, passive down mark cleared")
    for m in fleet:
        sytest.restart_mock(MOCK, m, plain_dir, MOCK_ARGS, procs)
    wait_for("/readyz 200 after the restart", lambda: readyz()[0] == 200, timeout=5)
    with open(rlog, errors="replace") as f:
        probes = f.read().count("health probe passed, passive down mark cleared")
    check(probes > probes0, "/readyz 200 again without a probe clearing a down mark")
    log("health table: 503 while down / stalled / breaker-open, 200 again (%.1f s after the kill)"
        % (time.time() - t_kill))


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
