#!/usr/bin/python3
"""router_statebus.py ROUTER STATEBUS FLEET MOCK SYCTL — the router and the
statebus together on one region (DESIGN.md §5).

  adopt     the router starts alone (degraded) and registers the static
            fleet; a statebus started later adopts the very slots (same slot
            and generation), fills in the KV facts from the mocks'
            /server_info, and its fresh load steers power_of_two: with one
            engine queued up (direct streams, bypassing the router), every
            routed request goes to the other one.
  admin     POST / DELETE /workers with --admin-api-key go through the
            statebus control socket (401 without the bearer).
  restart   the statebus is stopped (SIGTERM) and killed (kill -9) and started
            again while requests flow through the router: none fails, and
            the in-flight rows of requests running across the restart stay
            intact (and drop to zero when they end).
  metrics   the router's /metrics carries the region's counters
            (switchyard_kv_event_*) that the statebus produces.
Everything started here is stopped on exit.
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
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import fail, free_port, request  # noqa: E402

ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-rsb.")
SHM = "/dev/shm/sy-test-rsb-%d" % os.getpid()
procs = []
fleets = []


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    for name in ("router.log", "statebus.log"):
        p = os.path.join(T, name)
        if os.path.exists(p):
            with open(p, errors="replace") as f:
                tail = f.read().splitlines()[-30:]
            print("--- %s (tail)\n%s" % (name, "\n".join(tail)), file=sys.stderr)


def cleanup():
    sytest.stop_procs(procs)
    for d in fleets:
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    subprocess.run(["rm", "-rf", T])


def fleet(name, *mock_args):
    d = os.path.join(T, name)
    fleets.append(d)
    return sytest.fleet_one(FLEET, MOCK, d, *mock_args)


def syctl(*args):
    return sytest.syctl_json(SYCTL, SHM, *args)


def by_worker(doc):
    return {w["worker"]: w for w in doc["workers"]}


def wait_for(what, pred, timeout=15.0):
    return sytest.wait_for(what, pred, timeout, interval=0.1)


def chat(port, max_tokens=1, content="x"):
    return request(port, "POST", "/v1/chat/completions",
                   {"model": "m1", "max_tokens": max_tokens,
                    "messages": [{"role": "user", "content": content}]})


def LongStream(port, max_tokens, path="/v1/chat/completions"):
    """A streamed completion held open until close() (the mock frees the
    running slot of a stream whose client goes away at once)."""
    return sytest.HeldStream(port, {"model": "m1", "stream": True, "max_tokens": max_tokens,
                                    "messages": [{"role": "user", "content": "long"}]}, path)


def start_statebus():
    p = subprocess.Popen([STATEBUS, "--config", CFG, "--heartbeat-interval-ms", "200",
                          "--health-interval-ms", "500"],
                         stdout=open(os.path.join(T, "statebus.log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    wait_for("statebus live", lambda: syctl("header")["statebus"]["live"])
    return p


try:
    # Two engines; one running request each, 20 ms per output token.
    a = fleet("a", "--model", "m1", "--max-running", "1", "--decode-us-per-token", "20000",
              "--load-interval-ms", "200")
    b = fleet("b", "--model", "m1", "--max-running", "1", "--decode-us-per-token", "20000",
              "--load-interval-ms", "200")
    c = fleet("c", "--model", "m1", "--load-interval-ms", "200")
    A, B, C = a["url"], b["url"], c["url"]
    PORT = free_port()
    CFG = os.path.join(T, "sy.yaml")
    with open(CFG, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\nworker_urls: [%s, %s]\n"
                "router: {host: 127.0.0.1, port: %d, processes: 2, admin_api_key: sekrit}\n"
                "policy: {type: power_of_two}\n"
                # power_of_two reads no index (auto would build none): the
                # KV-event counters below need the statebus to ingest
                "statebus: {index: on}\n" % (SHM, A, B, PORT))

    # ---- adopt: degraded start, then a statebus adopts the slots ----------
    rp = subprocess.Popen([ROUTER, "--config", CFG],
                          stdout=open(os.path.join(T, "router.log"), "a"), stderr=subprocess.STDOUT)
    procs.append(rp)
    def readyz():
        try:
            return request(PORT, "GET", "/readyz", timeout=2)[0] == 200
        except OSError:
            return False
    wait_for("router ready", readyz)
    before = by_worker(syctl("workers"))
    if set(before) != {A, B}:
        fail("degraded mode did not register the static fleet: %s" % list(before))
    if syctl("header")["statebus"]["live"]:
        fail("statebus reported live before it started")
    for w in by_worker(syctl("load")).values():
        if w["fresh"]:
            fail("load fresh without a statebus: %s" % w)
    seen = set()
    for _ in range(16):
        st, h, body = chat(PORT)
        if st != 200:
            fail("degraded request: %d %s" % (st, body[:200]))
        seen.add(h.get("x-switchyard-worker"))
    if seen != {A, B}:
        fail("degraded power_of_two (tied local load) did not spread: %s" % seen)
    log("adopt: degraded mode registered %s" % sorted(before))

    sb = start_statebus()
    def adopted():
        now = by_worker(syctl("workers"))
        return now if all(now.get(u, {}).get("kv_events", {}).get("block_size") == 16 and
                          now[u]["kv_events"].get("endpoint_port_base") == f["kv_port"]
                          for u, f in ((A, a), (B, b))) else None
    after = wait_for("KV facts discovered from /server_info", adopted)
    for u in (A, B):
        if (after[u]["slot"], after[u]["generation"]) != (before[u]["slot"], before[u]["generation"]):
            fail("slot not adopted: %s before %s after %s" % (u, before[u], after[u]))
    wait_for("fresh load for both", lambda: all(w["fresh"] for w in syctl("load")["workers"]))

    # Queue A up directly: one running, two waiting (each stream 200 tokens = 4 s).
    hold = [LongStream(a["http_port"], 200) for _ in range(3)]
    wait_for("A's queue in the load table",
             lambda: (lambda w: w["fresh"] and (w["num_waiting_reqs"] or 0) >= 2)(
                 by_worker(syctl("load"))[A]))
    served = [chat(PORT)[1].get("x-switchyard-worker") for _ in range(12)]
    if served.count(B) != 12:
        fail("power_of_two ignored the statebus's load: %s" % served)
    for s in hold:
        s.close()
    wait_for("A drained", lambda: (by_worker(syctl("load"))[A]["num_waiting_reqs"] or 0) == 0 and
             (by_worker(syctl("load"))[A]["num_running_reqs"] or 0) == 0)
    log("adopt: slots kept, KV facts discovered, routing follows the statebus's load")

    # ---- metrics: the region's counters on the router's /metrics ----------
    st, _, m = request(PORT, "GET", "/metrics")
    text = m.decode()
    ctr = syctl("streams")["counters"]
    for name in ("switchyard_kv_event_batches_total", "switchyard_load_reports_total"):
        line = [l for l in text.splitlines() if l.startswith(name + " ")]
        if not line:
            fail("/metrics lacks %s" % name)
        if int(line[0].split()[1]) <= 0 or ctr[name] <= 0:
            fail("%s not counting: %s / %s" % (name, line[0], ctr[name]))
        if "# TYPE %s counter" % name not in text:
            fail("no TYPE line for " + name)
    log("metrics: region counters exposed")

    # ---- admin through the control socket ---------------------------------
    auth = {"authorization": "Bearer sekrit"}
    st, _, _ = request(PORT, "POST", "/workers", {"url": C, "role": "plain", "model": "m1"})
    if st != 401:
        fail("POST /workers without bearer: %d" % st)
    st, _, _ = request(PORT, "GET", "/workers")
    if st != 401:
        fail("GET /workers without bearer: %d" % st)
    st, _, body = request(PORT, "POST", "/workers", {"url": C, "role": "plain", "model": "m1"}, auth)
    if st not in (200, 201):
        fail("POST /workers: %d %s" % (st, body[:300]))
    wait_for("C discovered by the statebus",
             lambda: by_worker(syctl("workers")).get(C, {}).get("kv_events", {}).get("block_size") == 16)
    st, _, body = request(PORT, "GET", "/workers", headers=auth)
    d = json.loads(body)
    if st != 200 or not d.get("statebus_live") or C not in [w["worker"] for w in d["workers"]]:
        fail("GET /workers after add: %d %s" % (st, body[:300]))
    enc = urllib.parse.quote(C, safe="")
    st, _, _ = request(PORT, "DELETE", "/workers/" + enc)
    if st != 401:
        fail("DELETE without bearer: %d" % st)
    st, _, body = request(PORT, "DELETE", "/workers/" + enc, headers=auth)
    if st != 200:
        fail("DELETE /workers: %d %s" % (st, body[:300]))
    wait_for("C removed", lambda: C not in by_worker(syctl("workers")))
    log("admin: POST/DELETE /workers through the statebus control socket")

    # ---- restart under traffic --------------------------------------------
    errors = []
    done = threading.Event()
    count = [0]

    def flow():
        while not done.is_set():
            try:
                st, _, body = chat(PORT, max_tokens=2)
                if st != 200:
                    errors.append((st, body[:200]))
                count[0] += 1
            except Exception as e:  # noqa: BLE001 — any failure is a dropped request
                errors.append(repr(e))
    threads = [threading.Thread(target=flow, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()

    def inflight():
        return {w["worker"]: w["in_flight"] for w in syctl("inflight")["workers"]}
    for how in ("SIGTERM", "SIGKILL"):
        # Two routed streams in flight across the restart (3 s each).
        longs = [LongStream(PORT, 150) for _ in range(2)]
        wait_for("long streams in flight", lambda: sum(inflight().values()) >= 2)
        time.sleep(0.3)
        sb.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
        sb.wait(timeout=10)
        time.sleep(0.5)
        if sum(inflight().values()) < 2:
            fail("in-flight rows lost when the statebus went (%s): %s" % (how, inflight()))
        sb = start_statebus()
        if sum(inflight().values()) < 2:
            fail("in-flight rows lost across a statebus restart (%s): %s" % (how, inflight()))
        for s in longs:
            s.join(timeout=15)
            if b"[DONE]" not in s.data:
                fail("stream across the restart (%s) did not complete: %r" % (how, s.data[-200:]))
            s.close()
        log("restart (%s): in-flight rows intact, streams completed" % how)
    done.set()
    for t in threads:
        t.join(timeout=30)
    if errors:
        fail("requests failed during statebus restarts: %s" % errors[:5])
    if count[0] < 20:
        fail("too few requests flowed: %d" % count[0])
    wait_for("in-flight back to zero", lambda: sum(inflight().values()) == 0)
    wait_for("load fresh again", lambda: all(w["fresh"] for w in syctl("load")["workers"]))
    log("restart: %d requests, none failed" % count[0])
    log("router_statebus: OK")
finally:
    cleanup()
