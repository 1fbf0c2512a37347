#!/usr/bin/python3
"""router_cache.py ROUTER STATEBUS FLEET MOCK SYCTL — KV-cache-aware routing
end to end: four mock engines (block 16, 8,192-token
caches so eviction happens, 20 µs prefill per uncached token), a statebus
feeding the radix index from their KV events, and routers on one region.

  converge  router A (cache_aware, 2 worker processes) and router B
            (cache_aware, 1 process, a separate instance on the same
            region): requests sharing a 2.6k-token system prompt all go to
            the engine that served the first one (reason cache_candidate),
            whichever router and router process takes them; the mocks'
            /mock/stats show the cached tokens on that engine only. The
            digest memo misses on router A show that both of its processes
            hashed (and routed) the prefix.
  spread    12 distinct 2.6k-token prefixes, 3 requests each: each prefix
            sticks to the engine of its first request, and the prefixes
            spread over at least 3 of the 4 engines (load fallback on a miss).
  metrics   router A's /metrics: cache_aware decisions (cache_hit,
            cache_miss), digest memo hits/misses and local prefix-source
            outcomes, summed over its processes, match what was sent.
  session   routers S1 (session_aware, 2 processes) and S2 (1 process):
            20 sessions x 3 turns, turns alternating S1/S2/S1, each session
            stays on one engine; sessions spread.
The default cache_affinity_min_matched_tokens (1024) is kept: the shared
prefixes are longer than 2,048 tokens. Everything started is stopped on exit.
"""
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-rcache.")
SHM = "/dev/shm/sy-test-rcache-%d" % os.getpid()
DEADLINE = time.time() + 110
procs = []
fleets = []
rng = random.Random(6)


def log(msg):
    print(msg, flush=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    for name in sorted(os.listdir(T)):
        if name.endswith(".log"):
            with open(os.path.join(T, name), errors="replace") as f:
                tail = f.read().splitlines()[-20:]
            print("--- %s (tail)\n%s" % (name, "\n".join(tail)), file=sys.stderr)
    sys.exit(1)


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=8)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for d in fleets:
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    subprocess.run(["rm", "-rf", T])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def syctl(*args, may_fail=False):
    r = subprocess.run([SYCTL, "--shm", SHM] + list(args) + ["--json"], capture_output=True,
                       text=True, timeout=10)
    if r.returncode != 0 and may_fail:
        return None
    if r.returncode != 0:
        fail("syctl %s: %s" % (" ".join(args), r.stderr))
    return json.loads(r.stdout)


def wait_for(what, pred, timeout=15.0):
    end = min(time.time() + timeout, DEADLINE)
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def request(port, method, path, body=None, headers=None, timeout=20):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"content-type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=json.dumps(body) if isinstance(body, dict) else body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()


def prefix(n_chars):
    out = []
    while sum(len(w) + 1 for w in out) < n_chars:
        out.append(rng.choice(WORDS))
    return " ".join(out)


def chat(port, system, user, session=None):
    h = {"x-session-id": session} if session else {}
    st, hd, body = request(port, "POST", "/v1/chat/completions",
                           {"model": "m1", "max_tokens": 4,
                            "messages": [{"role": "system", "content": system},
                                         {"role": "user", "content": user}]}, h)
    if st != 200:
        fail("chat via %d: %d %s" % (port, st, body[:300]))
    return hd.get("x-switchyard-worker"), hd.get("x-switchyard-reason")


def mock_stats(url):
    host, port = url.split("//")[1].split(":")
    return json.loads(request(int(port), "GET", "/mock/stats")[2])


def reset_mocks():
    for u in URLS:
        port = int(u.rsplit(":", 1)[1])
        request(port, "POST", "/mock/reset", "")
        request(port, "POST", "/flush_cache", "")


def index_blocks(url):
    d = syctl("index", "--worker", url)
    return sum(w["blocks"] for w in d["workers"] if w["worker"] == url and w["current"])


def index_total():
    return sum(w["blocks"] for w in syctl("index")["workers"])


def metrics(port):
    text = request(port, "GET", "/metrics")[2].decode()
    vals = {}
    for line in text.splitlines():
        if line.startswith("switchyard_cache") or line.startswith("switchyard_digest"):
            k, v = line.rsplit(" ", 1)
            vals[k] = float(v)
    return vals


def start_router(name, policy, processes):
    port = free_port()
    cfg = os.path.join(T, name + ".yaml")
    with open(cfg, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\nworker_urls: [%s]\n"
                "router: {host: 127.0.0.1, port: %d, processes: %d}\n"
                "policy: {type: %s}\n" % (SHM, ", ".join(URLS), port, processes, policy))
    p = subprocess.Popen([ROUTER, "--config", cfg], stdout=open(os.path.join(T, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)

    def ready():
        if p.poll() is not None:
            fail("router %s exited" % name)
        try:
            return request(port, "GET", "/readyz", timeout=2)[0] == 200
        except OSError:
            return False
    wait_for("router %s ready" % name, ready)
    return port


try:
    d = os.path.join(T, "fleet")
    fleets.append(d)
    r = subprocess.run([FLEET, "start", "--dir", d, "--bin", MOCK, "--count", "4", "--",
                        "--model", "m1", "--block-size", "16", "--cache-tokens", "8192",
                        "--prefill-us-per-token", "20", "--decode-us-per-token", "1000",
                        "--load-interval-ms", "200"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(d, "fleet.json")) as f:
        URLS = [m["url"] for m in json.load(f)]

    CFG = os.path.join(T, "statebus.yaml")
    with open(CFG, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\nworker_urls: [%s]\n" % (SHM, ", ".join(URLS)))
    sb = subprocess.Popen([STATEBUS, "--config", CFG, "--heartbeat-interval-ms", "200",
                           "--health-interval-ms", "500"],
                          stdout=open(os.path.join(T, "statebus.log"), "a"), stderr=subprocess.STDOUT)
    procs.append(sb)
    wait_for("statebus live",
             lambda: (syctl("header", may_fail=True) or {"statebus": {}})["statebus"].get("live"))
    wait_for("KV facts of the 4 engines",
             lambda: all(w.get("kv_events", {}).get("block_size") == 16
                         for w in syctl("workers")["workers"]) and len(syctl("workers")["workers"]) == 4)
    wait_for("fresh load", lambda: all(w["fresh"] for w in syctl("load")["workers"]))

    A = start_router("routerA", "cache_aware", 2)
    B = start_router("routerB", "cache_aware", 1)
    log("fleet of 4, statebus, routers A (2 processes) and B (1 process) up")

    # ---- converge: one shared 2.6k-token prefix --------------------------
    reset_mocks()
    wait_for("index empty after flush", lambda: index_total() == 0)
    P = prefix(2600)
    first, reason = chat(A, P, "question 0")
    if reason != "no_cache_candidate":
        fail("first request of a new prefix: reason %s" % reason)
    wait_for("prefix indexed", lambda: index_blocks(first) >= 2600 // 16)
    served = []
    # Bursts of parallel requests through A (so that both of its processes
    # take some) and sequential ones through B.
    for burst in range(3):
        out = [None] * 4

        def one(i, burst=burst):
            out[i] = chat(A, P, "question a%d-%d" % (burst, i))
        ts = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        served += [("A",) + o for o in out]
        served.append(("B",) + chat(B, P, "question b%d" % burst))
    wrong = [s for s in served if s[1] != first or s[2] != "cache_candidate"]
    if wrong:
        fail("shared prefix did not converge on %s: %s" % (first, wrong))
    st = {u: mock_stats(u) for u in URLS}
    if st[first]["requests"] != 1 + len(served):
        fail("owner served %d of %d" % (st[first]["requests"], 1 + len(served)))
    if st[first]["cached_tokens"] < len(served) * 2048:
        fail("owner's cached tokens %d < %d" % (st[first]["cached_tokens"], len(served) * 2048))
    others = [u for u in URLS if u != first and st[u]["requests"] != 0]
    if others:
        fail("other engines took shared-prefix requests: %s" % others)
    ma = metrics(A)
    pages = 2600 // 16
    misses = ma['switchyard_digest_memo_pages_total{result="miss"}']
    hits_a = ma['switchyard_cache_aware_decisions_total{decision="cache_hit"}']
    if hits_a < 12 or ma['switchyard_cache_aware_decisions_total{decision="cache_miss"}'] < 1:
        fail("router A decisions: %s" % ma)
    if misses < 2 * pages:
        fail("only one of router A's processes hashed the prefix (memo misses %d < %d)"
             % (misses, 2 * pages))
    mb = metrics(B)
    if mb['switchyard_cache_aware_decisions_total{decision="cache_hit"}'] != 3:
        fail("router B decisions: %s" % mb)
    log("converge: %d requests on %s (cached %d tokens), routers A (both processes: memo "
        "misses %d >= 2 x %d pages) and B agree" % (1 + len(served), first,
                                                     st[first]["cached_tokens"], misses, pages))

    # ---- spread: 12 distinct prefixes ------------------------------------
    reset_mocks()
    wait_for("index empty after flush", lambda: index_total() == 0)
    owners = {}
    for k in range(12):
        Pk = prefix(2600)
        o, reason = chat(A if k % 2 == 0 else B, Pk, "first")
        wait_for("prefix %d indexed" % k, lambda: index_blocks(o) >= 2600 // 16 - 1)
        for i, port in enumerate((B, A) if k % 2 == 0 else (A, B)):
            w, reason = chat(port, Pk, "follow-up %d" % i)
            if w != o or reason != "cache_candidate":
                fail("prefix %d: follow-up went to %s (%s), first to %s" % (k, w, reason, o))
        owners[k] = o
    used = set(owners.values())
    if len(used) < 3:
        fail("distinct prefixes did not spread: %s" % owners)
    st = {u: mock_stats(u) for u in URLS}
    for u in used:
        n = sum(1 for o in owners.values() if o == u)
        if st[u]["requests"] != 3 * n or st[u]["cached_tokens"] < 2 * n * 2048:
            fail("engine %s: %d prefixes but stats %s" % (u, n, st[u]))
    evicted = sum(1 for u in URLS if index_blocks(u) < sum(1 for o in owners.values() if o == u)
                  * (2600 // 16))
    log("spread: 12 prefixes over %d engines %s; each stuck to its owner (engines that "
        "evicted: %d)" % (len(used), sorted(list(owners.values()).count(u) for u in used), evicted))

    # ---- metrics ---------------------------------------------------------
    ma = metrics(A)
    found = ma['switchyard_cache_prefix_lookups_total{source="local",outcome="found",reason="none"}']
    if found < 13 + 18 or ma['switchyard_digest_memo_pages_total{result="hit"}'] <= 0:
        fail("router A prefix lookups / memo: %s" % ma)
    if ma['switchyard_cache_aware_decisions_total{decision="cache_hit"}'] < hits_a + 12:
        fail("router A cache_hit did not count the spread phase: %s" % ma)
    for k in ('switchyard_cache_prefix_lookups_total{source="local",outcome="no_chain",reason="none"}',
              'switchyard_cache_prefix_lookups_total{source="indexer",outcome="unavailable",reason="timeout"}',
              'switchyard_cache_aware_decisions_total{decision="all_queued"}'):
        if ma.get(k) != 0:
            fail("%s = %s" % (k, ma.get(k)))
    log("metrics: router A cache_hit %d cache_miss %d, local found %d, memo hit %d miss %d"
        % (ma['switchyard_cache_aware_decisions_total{decision="cache_hit"}'],
           ma['switchyard_cache_aware_decisions_total{decision="cache_miss"}'], found,
           ma['switchyard_digest_memo_pages_total{result="hit"}'],
           ma['switchyard_digest_memo_pages_total{result="miss"}']))

    # ---- session_aware across routers ------------------------------------
    S1 = start_router("routerS1", "session_aware", 2)
    S2 = start_router("routerS2", "session_aware", 1)
    bound = {}
    for turn in range(3):
        port = S1 if turn != 1 else S2
        for s in range(20):
            sid = "sess-%d-%d" % (os.getpid(), s)
            w, reason = chat(port, "You are session %d." % s, "turn %d" % turn, session=sid)
            if turn == 0:
                if reason != "assigned":
                    fail("session %s first turn: reason %s" % (sid, reason))
                bound[sid] = w
            elif w != bound[sid] or reason != "session_primary":
                fail("session %s turn %d went to %s (%s), bound to %s"
                     % (sid, turn, w, reason, bound[sid]))
    if len(set(bound.values())) < 3:
        fail("sessions did not spread: %s" % sorted(bound.values()))
    log("session: 20 sessions x 3 turns stayed on their engine across routers S1 and S2 "
        "(%d engines used)" % len(set(bound.values())))
    log("router_cache: OK")
finally:
    cleanup()
