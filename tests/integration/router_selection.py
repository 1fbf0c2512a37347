#!/usr/bin/python3
"""router_selection.py ROUTER STATEBUS FLEET MOCK SYCTL — selection across
router processes and the statebus's index mode, with three mock engines a,
b, c (KV events published) and one YAML for the statebus and a router of 2
worker processes: bucket `first` (rank 0, round_robin over a and b) and
bucket `second` (rank 1, round_robin over c).

  index off  no configured policy reads the index (statebus.index auto): the
             statebus says so in the header, builds no tree (0 nodes after
             traffic), subscribes to no KV-event stream, and still keeps load
             and health of every engine;
  rotation   40 requests one after another on fresh connections, spread by
             the kernel over both router processes (access log pids): the
             workers alternate a, b, a, b … across processes (one cursor per
             group in the state plane), every one in bucket `first`;
  metrics    /metrics carries every family of policy-defaults §10 that
             applies (worker_cb_state: the breaker is on), decisions by
             stage, the cache-signal state of each
             engine (index_off) and an empty tree;
  removal    a is removed and re-added 4 times under a steady load from 4
             client threads: a pick that raced a removal inside the router's
             20 ms fleet snapshot window is redone in `first` (on b), so no
             request ever reaches c in `second`; the reselections are counted
             (printed: whether the race was hit depends on timing);
  refusals   --check-config of both daemons refuses statebus.index off with a
             cache_aware group on the local prefix source, naming the key.
Everything started is stopped on exit."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, request  # noqa: E402

ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-rselect.")
SHM = "/dev/shm/sy-test-rselect-%d" % os.getpid()
KEY = "admin-key-0123456789abcdef0123456789"
procs = []
fleet_dir = os.path.join(T, "fleet")
sytest.on_fail(lambda: sytest.print_dir_logs(T))

CHAT = {"model": "m1", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}


def config(rport, urls, extra=""):
    a, b, c = urls
    return """model_id: m1
state: {shm_path: %s}
statebus: {control_endpoint: "ipc://%s.ctl", health_interval_ms: 100, discovery_retry_ms: 200}
workers: [{url: %s}, {url: %s}, {url: %s}]
router: {host: 127.0.0.1, port: %d, processes: 2, access_log: %s, admin_api_key: %s,
         cb_threshold: 5}
buckets:
  - {id: first, rank: 0, groups: {plain: {worker_ids: [%s, %s], policy: {type: round_robin}}}}
  - {id: second, rank: 1, groups: {plain: {worker_ids: [%s], policy: {type: round_robin}}}}
%s""" % (SHM, SHM, a, b, c, rport, os.path.join(T, "access.log"), KEY, a, b, c, extra)


def metrics(rport):
    st, _, body = request(rport, "GET", "/metrics")
    check(st == 200, "/metrics: %d" % st)
    return body.decode()


def sample(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix + " "):
            return float(line.rsplit(" ", 1)[1])
    fail("no sample %s" % prefix)


def main():
    r = subprocess.run([FLEET, "start", "--dir", fleet_dir, "--bin", MOCK, "--count", "3", "--",
                        "--model", "m1"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "mock-fleet: " + r.stderr)
    urls = sorted(e["url"] for e in json.load(open(os.path.join(fleet_dir, "fleet.json"))))
    a, b, c = urls
    rport = sytest.free_port()
    cfg = os.path.join(T, "sy.yaml")
    with open(cfg, "w") as f:
        f.write(config(rport, urls))
    procs.append(subprocess.Popen([STATEBUS, "--config", cfg, "--log-level", "debug"],
                                  stdout=open(os.path.join(T, "statebus.log"), "w"),
                                  stderr=subprocess.STDOUT))

    def healthy():
        if not os.path.exists(SHM):
            return False
        ws = sytest.syctl_json(SYCTL, SHM, "workers")["workers"]
        return len(ws) == 3 and all(w["healthy"] for w in ws)
    sytest.wait_for("3 engines discovered and healthy", healthy, timeout=30)

    # ---- index off: auto, since no group runs cache_aware ----
    hdr = sytest.syctl_json(SYCTL, SHM, "header")
    check(hdr["statebus"]["index"] == "off", "header index mode: %s" % hdr["statebus"])
    check("cursors" in hdr["tables"], "no cursors table in the header: %s" % hdr["tables"])

    sytest.start_router(ROUTER, T, "router", rport, open(cfg).read(), procs)

    # ---- rotation across the two router processes ----
    alog = os.path.join(T, "access.log")
    open(alog, "a").close()

    sent = [0]

    def both_serving():
        sent[0] += 1
        st, _, body = request(rport, "POST", "/v1/chat/completions", CHAT)
        check(st == 200, "warm-up: %d %s" % (st, body[:200]))
        return len({json.loads(x)["pid"] for x in open(alog).read().splitlines()}) == 2
    sytest.wait_for("both router processes serving", both_serving, timeout=30, interval=0.01)
    # a line is written once its response ended: wait for the warm-up's last
    sytest.wait_for("warm-up lines logged", lambda: len(
        [x for x in open(alog).read().splitlines() if "/v1/chat/completions" in x]) == sent[0],
        timeout=10)
    base = len(open(alog).read().splitlines())
    for i in range(40):
        st, h, body = request(rport, "POST", "/v1/chat/completions", CHAT)
        check(st == 200, "request %d: %d %s" % (i, st, body[:200]))
        check(h.get("x-switchyard-bucket") == "first", "request %d in bucket %s"
              % (i, h.get("x-switchyard-bucket")))

    def chat_lines():
        ls = [json.loads(x) for x in open(alog).read().splitlines()[base:]]
        ls = [x for x in ls if x["path"] == "/v1/chat/completions"]
        return ls if len(ls) >= 40 else None
    lines = sytest.wait_for("40 access-log lines", chat_lines, timeout=10)
    check(len(lines) == 40, "access log: %d chat lines, want 40" % len(lines))
    pids = [x["pid"] for x in lines]
    seq = [x["worker"] for x in lines]
    check(len(set(pids)) == 2, "40 fresh connections all on one router process: %s" % set(pids))
    cross = sum(1 for i in range(1, 40) if pids[i] != pids[i - 1])
    for i in range(1, 40):
        check(seq[i] != seq[i - 1], "rotation broke at request %d: %s then %s (pids %d, %d); "
              "sequence %s" % (i, seq[i - 1], seq[i], pids[i - 1], pids[i], seq))
    check(set(seq) == {a, b}, "rotation over %s, want a and b" % set(seq))
    print("rotation: 40 requests alternate a,b over 2 processes (%d process switches)" % cross)

    # ---- index off: no tree, no KV streams, load and health still kept ----
    idx = sytest.syctl_json(SYCTL, SHM, "index")
    check(idx["nodes"] == 0 and idx["stored_blocks"] == 0, "index off but %d nodes, %d stored"
          % (idx["nodes"], idx["stored_blocks"]))
    streams = sytest.syctl_json(SYCTL, SHM, "streams")["streams"]
    check(not any(s["subscribed"] for s in streams), "KV streams subscribed: %s" % streams)
    sytest.wait_for("load reports of all 3 engines", lambda: len(
        [w for w in sytest.syctl_json(SYCTL, SHM, "load")["workers"] if w["fresh"]]) == 3,
        timeout=10)

    # ---- metrics: §10 families, stages, cache-signal state ----
    m = metrics(rport)
    fams = ["requests_total", "responses_total", "worker_requests_total",
            "request_duration_seconds", "ttft_seconds", "stream_outcome_total", "active_load",
            "workers", "worker_health", "worker_cb_state", "worker_inflight_requests",
            "stale_requests_total", "sticky_total", "policy_decisions_total",
            "policy_selection_failures_total", "cache_admission_evaluated_total",
            "cache_admission_rejected_total", "cache_pressure_guard_compared_total",
            "cache_pressure_guard_override_total", "cache_monitor_decisions_total",
            "cache_aware_decisions_total", "diverted_overlap_blocks",
            "input_ids_forwarding_total", "sampling_contract_rejections_total",
            "kv_tree_blocks", "kv_event_decode_failures_total", "kv_event_sequence_gaps_total",
            "kv_event_missing_sequences_total", "kv_event_skipped_batches_total",
            "kv_event_publisher_resets_total", "kv_event_stream_untrusted",
            "worker_cache_signal", "selection_reselected_total"]
    missing = [f for f in fams if "# TYPE switchyard_%s " % f not in m]
    check(not missing, "families missing from /metrics: %s" % missing)
    n = sample(m, 'switchyard_policy_decisions_total{stage="plain",policy="round_robin",'
               'reason="round_robin"}')
    check(n == sent[0] + 40, "plain round_robin decisions: %d, want %d" % (n, sent[0] + 40))
    check(sample(m, "switchyard_kv_tree_blocks") == 0, "kv_tree_blocks not 0 with the index off")
    for u in urls:
        lab = 'worker_url="%s",model_id="m1",mode="plain"' % u
        check(sample(m, 'switchyard_worker_cache_signal{%s,state="index_off"}' % lab) == 1,
              "%s: cache signal not index_off" % u)
        check(sample(m, 'switchyard_worker_cache_signal{%s,state="ok"}' % lab) == 0,
              "%s: cache signal ok with the index off" % u)
    check(sample(m, 'switchyard_input_ids_forwarding_total{outcome="ineligible"}') == sent[0] + 40,
          "input_ids outcomes: the bytes tokenizer forwards no ids")

    # ---- removal races: never to the next bucket ----
    auth = {"authorization": "Bearer " + KEY}
    stop = threading.Event()
    seen, errors = {}, []
    lock = threading.Lock()

    def load():
        while not stop.is_set():
            try:
                st, h, body = request(rport, "POST", "/v1/chat/completions", CHAT, timeout=10)
            except OSError as e:
                with lock:
                    errors.append(repr(e))
                continue
            with lock:
                key = (st, h.get("x-switchyard-bucket"), h.get("x-switchyard-worker"))
                seen[key] = seen.get(key, 0) + 1
    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for cycle in range(4):
            time.sleep(0.3)
            st, _, body = request(rport, "DELETE", "/workers/" + urllib.parse.quote(a, safe=""),
                                  headers=auth)
            check(st == 200, "cycle %d: DELETE %s: %d %s" % (cycle, a, st, body[:200]))
            time.sleep(0.3)
            st, _, body = request(rport, "POST", "/workers",
                                  {"url": a, "role": "plain", "model": "m1"}, headers=auth)
            check(st in (200, 201, 202), "cycle %d: POST %s: %d %s" % (cycle, a, st, body[:200]))

            def back():
                ws = sytest.syctl_json(SYCTL, SHM, "workers")["workers"]
                return any(w["worker"] == a and w["healthy"] for w in ws)
            sytest.wait_for("%s healthy again" % a, back, timeout=15)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=15)
    check(not errors, "connection errors under load: %s" % errors[:3])
    total = sum(seen.values())
    bad = {k: v for k, v in seen.items() if k[0] != 200 or k[1] != "first" or k[2] not in (a, b)}
    check(not bad, "requests outside bucket first / not 200 while a came and went: %s (of %d)"
          % (bad, total))
    resel = sample(metrics(rport), "switchyard_selection_reselected_total")
    print("removal: %d requests over 4 remove/add cycles, all 200 in bucket first; "
          "%d picks redone after a removal race" % (total, resel))

    # ---- refusals ----
    bad_cfg = os.path.join(T, "bad.yaml")
    with open(bad_cfg, "w") as f:
        f.write("model_id: m1\nstatebus: {index: off}\npolicy: {type: cache_aware}\n")
    for prog in (STATEBUS, ROUTER):
        r = subprocess.run([prog, "--config", bad_cfg, "--check-config"], capture_output=True,
                           text=True, timeout=20)
        check(r.returncode != 0, "%s accepted statebus.index off with cache_aware" % prog)
        check("statebus.index" in r.stderr and "use " in r.stderr,
              "%s: refusal does not name the key and the way out: %s" % (prog, r.stderr))
    r = subprocess.run([STATEBUS, "--config", bad_cfg, "--index", "auto", "--check-config"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 0, "--index auto over the file refused: %s" % r.stderr)
    print("router_selection: OK")


def cleanup(ok):
    sytest.stop_procs(procs)
    subprocess.run([FLEET, "stop", "--dir", fleet_dir], capture_output=True, timeout=30)
    sytest.unlink_quiet(SHM, SHM + ".ctl")
    if ok:
        import shutil
        shutil.rmtree(T, ignore_errors=True)


sys.exit(0 if sytest.run_main(main, cleanup) else 1)
