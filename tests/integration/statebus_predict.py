#!/usr/bin/python3
"""statebus_predict.py STATEBUS SYCTL — predicted ownership end to end: a real
switchyard-statebus on loopback, fake SGLang engines (sytest.KvEngine), and
predictions pushed with `syctl predict` through the prediction ring.

Proves: a pushed prediction becomes visible in `syctl match --json` as
predicted depth; the engine's BlockStored confirms part of it (confirmed
depth grows, predicted depth shrinks, counted); the rest expires after
statebus.prediction_ttl_ms and no earlier; an engine without KV events is
reported as `predicted` in `syctl workers` and its predictions are bounded
by its capacity (max_total_num_tokens / page_size blocks, oldest evicted).
Every wait polls with a deadline. Run with /usr/bin/python3.
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, wait_for  # noqa: E402

STATEBUS, SYCTL = sys.argv[1:3]
SHM = "/dev/shm/sy-test-pred-%d" % os.getpid()
LOG = "/tmp/sy-test-pred-%d.log" % os.getpid()
TTL_MS = 3000
procs = []


def syctl(*args):
    return sytest.syctl_json(SYCTL, SHM, *args)


def match(hashes):
    m = syctl("match", "--hashes", ",".join(str(h) for h in hashes))
    return {x["worker"]: (x["depth"], x["predicted_depth"]) for x in m["matches"]}


def workers():
    return {w["worker"]: w for w in syctl("workers")["workers"]}


def predict(url, hashes):
    out = subprocess.run([SYCTL, "--shm", SHM, "predict", "--worker", url, "--hashes",
                          ",".join(str(h) for h in hashes)], capture_output=True, text=True,
                         timeout=10)
    check(out.returncode == 0, "syctl predict: %s" % out.stderr)


@sytest.on_fail
def statebus_log():
    sys.stderr.write("---- statebus log ----\n")
    sytest.print_tail(LOG)


def main():
    a = sytest.KvEngine(block_size=4, max_total_num_tokens=4096)  # KV events
    c = sytest.KvEngine(kv=False, max_total_num_tokens=16, page_size=4)  # none: 4 blocks
    log = open(LOG, "wb")
    procs.append(sytest.start_statebus(STATEBUS, SHM, [a.url, c.url], log,
                                       "--prediction-ttl-ms", str(TTL_MS)))
    a.wait_subscribed()
    w = wait_for("discovery", lambda: (lambda ws: ws if a.url in ws and c.url in ws and
                 ws[a.url]["kv_events"]["block_size"] == 4 and
                 ws[c.url]["health_checked_age_ms"] is not None and
                 ws[c.url]["predicted"]["capacity_blocks"] == 4 else None)(workers()))
    check(w[a.url]["cache_signal"] == "events", w[a.url])
    check(w[a.url]["predicted"]["capacity_blocks"] == 1024, w[a.url])
    check(w[c.url]["cache_signal"] == "predicted", w[c.url])

    # ---- predicted entry visible -------------------------------------------
    chain = [101, 102, 103, 104]
    t0 = time.monotonic()
    predict(a.url, chain)
    wait_for("prediction visible", lambda: match(chain).get(a.url) == (4, 4), timeout=5)

    # ---- confirmed by the engine's BlockStored -------------------------------
    a.send_kv(0, [["BlockStored", chain[:2], None, list(range(8)), 4, None, "GPU"]])
    wait_for("confirmation", lambda: match(chain).get(a.url) == (4, 2), timeout=5)
    p = workers()[a.url]["predicted"]
    # read before the TTL: the two unconfirmed blocks are still there
    check(time.monotonic() - t0 < TTL_MS / 1000.0, "setup too slow to observe the TTL")
    check(p["confirmed"] == 2 and p["blocks"] == 2, p)

    # ---- the unconfirmed rest expires after the TTL, not before ---------------
    wait_for("expiry", lambda: match(chain).get(a.url) == (2, 0), timeout=TTL_MS / 1000.0 + 3)
    waited = time.monotonic() - t0
    check(waited >= TTL_MS / 1000.0 * 0.95, "expired after %.3f s, TTL %d ms" % (waited, TTL_MS))
    p = workers()[a.url]["predicted"]
    check(p["expired"] == 2 and p["blocks"] == 0, p)

    # ---- approximate mode: capacity bounds an engine without KV events -------
    predict(c.url, [201, 202, 203, 204, 205, 206])
    wait_for("capacity cut", lambda: match([201, 202, 203, 204, 205, 206]).get(c.url) == (4, 4),
             timeout=5)
    predict(c.url, [301, 302])
    wait_for("oldest evicted", lambda: match([301, 302]).get(c.url) == (2, 2), timeout=5)
    p = workers()[c.url]["predicted"]
    check(p["blocks"] == 4 and p["evicted"] == 2, p)
    # the evicted blocks were the chain's last ones predicted first: 201, 202
    check(match([201, 202, 203, 204]).get(c.url) is None, match([201, 202, 203, 204]))

    # ---- counters ------------------------------------------------------------
    h = syctl("header")
    check(h["layout_version"] >= 5, h)  # prediction rings since layout 5
    sytest.stop_procs(procs)
    check(procs[0].returncode == 0, "statebus exit status %d" % procs[0].returncode)
    a.close()
    c.close()
    print("statebus_predict: 1 passed, 0 failed")


if __name__ == "__main__":
    def cleanup(ok):
        sytest.kill_procs(procs)
        sytest.unlink_quiet(SHM, LOG)
    os._exit(0 if sytest.run_main(main, cleanup) else 1)
