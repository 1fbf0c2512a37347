#!/usr/bin/python3
"""router_predict.py ROUTER STATEBUS MOCK SYCTL — cache-aware routing without
KV events (approximate mode): three mock engines that publish no KV events
(block 16 from /server_info's page_size), the statebus, and a cache_aware
router with two worker processes. The router hands each dispatched prompt's
block chain to the statebus as predicted ownership of the chosen engine; the
statebus records it in the index, so:

  stick    6 prefixes × 3 requests in a row: requests 2 and 3 of a prefix go
           to the engine of its first request, decided as cache_candidate
           (without predictions every one would be no_cache_candidate);
  spread   the 6 prefixes are spread over at least 2 engines;
  state    `syctl workers --json` reports every engine's cache signal as
           `predicted`, with predicted blocks on the engines that served and
           none on an engine that served nothing.
Everything started is stopped on exit."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, request  # noqa: E402

ROUTER, STATEBUS, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-rpredict.")
SHM = "/dev/shm/sy-test-rpredict-%d" % os.getpid()
procs = []
sytest.on_fail(lambda: sytest.print_dir_logs(T))


def main():
    ports = [sytest.free_port() for _ in range(3)]
    urls = ["http://127.0.0.1:%d" % p for p in ports]
    for p in ports:
        procs.append(subprocess.Popen(
            [MOCK, "--host", "127.0.0.1", "--port", str(p), "--block-size", "16",
             "--served-model-name", "m1"],
            stdout=open(os.path.join(T, "mock-%d.log" % p), "w"), stderr=subprocess.STDOUT))
    sb_log = open(os.path.join(T, "statebus.log"), "w")
    procs.append(sytest.start_statebus(STATEBUS, SHM, urls, sb_log))

    def discovered():
        if not os.path.exists(SHM):
            return False
        ws = sytest.syctl_json(SYCTL, SHM, "workers")["workers"]
        return len(ws) == 3 and all(w["healthy"] and w["cache_signal"] == "predicted" for w in ws)
    sytest.wait_for("3 engines discovered without KV events", discovered, timeout=20)

    rport = sytest.free_port()
    sytest.start_router(ROUTER, T, "router", rport, """
model_id: m1
state: {shm_path: %s}
statebus: {control_endpoint: "ipc://%s.ctl"}
workers: [%s]
router: {host: 127.0.0.1, port: %d, processes: 2}
policy: {type: cache_aware}
""" % (SHM, SHM, ", ".join("{url: %s}" % u for u in urls), rport), procs)

    def blocks_of(url):
        ws = sytest.syctl_json(SYCTL, SHM, "workers")["workers"]
        return next(w["predicted"]["blocks"] for w in ws if w["worker"] == url)

    first = {}
    for k in range(6):
        prefix = ("prefix %d " % k) + " ".join("w%d_%d" % (k, i) for i in range(1500))
        for turn in range(3):
            held = {u: blocks_of(u) for u in urls} if turn == 0 else None
            st, h, body = request(rport, "POST", "/v1/chat/completions", {
                "model": "m1", "max_tokens": 2,
                "messages": [{"role": "user", "content": "%s turn %d" % (prefix, turn)}]})
            check(st == 200, "prefix %d turn %d: status %d %s" % (k, turn, st, body[:200]))
            worker, reason = h.get("x-switchyard-worker"), h.get("x-switchyard-reason")
            if turn == 0:
                first[k] = worker
                # The statebus drains the prediction rings every
                # prediction_drain_ms (2): wait until it recorded this one.
                sytest.wait_for("prefix %d predicted on %s" % (k, worker),
                                lambda: blocks_of(worker) > held[worker], timeout=5)
                continue
            check(worker == first[k], "prefix %d turn %d went to %s, its first request to %s"
                  % (k, turn, worker, first[k]))
            check(reason == "cache_candidate", "prefix %d turn %d: reason %s, want cache_candidate"
                  % (k, turn, reason))
    used = set(first.values())
    check(len(used) >= 2, "6 prefixes all on one engine: %s" % used)

    ws = {w["worker"]: w for w in sytest.syctl_json(SYCTL, SHM, "workers")["workers"]}
    for u in urls:
        blocks = ws[u]["predicted"]["blocks"]
        if u in used:
            check(blocks > 0, "%s served prefixes but holds no predicted block" % u)
        else:
            check(blocks == 0, "%s served nothing but holds %d predicted blocks" % (u, blocks))
    print("router_predict: sticky on predictions, %d engines used" % len(used))


def cleanup(ok):
    sytest.stop_procs(procs)
    sytest.unlink_quiet(SHM, SHM + ".ctl")
    if ok:
        import shutil
        shutil.rmtree(T, ignore_errors=True)


sys.exit(0 if sytest.run_main(main, cleanup) else 1)
