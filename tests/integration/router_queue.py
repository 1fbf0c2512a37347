#!/usr/bin/python3
"""router_queue.py ROUTER MOCK SYCTL — the router queue (DESIGN.md §9
"Queueing"; router/http/queue_run.h) against mock engines on 127.0.0.1.

  burst      40 requests at once on 2 engines capped at 2 in flight each
             (--max-inflight-requests 2, the mocks run 2 at a time): all
             200, none waited at an engine (the mock's queue time stays
             under a decode step: nothing started while its engine was at
             the cap), and the router queue admitted them.
  processes  the same burst on a router with 4 processes: all 200, no
             engine over its cap, waits in more than one process (syctl
             queue).
  priority   one engine capped at 1: bulk requests queued first, interactive
             ones (x-smg-priority) after; every interactive one ends before
             any bulk one.
  fairness   two tenants (x-tenant, equal weight) in closed loops of 8 and 3
             clients on 2 places: completions within 10 % of each other.
  concurrency  --max-concurrent-requests 3 over 2 processes on an engine
             that would run 16: 24 at once all 200, the engine never runs
             more than 3, no token left behind.
  models     a request for an idle model is not held up behind requests
             queued for a saturated one.
  limits     queue size 2 and a 1 s timeout: a third waiting request gets
             503 at once (rejected_full), the others 503 after their
             deadline (one shortened to 300 ms by its header), each with
             the admission details and Retry-After; a client that leaves
             the queue is counted cancelled at once.
Everything started here is stopped on exit.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, free_port, request  # noqa: E402

ROUTER, MOCK, SYCTL = sys.argv[1:4]
T = tempfile.mkdtemp(prefix="sy-rq.")
procs = []
shms = []


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    sytest.print_dir_logs(T)


def mock(name, *args, model="m"):
    port = free_port()
    p = subprocess.Popen([MOCK, "--port", str(port), "--model", model] + list(args),
                         stdout=open(os.path.join(T, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    sytest.wait_for("mock %s" % name, lambda: _up(port), timeout=15)
    return port


def _up(port):
    try:
        return request(port, "GET", "/health", timeout=2)[0] == 200
    except OSError:
        return False


def router(name, engines, *flags, model_id=True):
    port = free_port()
    shm = "/dev/shm/sy-test-rq-%d-%s" % (os.getpid(), name)
    shms.append(shm)
    p = subprocess.Popen([ROUTER, "--port", str(port), "--shm", shm]
                         + (["--model-id", "m"] if model_id else []) + ["--worker-urls"] + ["http://127.0.0.1:%d" % e for e in engines]
                         + list(flags),
                         stdout=open(os.path.join(T, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    sytest.wait_router_ready(p, port, name, timeout=20)
    return p, port, shm


def post(port, tokens, headers=None, prompt="hello", timeout=60, model="m"):
    body = {"model": model, "prompt": prompt, "max_tokens": tokens}
    return request(port, "POST", "/v1/completions", body, headers, timeout=timeout)


def metric(port, name):
    _, _, body = request(port, "GET", "/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name):
            total += float(line.rsplit(" ", 1)[1])
    return total


def mock_stats(port):
    return json.loads(request(port, "GET", "/mock/stats")[2])


def burst(port, n, tokens):
    out = [None] * n

    def one(i):
        try:
            out[i] = post(port, tokens, prompt="burst %d" % i)
        except OSError as e:
            out[i] = (0, {}, str(e).encode())
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def stop(p):
    sytest.stop_procs([p])
    procs.remove(p)


def check_engines_never_over_cap(engines, cap, decode_ms):
    for e in engines:
        q = mock_stats(e)["queue"]
        check(q["peak_running"] <= cap, "engine %d ran %d at once (cap %d)" %
              (e, q["peak_running"], cap))
        # a request that arrived at a full engine waits for a running one to end
        check(q["max_ms"] < decode_ms, "a request waited %.1f ms at engine %d: it started "
              "while the engine was at its cap" % (q["max_ms"], e))


def test_burst(engines):
    for e in engines:
        request(e, "POST", "/mock/reset")
    p, port, _ = router("burst", engines, "--max-inflight-requests", "2")
    res = burst(port, 40, 8)
    bad = [r for r in res if r[0] != 200]
    check(not bad, "burst: %d of 40 not 200: %s" % (len(bad), bad[:2]))
    check_engines_never_over_cap(engines, 2, 40)
    admitted = metric(port, 'switchyard_queue_requests_total{class="default",outcome="admitted"}')
    check(admitted >= 20, "burst: only %d requests went through the queue" % admitted)
    log("burst: 40/40 ok, %d through the queue, engines never over 2" % admitted)
    stop(p)


def test_processes(engines):
    for e in engines:
        request(e, "POST", "/mock/reset")
    p, port, shm = router("procs", engines, "--max-inflight-requests", "2", "--processes", "4")
    res = burst(port, 40, 8)
    bad = [r for r in res if r[0] != 200]
    check(not bad, "processes: %d of 40 not 200: %s" % (len(bad), bad[:2]))
    check_engines_never_over_cap(engines, 2, 40)
    q = sytest.syctl_json(SYCTL, shm, "queue")
    waited = [x for x in q["procs"] if x["outcomes"]["admitted"] > 0]
    check(len(q["procs"]) == 4, "syctl queue lists %d router processes" % len(q["procs"]))
    check(len(waited) >= 2, "requests waited in %d process(es) only: %s" % (len(waited), q))
    check(q["waiting"] == 0 and q["running"] == 0, "queue not empty after the burst: %s" % q)
    log("processes: 40/40 ok over 4 processes, waits in %d of them" % len(waited))
    stop(p)


def test_priority(engine):
    p, port, _ = router("prio", [engine], "--max-inflight-requests", "1",
                        "--tenant-max-priority", "interactive")
    done = {}
    lock = threading.Lock()

    def one(tag, tokens, prio):
        st = post(port, tokens, {"x-smg-priority": prio}, prompt=tag)[0]
        with lock:
            done[tag] = (time.monotonic(), st)
    hold = threading.Thread(target=one, args=("hold", 150, "default"))  # ~1.5 s
    hold.start()
    time.sleep(0.15)
    ts = []
    for i in range(4):
        ts.append(threading.Thread(target=one, args=("bulk%d" % i, 4, "bulk")))
        ts[-1].start()
    sytest.wait_for("4 bulk requests queued", lambda: metric(
        port, 'switchyard_queue_depth{class="bulk"}') == 4, timeout=5, interval=0.02)
    for i in range(4):
        ts.append(threading.Thread(target=one, args=("int%d" % i, 4, "interactive")))
        ts[-1].start()
    sytest.wait_for("4 interactive requests queued", lambda: metric(
        port, 'switchyard_queue_depth{class="interactive"}') == 4, timeout=5, interval=0.02)
    check("hold" not in done, "the holding request ended before the queue filled (slow "
          "machine?)")
    for t in ts + [hold]:
        t.join()
    check(all(v[1] == 200 for v in done.values()), "priority: not all 200: %s" % done)
    last_int = max(done["int%d" % i][0] for i in range(4))
    first_bulk = min(done["bulk%d" % i][0] for i in range(4))
    check(last_int < first_bulk, "an interactive request ended %.0f ms after the first bulk "
          "one" % ((last_int - first_bulk) * 1000))
    log("priority: 4 interactive (sent after 4 bulk) all ended before the first bulk")
    stop(p)


def test_fairness(engine):
    p, port, _ = router("fair", [engine], "--max-inflight-requests", "2",
                        "--tenant-header", "x-tenant")
    stop_at = time.monotonic() + 6.0
    count = {"a": 0, "b": 0}
    errors = []
    lock = threading.Lock()

    def client(tenant):
        while time.monotonic() < stop_at:
            st = post(port, 2, {"x-tenant": tenant}, prompt=tenant)[0]
            now = time.monotonic()
            with lock:
                if st != 200:
                    errors.append(st)
                elif stop_at - 5.0 <= now < stop_at:  # the first second warms up
                    count[tenant] += 1
    ts = [threading.Thread(target=client, args=("a",)) for _ in range(8)]
    ts += [threading.Thread(target=client, args=("b",)) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors, "fairness: non-200 answers %s" % errors[:5])
    a, b = count["a"], count["b"]
    check(min(a, b) > 20, "fairness: too few completions to compare (%d, %d)" % (a, b))
    check(abs(a - b) <= 0.1 * max(a, b), "fairness: tenant a (8 clients) got %d, tenant b "
          "(3 clients) %d: not within 10 %%" % (a, b))
    log("fairness: tenant a (8 clients) %d, tenant b (3 clients) %d completions" % (a, b))
    stop(p)


def test_limits(engine):
    p, port, _ = router("limits", [engine], "--max-inflight-requests", "1",
                        "--queue-size", "2", "--queue-timeout-secs", "1")
    res = {}

    def one(tag, tokens, headers=None):
        t0 = time.monotonic()
        r = post(port, tokens, headers, prompt=tag)
        res[tag] = (r, time.monotonic() - t0)
    hold = threading.Thread(target=one, args=("hold", 250))  # ~2.5 s at the engine
    hold.start()
    time.sleep(0.2)
    qa = threading.Thread(target=one, args=("qa", 2))
    qb = threading.Thread(target=one, args=("qb", 2, {"x-switchyard-queue-timeout-ms": "300"}))
    qa.start()
    qb.start()
    time.sleep(0.1)
    one("full", 2)
    (st, h, body), took = res["full"]
    check(st == 503 and "retry-after" in h, "full queue: %d %s" % (st, h))
    err = json.loads(body)["error"]
    check(err["code"] == "policy_selection_failed" and err.get("details") and
          "full" in err["message"], "full queue body: %s" % body)
    check(took < 0.5, "full queue answered after %.2f s" % took)
    qb.join()
    (st, h, body), took = res["qb"]
    check(st == 503 and "retry-after" in h and 0.25 < took < 0.9,
          "header deadline 300 ms: %d after %.2f s" % (st, took))
    check(json.loads(body)["error"].get("details"), "timeout body has no details: %s" % body)
    qa.join()
    (st, h, body), took = res["qa"]
    check(st == 503 and 0.9 < took < 2.0, "queue timeout 1 s: %d after %.2f s" % (st, took))
    err = json.loads(body)["error"]
    check(err["code"] == "policy_selection_failed" and err["details"][0]["limit"] ==
          "max_inflight_requests" and "waited" in err["message"], "timeout body: %s" % body)
    # a client that leaves while queued is out at once
    before = metric(port, 'switchyard_queue_requests_total{class="default",outcome="cancelled"}')
    s = socket.create_connection(("127.0.0.1", port))
    data = json.dumps({"model": "m", "prompt": "gone", "max_tokens": 2})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n%s" % (len(data), data)).encode())
    sytest.wait_for("the request queued", lambda: metric(
        port, 'switchyard_queue_depth{class="default"}') >= 1, timeout=5)
    s.close()
    sytest.wait_for("the cancel counted", lambda: metric(
        port, 'switchyard_queue_requests_total{class="default",outcome="cancelled"}') > before,
        timeout=1.0, interval=0.02)
    check(metric(port, 'switchyard_queue_depth{class="default"}') == 0, "queue not empty")
    hold.join()
    check(res["hold"][0][0] == 200, "the holding request: %s" % (res["hold"][0][:1],))
    timed = metric(port, 'switchyard_queue_requests_total{class="default",outcome="timed_out"}')
    full = metric(port, 'switchyard_queue_requests_total{class="default",outcome="rejected_full"}')
    check(timed == 2 and full == 1, "outcomes timed_out %d rejected_full %d" % (timed, full))
    log("limits: full → 503 at once, 300 ms header and 1 s deadlines → 503 with details, "
        "cancel counted")
    stop(p)


def test_concurrency(engine):
    request(engine, "POST", "/mock/reset")
    p, port, shm = router("conc", [engine], "--max-concurrent-requests", "3",
                          "--processes", "2")
    res = burst(port, 24, 6)
    bad = [r for r in res if r[0] != 200]
    check(not bad, "concurrency cap: %d of 24 not 200: %s" % (len(bad), bad[:2]))
    peak = mock_stats(engine)["queue"]["peak_running"]
    check(peak <= 3, "concurrency cap 3 over 2 processes: the engine ran %d at once" % peak)
    q = sytest.syctl_json(SYCTL, shm, "queue")
    check(q["running"] == 0 and q["waiting"] == 0, "tokens or waiters left: %s" % q)
    check(sum(x["outcomes"]["admitted"] for x in q["procs"]) >= 12,
          "the cap queued too few requests: %s" % q)
    log("concurrency: 24/24 ok under --max-concurrent-requests 3 over 2 processes, engine "
        "peak %d" % peak)
    stop(p)


def test_models(engine_m, engine_n):
    p, port, _ = router("models", [engine_m, engine_n], "--max-inflight-requests", "1",
                        model_id=False)
    res = {}

    def one(tag, tokens, model):
        t0 = time.monotonic()
        res[tag] = (post(port, tokens, prompt=tag, model=model)[0], time.monotonic() - t0)
    ts = [threading.Thread(target=one, args=("hold", 100, "m"))]  # ~1 s
    ts[0].start()
    time.sleep(0.1)
    for i in range(8):
        ts.append(threading.Thread(target=one, args=("m%d" % i, 2, "m")))
        ts[-1].start()
    sytest.wait_for("8 requests for m queued", lambda: metric(
        port, 'switchyard_queue_depth{class="default"}') == 8, timeout=5, interval=0.02)
    one("n", 2, "n")
    st, took = res["n"]
    check(st == 200 and took < 0.6 and "hold" not in res,
          "a request for an idle model behind 8 queued for a saturated one: %d after %.2f s"
          % (st, took))
    for t in ts:
        t.join()
    check(all(v[0] == 200 for v in res.values()), "models: not all 200: %s" % res)
    log("models: a request for n passed 8 queued for saturated m in %.0f ms" % (took * 1000))
    stop(p)


def main():
    a = mock("a", "--max-running", "2", "--decode-us-per-token", "10000")
    b = mock("b", "--max-running", "2", "--decode-us-per-token", "10000")
    test_burst([a, b])
    test_processes([a, b])
    c = mock("c", "--max-running", "2", "--decode-us-per-token", "10000")
    test_priority(c)
    test_fairness(c)
    test_limits(c)
    d = mock("d", "--max-running", "16", "--decode-us-per-token", "10000")
    test_concurrency(d)
    n = mock("n", "--max-running", "2", "--decode-us-per-token", "10000", model="n")
    test_models(d, n)
    log("router_queue: ok")


def cleanup(ok):
    sytest.stop_procs(procs)
    for s in shms:
        subprocess.run([SYCTL, "--shm", s, "destroy"], capture_output=True)
    subprocess.run(["rm", "-rf", T])


sys.exit(0 if sytest.run_main(main, cleanup) else 1)
