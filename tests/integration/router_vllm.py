#!/usr/bin/python3
"""router_vllm.py ROUTER STATEBUS MOCK SYCTL — the router on a vLLM-emulated fleet.

switchyard-mock-engine processes in `--engine vllm` mode (vLLM's HTTP API,
its /metrics names; no /server_info, no /flush_cache), a statebus and a
router on one region (workers[].engine: vllm):
  pd        model pd-m is served by a vLLM prefill and a vLLM decode engine:
            the router runs vLLM's disaggregation flow (prefill with
            kv_transfer_params {do_remote_decode: true}, max_tokens 1, not
            streamed; its returned kv_transfer_params into the decode). The
            decode mock refuses a request without them and waits on the
            prefill's room before it decodes: chat and completions complete
            streamed and non-streamed, a client's own kv_transfer_params do
            not reach the prefill, and the prefill never sees a stream; a
            request the prefill refuses gets its 400 and message, unretried.
  adapters  model lora-m on two vLLM engines with KV events (the statebus
            re-hashes them, LoRA names seeding the chain) and a cache_aware
            bucket: a prompt an engine served under adapter sql-lora (sent
            to it directly) matches on that engine only for sql-lora (cache_candidate), never for chat-lora
            or the base model (no_cache_candidate); an adapter one engine
            serves (only-b, listed by its /v1/models) goes to that engine.
  alone     a second router without a statebus (its master discovers the
            engines: /server_info 404, /v1/models answers → engine kind
            vllm) runs the same PD flow for workers configured with roles
            only; while a slow prefill runs, the decode already counts the
            request in flight (its guard is taken with the prefill's).
  pd-retry  the first prefill engine is down: the attempt is retried on the
            second one before any byte reached the client.
  load      model base-m on two plain vLLM engines under power_of_two: with
            one engine's queue filled directly (its scraped /metrics show
            the waiting requests), every routed request goes to the other.
  flush     POST /flush_cache reaches every vLLM engine as POST
            /reset_prefix_cache (a vLLM engine answers 404 to /flush_cache):
            200 for all, and the engines' prefix caches are empty after it.
Everything started here is stopped on exit.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, free_port, request  # noqa: E402

ROUTER, STATEBUS, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-rvllm.")
SHM = "/dev/shm/sy-test-rvllm-%d" % os.getpid()
SHM2 = SHM + "-alone"
procs = []


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    sytest.print_dir_logs(T)


def syctl(*args):
    return sytest.syctl_json(SYCTL, SHM, *args)


def wait_for(what, pred, timeout=20.0):
    return sytest.wait_for(what, pred, timeout, interval=0.1)


class Mock:
    """One switchyard-mock-engine in vLLM mode on free ports."""

    def __init__(self, name, model, *extra, kv=False):
        self.name = name
        self.log = open(os.path.join(T, name + ".log"), "w")
        for _ in range(5):  # a port taken meanwhile: new ports
            self.port, self.bport, self.kv = free_port(), free_port(), free_port()
            self.p = subprocess.Popen(
                [MOCK, "--engine", "vllm", "--port", str(self.port), "--model", model,
                 "--block-size", "4", "--disaggregation-bootstrap-port", str(self.bport)]
                + (["--kv-port", str(self.kv)] if kv else []) + list(extra),
                stdout=self.log, stderr=self.log)
            procs.append(self.p)
            if sytest.wait_for(name + " up", lambda: self.p.poll() is not None or
                               self.status("/version") == 200) and self.p.poll() is None:
                break
        check(self.p.poll() is None, name + " did not start")
        self.url = "http://127.0.0.1:%d" % self.port

    def status(self, path):
        try:
            return request(self.port, "GET", path, timeout=5)[0]
        except OSError:
            return 0

    def stats(self):
        return json.loads(request(self.port, "GET", "/mock/stats")[2])


def Stream(port, model, max_tokens):
    """A streamed completion straight to an engine, held open until close()."""
    return sytest.HeldStream(port, {"model": model, "stream": True, "max_tokens": max_tokens,
                                    "messages": [{"role": "user", "content": "hold"}]})


def post(port, path, body, timeout=30):
    return request(port, "POST", path, body, timeout=timeout)


def sse_events(data):
    """The data: payloads of an SSE body (the [DONE] marker kept as a string)."""
    out = []
    for line in data.decode().splitlines():
        if line.startswith("data: "):
            p = line[6:]
            out.append(p if p == "[DONE]" else json.loads(p))
    return out


def pd_checks(port, Ps, D):
    def prefills():
        return sum(p.stats()["requests"] for p in Ps)
    prefill_before = prefills()
    # chat, not streamed; the client's own kv_transfer_params are replaced
    st, h, body = post(port, "/v1/chat/completions",
                       {"model": "pd-m", "max_tokens": 6, "stream": False,
                        "kv_transfer_params": {"do_remote_decode": False},
                        "messages": [{"role": "user", "content": "disaggregated hello"}]})
    if st != 200:
        fail("vLLM PD chat: %d %s" % (st, body[:300]))
    doc = json.loads(body)
    check(doc["object"] == "chat.completion", "PD chat answer: %s" % doc)
    check(doc["usage"]["completion_tokens"] == 6, "PD chat decoded 6 tokens: %s" % doc["usage"])
    check(h.get("x-switchyard-worker") == D.url and
          h.get("x-switchyard-prefill-worker") in (p.url for p in Ps),
          "PD workers in headers: %s" % h)
    check("kv_transfer_params" not in doc, "the decode's answer carries no prefill params")
    # completions, streamed (the prefill leg is never streamed: the mock
    # refuses a streamed prefill)
    st, h, body = post(port, "/v1/completions",
                       {"model": "pd-m", "prompt": "stream me please", "max_tokens": 5,
                        "stream": True, "stream_options": {"include_usage": True}})
    if st != 200:
        fail("vLLM PD streamed completion: %d %s" % (st, body[:300]))
    check(h.get("content-type", "").startswith("text/event-stream"), "streamed: %s" % h)
    ev = sse_events(body)
    check(ev and ev[-1] == "[DONE]", "stream ends with [DONE]: %s" % body[-200:])
    text = "".join(e["choices"][0].get("text", "") for e in ev[:-1] if e.get("choices"))
    check(len(text.split()) == 5, "5 tokens streamed: %r" % text)
    # chat, streamed, with max_completion_tokens
    st, h, body = post(port, "/v1/chat/completions",
                       {"model": "pd-m", "max_completion_tokens": 3, "max_tokens": 3,
                        "stream": True, "min_tokens": 1,
                        "messages": [{"role": "user", "content": "chat stream"}]})
    if st != 200 or sse_events(body)[-1] != "[DONE]":
        fail("vLLM PD streamed chat: %d %s" % (st, body[:300]))
    used = prefills() - prefill_before
    check(used == 3, "one prefill request per PD request: %d" % used)
    # a request the prefill refuses (a client error, not an engine failure):
    # its status and message, no retry on the other prefill, no decode
    def refused():
        return sum(p.stats()["bad_requests"] for p in Ps)
    before, dec_before = refused(), D.stats()["requests"] + D.stats()["bad_requests"]
    st, h, body = post(port, "/v1/chat/completions",
                       {"model": "pd-m", "max_tokens": 3, "n": 2,
                        "messages": [{"role": "user", "content": "two please"}]})
    check(st == 400 and h.get("x-router-error-code") == "bad_request" and
          b"the prefill worker refused the request (400): n > 1" in body,
          "the prefill's refusal reaches the client: %d %s %s" % (st, h, body[:300]))
    dec_after = D.stats()["requests"] + D.stats()["bad_requests"]
    check(refused() - before == 1 and dec_after == dec_before,
          "a refused request is not retried nor decoded: %d prefills, %d decodes"
          % (refused() - before, dec_after - dec_before))
    # the decode engine checks it was given the prefill's params: straight to it
    # without them it refuses (the router's flow is what made the above pass)
    st, _, body = post(D.port, "/v1/completions", {"model": "pd-m", "prompt": "x", "max_tokens": 2})
    check(st == 400 and b"kv_transfer_params" in body,
          "decode without kv_transfer_params refused: %d %s" % (st, body[:200]))
    log("pd: chat and completions through vLLM's prefill → decode flow, streamed and not")


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey").split()


def prompt(seed, n_chars):
    out, i = [], seed
    while sum(len(w) + 1 for w in out) < n_chars:
        i = (i * 1103515245 + 12345) % (1 << 31)
        out.append(WORDS[i % len(WORDS)])
    return " ".join(out)


def adapter_checks(port, E1, E2):
    def ask(model, text):
        st, h, body = post(port, "/v1/chat/completions",
                           {"model": model, "max_tokens": 1,
                            "messages": [{"role": "user", "content": text}]})
        if st != 200:
            fail("%s request: %d %s" % (model, st, body[:300]))
        return h.get("x-switchyard-worker"), h.get("x-switchyard-reason")

    def blocks(url):
        d = syctl("index", "--worker", url)
        return sum(w["blocks"] for w in d["workers"] if w["worker"] == url and w["current"])

    wait_for("KV streams of lora-m subscribed", lambda: all(
        w.get("kv_events", {}).get("block_size") == 4 for w in syctl("workers")["workers"]
        if w["worker"] in (E1.url, E2.url)))
    ws = {w["worker"]: w for w in syctl("workers")["workers"]}
    check(ws[E2.url]["lora_adapters"] == ["sql-lora", "chat-lora", "only-b"] and
          ws[E1.url]["lora_adapters"] == ["sql-lora", "chat-lora"],
          "adapters from /v1/models in the workers table: %s" %
          [(u, ws[u]["lora_adapters"]) for u in (E1.url, E2.url)])
    listed = {m["id"]: m.get("parent") for m in
              json.loads(request(port, "GET", "/v1/models")[2])["data"]}
    check(listed.get("only-b") == "lora-m" and listed.get("sql-lora") == "lora-m" and
          "lora-m" in listed and listed["lora-m"] is None,
          "the router's /v1/models lists the adapters with their parent: %s" % listed)
    # served by E2 directly: only its KV events (re-hashed by the statebus in
    # sql-lora's namespace) can tell the router where the prefix is
    text = prompt(11, 1600)
    st, _, body = post(E2.port, "/v1/chat/completions",
                       {"model": "sql-lora", "max_tokens": 1,
                        "messages": [{"role": "user", "content": text}]})
    check(st == 200, "sql-lora straight to e2: %d %s" % (st, body[:200]))
    first, other = E2.url, E1.url
    wait_for("the sql-lora prompt indexed", lambda: blocks(first) >= 1600 // 4)
    for _ in range(3):
        w, reason = ask("sql-lora", text)
        check((w, reason) == (first, "cache_candidate"), "sql-lora matches its blocks: %s %s"
              % (w, reason))
    held = blocks(first)
    for model in ("chat-lora", "lora-m"):
        w, reason = ask(model, text)
        check(reason == "no_cache_candidate",
              "%s must not match sql-lora's blocks: %s on %s" % (model, reason, w))
    wait_for("the other namespaces indexed", lambda: blocks(first) + blocks(other) > held)
    seen = {ask("only-b", prompt(20 + i, 300))[0] for i in range(6)}
    check(seen == {E2.url}, "only-b goes to the engine that serves it: %s" % seen)
    st, _, body = post(port, "/v1/chat/completions",
                       {"model": "no-such-lora", "max_tokens": 1,
                        "messages": [{"role": "user", "content": "x"}]})
    check(st == 404, "an adapter nobody serves is 404: %d %s" % (st, body[:200]))
    log("adapters: sql-lora matched its own blocks only; only-b went to its engine")


def main():
    P = Mock("prefill", "pd-m", "--disaggregation-mode", "prefill")
    P2 = Mock("prefill2", "pd-m", "--disaggregation-mode", "prefill")
    D = Mock("decode", "pd-m", "--disaggregation-mode", "decode", "--pd-timeout-ms", "3000")
    A = Mock("a", "base-m", "--max-running", "1", "--decode-us-per-token", "20000")
    B = Mock("b", "base-m", "--max-running", "1", "--decode-us-per-token", "20000")
    E1 = Mock("e1", "lora-m", "--lora-modules", "sql-lora,chat-lora", kv=True)
    E2 = Mock("e2", "lora-m", "--lora-modules", "sql-lora,chat-lora,only-b", kv=True)
    port = free_port()
    cfg = os.path.join(T, "sy.yaml")
    with open(cfg, "w") as f:
        f.write("model_id: base-m\nstate: {shm_path: %s}\n"
                "workers:\n"
                "  - {url: %s, role: prefill, model: pd-m, engine: vllm}\n"
                "  - {url: %s, role: prefill, model: pd-m, engine: vllm}\n"
                "  - {url: %s, role: decode, model: pd-m, engine: vllm}\n"
                "  - {url: %s, model: base-m, engine: vllm}\n"
                "  - {url: %s, model: base-m, engine: vllm}\n"
                "  - {url: %s, model: lora-m, engine: vllm, kv_events: {endpoint_host: 127.0.0.1,"
                " endpoint_port_base: %d, block_size: 4}}\n"
                "  - {url: %s, model: lora-m, engine: vllm, kv_events: {endpoint_host: 127.0.0.1,"
                " endpoint_port_base: %d, block_size: 4}}\n"
                "router: {host: 127.0.0.1, port: %d, processes: 1, retry_max_retries: 2,\n"
                "         tokenizer: {kind: bytes}}\n"
                "statebus: {metrics_interval_ms: 200, health_interval_ms: 200}\n"
                "policy: {type: power_of_two}\n"
                "buckets:\n"
                "  - {id: lora, models: [lora-m], rank: 10,"
                " groups: {plain: {policy: {type: cache_aware}}}}\n"
                "  - {id: pd, models: [pd-m], rank: 20, groups: {prefill: {}, decode: {}}}\n"
                "  - {id: rest, rank: 30, groups: {plain: {}}}\n"
                % (SHM, P.url, P2.url, D.url, A.url, B.url, E1.url, E1.kv, E2.url, E2.kv, port))
    sb = subprocess.Popen([STATEBUS, "--config", cfg, "--heartbeat-interval-ms", "200"],
                          stdout=open(os.path.join(T, "statebus.log"), "a"),
                          stderr=subprocess.STDOUT)
    procs.append(sb)
    def live():
        if sb.poll() is not None:
            fail("the statebus exited")
        out = subprocess.run([SYCTL, "--shm", SHM, "--json", "header"], capture_output=True,
                             text=True, timeout=10)
        return out.returncode == 0 and json.loads(out.stdout)["statebus"]["live"]
    wait_for("statebus live", live)
    sytest.start_router(ROUTER, T, "router", port, open(cfg).read(), procs, timeout=20)
    wait_for("seven vLLM workers healthy", lambda: sum(
        1 for w in syctl("workers")["workers"]
        if w.get("engine") == "vllm" and w.get("healthy")) == 7)

    # ---- pd ----------------------------------------------------------------
    pd_checks(port, (P, P2), D)

    # ---- adapters ------------------------------------------------------------
    adapter_checks(port, E1, E2)

    # ---- flush: /reset_prefix_cache on each vLLM engine ----------------------
    st, _, body = post(port, "/flush_cache", b"")
    if st != 200:
        fail("/flush_cache on vLLM engines: %d %s" % (st, body[:400]))
    res = {r["worker"]: r["status"] for r in json.loads(body)["results"]}
    check(set(res) == {P.url, P2.url, D.url, A.url, B.url, E1.url, E2.url},
          "every engine flushed: %s" % res)
    for u in res:
        check(res.get(u) == 200, "%s answered the flush with %s" % (u, res.get(u)))
    check(A.status("/flush_cache") == 404, "a vLLM engine has no /flush_cache")
    # a request repeated after the flush finds nothing cached
    msg = {"model": "base-m", "max_tokens": 1,
           "messages": [{"role": "user", "content": "after flush " * 8}]}
    post(B.port, "/v1/chat/completions", msg)
    post(port, "/flush_cache", b"")
    before = B.stats()["cached_tokens"]
    post(B.port, "/v1/chat/completions", msg)
    check(B.stats()["cached_tokens"] == before,
          "the prompt was not cached any more after /flush_cache")
    log("flush: /flush_cache reached /reset_prefix_cache on every vLLM engine")

    # ---- load: power_of_two follows the scraped /metrics ---------------------
    def load_of(url):
        return next(w for w in syctl("load")["workers"] if w["worker"] == url)
    wait_for("scraped load fresh for both", lambda: load_of(A.url)["fresh"] and
             load_of(B.url)["fresh"])
    hold = [Stream(A.port, "base-m", 200) for _ in range(3)]
    wait_for("A's queue in the scraped view",
             lambda: (load_of(A.url)["num_waiting_reqs"] or 0) >= 2)
    served = []
    for i in range(12):
        st, h, body = post(port, "/v1/chat/completions",
                           {"model": "base-m", "max_tokens": 1,
                            "messages": [{"role": "user", "content": "load %d" % i}]})
        if st != 200:
            fail("base-m request: %d %s" % (st, body[:200]))
        served.append(h.get("x-switchyard-worker"))
    for s in hold:
        s.close()
    if served.count(B.url) != 12:
        fail("power_of_two ignored the scraped load: %s" % served)
    log("load: every pick went to the engine whose /metrics showed no queue")

    # ---- alone: no statebus, engine kind discovered -------------------------
    port2 = free_port()
    Ps = Mock("prefill-slow", "pd-m", "--disaggregation-mode", "prefill",
              "--prefill-us-per-token", "3000")
    Ds = Mock("decode-slow", "pd-m", "--disaggregation-mode", "decode", "--pd-timeout-ms", "5000")
    sytest.start_router(ROUTER, T, "router-alone", port2,
                        "model_id: pd-m\nstate: {shm_path: %s}\n"
                        "workers:\n  - {url: %s, role: prefill}\n  - {url: %s, role: decode}\n"
                        "router: {host: 127.0.0.1, port: %d, processes: 1}\n"
                        % (SHM2, Ps.url, Ds.url, port2), procs, timeout=20)
    wait_for("engine kinds discovered by the master", lambda: all(
        w.get("engine") == "vllm" for w in sytest.syctl_json(SYCTL, SHM2, "workers")["workers"]))
    for stream in (False, True):
        st, h, body = post(port2, "/v1/chat/completions",
                           {"model": "pd-m", "max_tokens": 4, "stream": stream,
                            "messages": [{"role": "user", "content": "alone %s" % stream}]})
        if st != 200:
            fail("vLLM PD without a statebus (stream %s): %d %s" % (stream, st, body[:300]))
        check(h.get("x-switchyard-prefill-worker") == Ps.url, "alone PD: %s" % h)

    def inflight():
        return {w["worker"]: w["in_flight"]
                for w in sytest.syctl_json(SYCTL, SHM2, "inflight")["workers"]}
    slow = {}

    def slow_request():  # ~600 prompt tokens × 3 ms of prefill
        slow["r"] = post(port2, "/v1/completions",
                         {"model": "pd-m", "prompt": prompt(5, 600), "max_tokens": 2})
    t = threading.Thread(target=slow_request)
    t.start()
    wait_for("the slow prefill in flight", lambda: inflight().get(Ps.url) == 1, timeout=5)
    during = inflight()
    t.join(30)
    check(slow.get("r", (0,))[0] == 200, "slow PD request: %s" % (slow.get("r"),))
    check(during.get(Ds.url) == 1, "the decode counts the request while its prefill runs: %s"
          % during)
    check(inflight() == {Ps.url: 0, Ds.url: 0}, "guards released: %s" % inflight())
    log("alone: the master discovered vLLM engines; PD ran vLLM's flow without a statebus")

    # ---- pd-retry: one prefill engine gone, the pair is tried again --------
    P2.p.kill()
    P2.p.wait()
    for i in range(6):
        st, h, body = post(port, "/v1/chat/completions",
                           {"model": "pd-m", "max_tokens": 2,
                            "messages": [{"role": "user", "content": "retry %d" % i}]})
        if st != 200:
            fail("PD request with one prefill engine down: %d %s" % (st, body[:300]))
        check(h.get("x-switchyard-prefill-worker") == P.url, "served by the live prefill: %s" % h)
    log("pd-retry: a prefill engine down costs no request")

def cleanup(ok):
    sytest.stop_procs(procs)
    for shm in (SHM, SHM2):
        subprocess.run([SYCTL, "--shm", shm, "destroy"], capture_output=True)
    if ok:
        subprocess.run(["rm", "-rf", T])


sys.exit(0 if sytest.run_main(main, cleanup) else 1)
