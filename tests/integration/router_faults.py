#!/usr/bin/python3
"""router_faults.py ROUTER FLEET MOCK SYCTL — dispatch under failure, measured
as a user would: a steady 20 req/s mix of streamed and plain chat requests
over 3 mock engines and one router with 2 worker processes (no statebus: the
router master probes health), driven through

  kill    engine A killed (SIGKILL), restarted on the same port 1.5 s later;
  stop    engine B stopped (SIGSTOP) for 3 s, then continued;
  cancel  clients that leave a non-streamed or streamed request after 300 ms
          (load paused, so the in-flight count is exact);
  pd      a PD pair (router with 2 processes): the decode killed (nothing is
          sent to the prefill), restarted; a prefill that answers 500 after
          both legs were sent (the decode leg is aborted).

Asserted: no failed request other than those in flight (streaming, first
byte already relayed) on the killed engine; no request sent to a dead or
stalled engine more than 100 ms after the router learned of it (its log
line); the engine back in rotation after a restart / SIGCONT; a client that
leaves is noticed within 100 ms (in-flight guard released, outcome
cancelled) whether or not it streams; PD failure logs name the room, both
workers and the stage; in-flight counters exact (zero) at the end. Prints
sent / ok / failed / recovery per fault. Bounded: ~35 s."""
import calendar
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, free_port  # noqa: E402

ROUTER, FLEET, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-faults-")
SHM = "/dev/shm/sy-test-faults-%d" % os.getpid()
SHM_PD = SHM + "-pd"
MOCK_ARGS = ["--model", "m1", "--decode-us-per-token", "20000", "--log-level", "warn"]
STALL_S = 1
procs = []
fleets = []
T_FIRST_FAULT = 0.0


@sytest.on_fail
def show_logs():
    sytest.print_dir_logs(T)
    for d in fleets:
        sytest.print_dir_logs(d)


def log(msg):
    print(msg, flush=True)


# ---- processes ---------------------------------------------------------------

def start_fleet(name, *args):
    d = os.path.join(T, name)
    r = subprocess.run([FLEET, "start", "--dir", d, "--bin", MOCK] + list(args) + ["--"] + MOCK_ARGS,
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "mock-fleet: " + r.stderr)
    fleets.append(d)
    with open(os.path.join(d, "fleet.json")) as f:
        return json.load(f)


def restart_mock(m, d):
    """Starts mock `m` (a fleet.json entry) again on the same ports."""
    return sytest.restart_mock(MOCK, m, d, MOCK_ARGS, procs)


def start_router(name, shm, *args):
    port = free_port()
    p = subprocess.Popen([ROUTER, "--port", str(port), "--shm", shm, "--processes", "2",
                          "--model-id", "m1", "--retry-max-retries", "2",
                          "--stall-timeout-secs", str(STALL_S), "--health-interval-ms", "200",
                          "--health-timeout-ms", "500"] + list(args),
                         stdout=open(os.path.join(T, name + ".log"), "a"), stderr=subprocess.STDOUT)
    procs.append(p)
    end = time.time() + 10
    while time.time() < end:
        try:
            if sytest.request(port, "GET", "/readyz", timeout=1)[0] == 200:
                return port, p
        except OSError:
            pass
        check(p.poll() is None, "router %s exited at start" % name)
        time.sleep(0.05)
    fail("router %s did not become ready" % name)


def log_lines(name, pattern):
    """(wall time, line) of the router log lines matching `pattern`."""
    out = []
    with open(os.path.join(T, name + ".log"), errors="replace") as f:
        for line in f:
            if re.search(pattern, line):
                ts = line.split(" ", 1)[0]
                t = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float(ts[19:-1])
                out.append((t, line.rstrip()))
    return out


def metrics(port):
    st, _, body = sytest.request(port, "GET", "/metrics", timeout=5)
    check(st == 200, "/metrics: %d" % st)
    return body.decode()


def metric_sum(text, name, **labels):
    v = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all('%s="%s"' % (k, x) in line for k, x in labels.items()):
            v += float(line.rsplit(" ", 1)[1])
    return v


def close_wait(port):
    """Sockets on local port `port` whose peer closed (CLOSE_WAIT), from
    /proc/net/tcp: the engine side of connections the router closed."""
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            loc, st = line.split()[1], line.split()[3]
            n += st == "08" and int(loc.split(":")[1], 16) == port
    return n


def inflight(shm):
    return sum(w["in_flight"] for w in sytest.syctl_json(SYCTL, shm, "inflight")["workers"])


# ---- load ---------------------------------------------------------------------

class Load(sytest.PacedLoad):
    """20 req/s, alternating streamed and plain, each on its own connection."""

    def __init__(self, port, rate=20, max_tokens=8):
        super().__init__(rate)
        self.port, self.max_tokens = port, max_tokens

    def one(self, i):
        stream = i % 2 == 0
        rec = {"i": i, "stream": stream, "t_send": time.time(), "status": 0, "worker": None, "ok": False}
        body = {"model": "m1", "messages": [{"role": "user", "content": "request %d" % i}],
                "max_tokens": self.max_tokens, "stream": stream}
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
            c.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
            r = c.getresponse()
            rec["status"] = r.status
            rec["worker"] = r.getheader("x-switchyard-worker")
            data = r.read()
            c.close()
            if r.status == 200:
                rec["ok"] = data.rstrip().endswith(b"data: [DONE]") if stream else \
                    "choices" in json.loads(data)
        except (OSError, http.client.HTTPException, ValueError) as e:
            rec["err"] = repr(e)
        rec["t_end"] = time.time()
        with self.lock:
            self.done.append(rec)


def figures(rows, name, recs, recovery):
    rows.append((name, len(recs), sum(r["ok"] for r in recs), sum(not r["ok"] for r in recs), recovery))


# ---- faults ---------------------------------------------------------------------

def fault_kill(load, rows, a, d):
    """Engine A killed under load, restarted on its port."""
    global T_FIRST_FAULT
    t_k = T_FIRST_FAULT = time.time()
    os.kill(a["pid"], signal.SIGKILL)
    time.sleep(1.5)
    t_up = restart_mock(a, d)
    time.sleep(2.0)
    recs = load.window(t_k - 0.5, t_up + 2.0)
    # Failed: only streams already relaying from A when it died.
    for r in recs:
        if not r["ok"]:
            check(r["stream"] and r["worker"] == a["url"] and r["t_send"] < t_k,
                  "kill: a request failed that was not in flight on the killed engine: %r" % r)
    downs = [t for t, _ in log_lines("router", "worker %s marked down" % re.escape(a["url"])) if t >= t_k - 0.05]
    check(downs, "kill: no passive down mark for the killed engine")
    t_learn = downs[0]
    late = [l for t, l in log_lines("router", "attempt [0-9]+ at %s failed" % re.escape(a["url"]))
            if t_learn + 0.1 < t < t_up]
    check(not late, "kill: attempts at the dead engine after the router knew: %s" % late[:3])
    back = [r["t_send"] for r in load.window(t_up, t_up + 2.0) if r["worker"] == a["url"] and r["ok"]]
    check(back, "kill: the restarted engine got no request within 2 s")
    rec = back[0] - t_up
    figures(rows, "engine kill + restart", recs, "%.0f ms after restart" % (rec * 1000))
    log("kill: learned %.0f ms after the kill, back %.0f ms after the restart, %d failed (streams cut)"
        % ((t_learn - t_k) * 1000, rec * 1000, sum(not r["ok"] for r in recs)))


def fault_stop(load, rows, b, shm):
    """Engine B stopped for 3 s."""
    t_s = time.time()
    os.kill(b["pid"], signal.SIGSTOP)
    seen = sytest.wait_for("syctl workers: the stopped engine stalled", lambda: next(
        (w for w in sytest.syctl_json(SYCTL, shm, "workers")["workers"]
         if w["worker"] == b["url"] and w["health"]["state"] == "stalled"), None), timeout=STALL_S + 2)
    check(seen["health"]["stalls"] >= 1, "syctl workers: stall not counted: %r" % seen["health"])
    time.sleep(max(0, t_s + 3 - time.time()))
    t_c = time.time()
    os.kill(b["pid"], signal.SIGCONT)
    time.sleep(2.0)
    recs = load.window(t_s - 0.5, t_c + 2.0)
    bad = [r for r in recs if not r["ok"]]
    check(not bad, "stop: failed requests: %r" % bad[:3])
    stalls = [t for t, _ in log_lines("router", "worker %s stalled" % re.escape(b["url"])) if t >= t_s - 0.002]
    check(stalls, "stop: no stall logged")
    t_learn = stalls[0]
    # the stall clock of a process starts at its first streamed dispatch to
    # the engine after its last byte: up to ~1 s more at this rate
    check(t_learn - t_s <= STALL_S + 2.0, "stop: stall noticed after %.2f s" % (t_learn - t_s))
    late = [r for r in recs if r["worker"] == b["url"] and t_learn + 0.1 < r["t_send"] < t_c]
    check(not late, "stop: %d requests sent to the stalled engine after the router knew (first at +%.0f ms)"
          % (len(late), (late[0]["t_send"] - t_learn) * 1000 if late else 0))
    back = [r["t_send"] for r in load.window(t_c, t_c + 2.0) if r["worker"] == b["url"] and r["ok"]]
    check(back, "stop: the continued engine got no request within 2 s")
    rec = back[0] - t_c
    figures(rows, "engine SIGSTOP 3 s", recs, "%.0f ms after SIGCONT" % (rec * 1000))
    log("stop: stalled %.0f ms after SIGSTOP, back %.0f ms after SIGCONT"
        % ((t_learn - t_s) * 1000, rec * 1000))


def fault_cancel(port, rows, fleet):
    """Clients that leave after 300 ms; load paused."""
    m0 = metrics(port)
    aborts0 = sum(json.loads(sytest.request(m["http_port"], "GET", "/mock/stats")[2])["client_aborts"]
                  for m in fleet)
    worst, recs = 0.0, []
    for i in range(6):
        stream = i % 2 == 0
        body = json.dumps({"model": "m1", "messages": [{"role": "user", "content": "leave %d" % i}],
                           "max_tokens": 200, "stream": stream}).encode()
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                  b"content-length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(0.3)
        check(metric_sum(metrics(port), "switchyard_worker_inflight_requests") == 1,
              "cancel: request %d not in flight" % i)
        s.close()
        t_close = time.time()
        while metric_sum(metrics(port), "switchyard_worker_inflight_requests") != 0:
            check(time.time() - t_close < 2, "cancel: guard of request %d not released" % i)
            time.sleep(0.005)
        dt = time.time() - t_close
        worst = max(worst, dt)
        recs.append({"ok": dt <= 0.1})
        check(dt <= 0.1, "cancel: %s request: the router noticed the client left after %.0f ms"
              % ("streamed" if stream else "non-streamed", dt * 1000))
    m1 = metrics(port)
    check(metric_sum(m1, "switchyard_client_cancels_total") - metric_sum(m0, "switchyard_client_cancels_total") == 6,
          "cancel: client_cancels_total did not grow by 6")
    check(metric_sum(m1, "switchyard_worker_requests_total", outcome="cancelled")
          - metric_sum(m0, "switchyard_worker_requests_total", outcome="cancelled") == 6,
          "cancel: worker outcome cancelled did not grow by 6")
    # the engines saw the streamed requests closed (they notice a streamed
    # abort at once; a non-streamed one only when they would answer)
    aborts = sytest.wait_for("mock client aborts", lambda: (lambda n: n if n - aborts0 >= 3 else None)(
        sum(json.loads(sytest.request(m["http_port"], "GET", "/mock/stats")[2])["client_aborts"]
            for m in fleet)), timeout=3)
    rows.append(("client disconnects (3 streamed, 3 plain)", 6, 6, 0, "noticed in ≤ %.0f ms" % (worst * 1000)))
    log("cancel: 6 clients left, noticed within %.0f ms at worst; engines saw %d stream aborts"
        % (worst * 1000, aborts - aborts0))


def pd_chat(port, stream=False, timeout=15):
    body = {"model": "m1", "messages": [{"role": "user", "content": "pd"}], "max_tokens": 4, "stream": stream}
    try:
        st, h, data = sytest.request(port, "POST", "/v1/chat/completions", body, timeout=timeout)
    except (OSError, http.client.HTTPException):
        return 0, {}, b""
    return st, h, data


def fault_pd(rows):
    fleet = start_fleet("pd", "--prefill", "1", "--decode", "1")
    p = next(m for m in fleet if m["role"] == "prefill")
    dm = next(m for m in fleet if m["role"] == "decode")
    cfg = os.path.join(T, "pd.yaml")
    with open(cfg, "w") as f:
        f.write("model_id: m1\nworkers:\n  - {url: %s, role: prefill, bootstrap_port: %d}\n"
                "  - {url: %s, role: decode}\n" % (p["url"], p["bootstrap_port"], dm["url"]))
    port, _ = start_router("pd", SHM_PD, "--config", cfg)

    def prefills():
        return json.loads(sytest.request(p["http_port"], "GET", "/mock/stats")[2])["requests"]

    sent = ok = 0
    for s in (False, True, False):
        st, _, _ = pd_chat(port, s)
        sent += 1
        ok += st == 200
        check(st == 200, "pd: baseline request %d" % st)
    n0 = prefills()
    # the decode dies: nothing may reach the prefill (from the moment its
    # port refuses connections: until the kernel has closed the listener,
    # a connect still completes into its backlog)
    os.kill(dm["pid"], signal.SIGKILL)
    sytest.wait_refused(dm["http_port"])
    t_k = time.time()
    codes = []
    for i in range(4):
        st, h, _ = pd_chat(port, i % 2 == 1)
        sent += 1
        codes.append((st, h.get("x-router-error-code")))
    check(all(c[0] in (502, 503) for c in codes), "pd: decode dead: %r" % codes)
    check(prefills() == n0, "pd: the prefill got %d requests while its decode was unreachable" % (prefills() - n0))
    check(inflight(SHM_PD) == 0, "pd: in-flight left after decode failures")
    # (log times are cut to the millisecond)
    lines = [l for t, l in log_lines("pd", "PD request .* failed at decode connect") if t >= t_k - 0.002]
    check(lines and re.search(r"bootstrap room [0-9]+, prefill %s, decode %s" % (re.escape(p["url"]), re.escape(dm["url"])),
                              lines[0]), "pd: failure log without room / workers / stage: %r" % lines[:1])
    t_up = restart_mock(dm, os.path.join(T, "pd"))
    t_ok = None
    while time.time() < t_up + 3:
        st, _, _ = pd_chat(port)
        sent += 1
        if st == 200:
            ok += 1
            t_ok = time.time()
            break
        time.sleep(0.05)
    check(t_ok is not None, "pd: no success within 3 s of the decode's restart")
    rows.append(("PD decode (the only one) killed + restarted", sent, ok, sent - ok,
                 "%.0f ms after restart" % ((t_ok - t_up) * 1000)))
    # the prefill fails after both legs were sent: the decode leg is aborted
    sytest.request(p["http_port"], "POST", "/mock/faults", {"fail_rate": 1})
    closed0 = close_wait(dm["http_port"])
    t0 = time.time()
    st, h, data = pd_chat(port, True, timeout=10)
    check(not (st == 200 and b"[DONE]" in data), "pd: stream completed although its prefill failed")
    check(time.time() - t0 < 3, "pd: prefill failure took %.1f s to reach the client" % (time.time() - t0))
    # the router closed the decode leg's connection (the mock, waiting for
    # the room's KV, reads the close only later: its socket sits in
    # CLOSE_WAIT)
    sytest.wait_for("decode leg aborted", lambda: close_wait(dm["http_port"]) > closed0, timeout=2)
    sytest.wait_for("pd guards released", lambda: inflight(SHM_PD) == 0, timeout=2)
    lines = [l for t, l in log_lines("pd", "PD request .* failed at prefill:") if t >= t0 - 0.002]
    check(lines and "bootstrap room" in lines[0], "pd: prefill failure not logged with its room: %r" % lines[:1])
    sytest.request(p["http_port"], "POST", "/mock/faults", {"fail_rate": 0})
    rows.append(("PD prefill answers 500 after send", 1, 0, 1, "decode leg aborted"))
    log("pd: decode dead → %r, prefill untouched; prefill 500 → decode aborted" % sorted(set(codes)))


def main():
    fleet = start_fleet("plain", "--count", "3")
    urls = [m["url"] for m in fleet]
    port, _ = start_router("router", SHM, "--worker-urls", *urls, "--policy", "round_robin",
                           "--access-log", os.path.join(T, "access.jsonl"))
    rows = []
    load = Load(port)
    load.start()
    time.sleep(1.0)
    fault_kill(load, rows, fleet[0], os.path.join(T, "plain"))
    fault_stop(load, rows, fleet[1], SHM)
    load.stop()
    warm = [r for r in load.done if r["t_end"] < T_FIRST_FAULT]
    check(warm and all(r["ok"] for r in warm), "warm-up requests failed")
    time.sleep(0.3)
    check(inflight(SHM) == 0, "in-flight counters not zero after the load: %d" % inflight(SHM))
    fault_cancel(port, rows, fleet)
    check(inflight(SHM) == 0, "in-flight counters not zero after the cancels")
    # failed requests are access-logged with the worker tried
    with open(os.path.join(T, "access.jsonl")) as f:
        entries = [json.loads(l) for l in f]
    check(any(e["status"] == 499 and e["worker"] for e in entries), "access log: no 499 naming a worker")
    fault_pd(rows)
    check(inflight(SHM_PD) == 0, "pd: in-flight counters not zero at the end")
    total = len(load.done)
    log("load: %d requests, %d ok" % (total, sum(r["ok"] for r in load.done)))
    log("| fault | sent | ok | failed | recovery |\n|---|---:|---:|---:|---|")
    for name, s, o, fl, rec in rows:
        log("| %s | %d | %d | %d | %s |" % (name, s, o, fl, rec))
    print("router_faults: 1 passed, 0 failed")


if __name__ == "__main__":
    ok = False
    try:
        main()
        ok = True
    except SystemExit as e:
        ok = not e.code
    finally:
        sytest.stop_procs(procs)
        for d in fleets:
            subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
        for s in (SHM, SHM_PD):
            try:
                os.unlink(s)
            except OSError:
                pass
        if ok:
            shutil.rmtree(T, ignore_errors=True)
    sys.exit(0 if ok else 1)
