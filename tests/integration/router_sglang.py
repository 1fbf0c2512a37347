#!/usr/bin/env python3
"""router_sglang.py — switchyard-router started the way SGLang router users
start theirs (README "Coming from SGLang's router").

Mock engines that report their own model names (tools/mock-fleet, --model),
no statebus. For each of a dozen SGLang-router launch commands (plain,
cache_aware with its knobs, PD with --prefill/--decode, PD roles discovered
from --worker-urls, a tokenizer path, the Prometheus listener, ...), a
streamed chat naming the engine's model succeeds. The SGLang routes answer
with the SGLang router's shapes; a dashboard-style scrape of the Prometheus
port finds the SGLang metric names; a dead engine is taken out by the
router's own health checks; bad flags are all reported in one run; every
binary answers --version and -h; a second router on a served port is
refused.

usage: router_sglang.py ROUTER FLEET MOCK STATEBUS SYCTL
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest
from sytest import check, fail, free_port, request, wait_for

ROUTER, FLEET, MOCK, STATEBUS, SYCTL = sys.argv[1:6]
T = tempfile.mkdtemp(prefix="sy-sglang-")
SHM = "/dev/shm/sy-test-sglang-%d-" % os.getpid()
procs, fleets, shms = [], [], []
MODEL, PD_MODEL = "sg-model", "pd-model"
KEY = "admin-secret"


@sytest.on_fail
def logs():
    sytest.print_dir_logs(T)


def fleet(name, *args):
    d = os.path.join(T, name)
    r = subprocess.run([FLEET, "start", "--dir", d, "--bin", MOCK] + list(args),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    fleets.append(d)
    with open(os.path.join(d, "fleet.json")) as f:
        return json.load(f)


def router(name, *args, wait=True):
    """Starts switchyard-router NAME with SGLang-style ARGS → (port, proc)."""
    port = free_port()
    shm = SHM + name
    shms.append(shm)
    p = subprocess.Popen([ROUTER, "--host", "127.0.0.1", "--port", str(port), "--shm", shm]
                         + list(args),
                         stdout=open(os.path.join(T, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    if wait:
        def up():
            if p.poll() is not None:
                fail("router %s exited at start (%s)" % (name, p.returncode))
            try:
                return request(port, "GET", "/health", timeout=1)[0] == 200
            except OSError:
                return False
        wait_for("router " + name, up)
    return port, p


def stop(p):
    sytest.stop_procs([p])


def stream_chat(port, model, **extra):
    """A streamed chat → (status, headers, chunks); every chunk is parsed."""
    body = {"messages": [{"role": "user", "content": "hello from an SGLang user"}],
            "max_tokens": 4, "stream": True}
    if model is not None:
        body["model"] = model
    body.update(extra)
    st, h, data = request(port, "POST", "/v1/chat/completions", body)
    chunks = []
    if st == 200:
        for line in data.decode().split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[6:]))
    return st, h, chunks


def chat_ok(port, model, what, served_model=None):
    """Waits for discovery to name the workers (every worker of a PD pair:
    until a chat is served), then checks one streamed chat."""
    def served():
        st, _, b = request(port, "GET", "/v1/models")
        return st == 200 and (served_model or model) in [m["id"] for m in json.loads(b)["data"]]
    wait_for(what + ": the engine's model listed", served)
    wait_for(what + ": a first chat served", lambda: stream_chat(port, model)[0] == 200)
    st, h, chunks = stream_chat(port, model)
    check(st == 200, "%s: streamed chat: %s" % (what, st))
    check(len(chunks) >= 2 and chunks[0]["model"] == (served_model or model),
          "%s: chunks %s" % (what, chunks[:2]))
    check(h.get("x-switchyard-worker", "").startswith("http://127.0.0.1:"),
          "%s: no decision header %s" % (what, h))
    return h


def tokenizer_dir():
    """A byte-level BPE tokenizer.json (one merge: "h i" → 256) and a
    tokenizer_config.json without a template."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    vocab = {chr(c): b for b, c in zip(bs, cs)}
    vocab["hi"] = 256
    tok = {"version": "1.0", "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": False, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "ignore_merges": False,
                     "vocab": vocab, "merges": ["h i"]},
           "added_tokens": [], "post_processor": None, "decoder": {"type": "ByteLevel"}}
    d = os.path.join(T, "tok")
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tok, f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": None, "eos_token": "<|endoftext|>"}, f)
    with open(os.path.join(d, "template.jinja"), "w") as f:
        f.write("{% for m in messages %}{{ m.content }}{% endfor %}")
    return d


def sglang_routes(port, urls):
    """The SGLang router routes and their JSON shapes."""
    st, h, b = request(port, "GET", "/liveness")
    check(st == 200 and b == b"OK", "/liveness: %s %r" % (st, b))
    st, _, b = request(port, "GET", "/readiness")
    d = json.loads(b)
    check(st == 200 and d["status"] == "ready" and d["healthy_workers"] == len(urls)
          and d["total_workers"] == len(urls), "/readiness: %s %s" % (st, d))
    st, _, b = request(port, "GET", "/get_server_info")
    check(st == 200 and json.loads(b).get("served_model_name") == MODEL, "/get_server_info %s" % b)
    st, _, b = request(port, "GET", "/get_model_info")
    check(st == 200 and json.loads(b)["model_path"] == MODEL, "/get_model_info %s" % b)
    check(request(port, "GET", "/health_generate")[0] == 200, "/health_generate")
    auth = {"authorization": "Bearer " + KEY}
    check(request(port, "GET", "/get_loads")[0] == 401, "/get_loads without the admin key")
    st, _, b = request(port, "GET", "/get_loads", headers=auth)
    d = json.loads(b)
    check(st == 200 and d["total_workers"] == len(urls) and d["failed"] == 0
          and sorted(x["worker"] for x in d["loads"]) == sorted(urls)
          and all(x["worker_type"] == "regular" and x["load"] >= 0 for x in d["loads"]),
          "/get_loads %s" % d)
    check(request(port, "GET", "/list_workers")[0] == 401, "/list_workers without the key")
    st, _, b = request(port, "GET", "/list_workers", headers=auth)
    check(st == 200 and sorted(json.loads(b)["urls"]) == sorted(urls), "/list_workers %s" % b)
    st, _, b = request(port, "GET", "/workers", headers=auth)
    d = json.loads(b)
    check(st == 200 and d["total"] == len(urls) and d["stats"]["regular_count"] == len(urls)
          and all(w["model_id"] == MODEL and w["worker_type"] == "regular" and w["is_healthy"]
                  and w["connection_mode"] == "http" for w in d["workers"]),
          "GET /workers %s" % d)
    one = "/workers/" + urllib.parse.quote(urls[0], safe="")
    st, _, b = request(port, "GET", one, headers=auth)
    check(st == 200 and json.loads(b)["url"] == urls[0], "GET %s: %s %s" % (one, st, b))
    st, _, b = request(port, "POST", "/add_worker", "", headers=auth)
    check(st == 400 and b.decode().startswith("Worker URL required"),
          "/add_worker without url: SMG's text, %s %s" % (st, b))
    extra = "http://127.0.0.1:%d" % free_port()
    st, _, b = request(port, "POST", "/add_worker?url=" + urllib.parse.quote(extra, safe="")
                       + "&worker_type=prefill&model_id=" + PD_MODEL, "", headers=auth)
    check(st == 200 and b.decode() == "Successfully added worker: " + extra, "/add_worker %s" % b)
    st, _, b = request(port, "GET", "/workers/" + urllib.parse.quote(extra, safe=""), headers=auth)
    d = json.loads(b)
    check(d["worker_type"] == "prefill" and d["model_id"] == PD_MODEL, "SMG fields kept %s" % d)
    st, _, b = request(port, "POST", "/remove_worker?url=" + extra, "", headers=auth)
    check(st == 200 and b.decode() == "Successfully removed worker: " + extra,
          "/remove_worker %s" % b)
    st, _, b = request(port, "POST", "/workers", {"url": extra, "worker_type": "decode",
                                                  "model_id": PD_MODEL}, headers=auth)
    d = json.loads(b)
    check(st == 201 and d["status"] == "accepted" and d["worker_id"] == extra, "POST /workers %s" % d)
    st, _, b = request(port, "DELETE", "/workers/" + urllib.parse.quote(extra, safe=""), headers=auth)
    check(st == 200, "DELETE /workers: %s %s" % (st, b))
    for path, key in (("/v1/embeddings", "data"), ("/v1/rerank", "results"),
                      ("/v1/responses", "output"), ("/v1/messages", "content")):
        st, h, b = request(port, "POST", path, {"model": MODEL, "input": "hello",
                                                "query": "q", "documents": ["a", "b"],
                                                "messages": [{"role": "user", "content": "x"}],
                                                "max_tokens": 8})
        d = json.loads(b)
        check(st == 200 and (key is None or key in d) and h.get("x-switchyard-worker"),
              "%s: %s %s" % (path, st, b[:200]))
    rerank_shapes(port)
    st, h, _ = request(port, "OPTIONS", "/v1/chat/completions", "",
                       {"origin": "http://app.example", "access-control-request-method": "POST",
                        "access-control-request-headers": "content-type"})
    check(st == 204 and h.get("access-control-allow-origin") == "http://app.example"
          and "POST" in h.get("access-control-allow-methods", ""), "CORS preflight %s %s" % (st, h))
    st, h, _ = request(port, "GET", "/v1/models", headers={"origin": "http://app.example"})
    check(h.get("access-control-allow-origin") == "http://app.example", "CORS on GET %s" % h)
    st, _, _ = request(port, "OPTIONS", "/v1/chat/completions", "",
                       {"origin": "http://evil.example", "access-control-request-method": "POST"})
    check(st == 403, "CORS preflight from another origin: %s" % st)


def rerank_shapes(port):
    """/v1/rerank and /rerank answer as SMG does: the engine's result list
    (the mock's: one per document, score = share of the query's words in it,
    highest first) wrapped in {results, model, usage, object, id, created};
    /rerank applies top_k, return_documents and rid, /v1/rerank reads only
    query and documents; bad requests are 400, an engine's refusal passes."""
    docs = ["hi", "the giant panda bear", "a bear"]
    want = [(1, 1.0, docs[1]), (2, 0.5, docs[2]), (0, 0.0, docs[0])]
    t0 = int(time.time())
    st, h, b = request(port, "POST", "/v1/rerank", {"query": "panda bear", "documents": docs,
                                                    "top_k": 1, "return_documents": False,
                                                    "rid": "ignored"})
    d = json.loads(b)
    check(st == 200 and h.get("content-type", "").startswith("application/json"),
          "/v1/rerank: %s %s" % (st, b[:300]))
    check(d["object"] == "rerank" and d["model"] == MODEL and d["usage"] is None
          and d["id"] is None and t0 - 1 <= d["created"] <= time.time() + 1,
          "/v1/rerank envelope %s" % d)
    got = [(r["index"], r["score"], r.get("document")) for r in d["results"]]
    check(got == want, "/v1/rerank results (top_k etc. not read there) %s" % got)
    check(all(set(r) <= {"score", "document", "index", "meta_info"} for r in d["results"]),
          "/v1/rerank result members %s" % d["results"])
    check(int(h.get("content-length", -1)) == len(b), "/v1/rerank content-length %s" % h)
    st, _, b = request(port, "POST", "/rerank", {"model": MODEL, "query": "panda bear",
                                                 "documents": docs, "top_k": 2,
                                                 "return_documents": False, "rid": "req-1"})
    d = json.loads(b)
    check(st == 200 and d["id"] == "req-1"
          and [(r["index"], r["score"], r.get("document")) for r in d["results"]]
          == [(1, 1.0, None), (2, 0.5, None)], "/rerank top_k/return_documents/rid %s" % d)
    for body, what in (({"query": "", "documents": docs}, "query"),
                       ({"query": "q", "documents": []}, "documents"),
                       ({"query": "q", "documents": docs, "top_k": 0}, "top_k")):
        st, h, b = request(port, "POST", "/rerank", body)
        check(st == 400 and h.get("x-router-error-code") == "bad_request"
              and what in json.loads(b)["error"]["message"], "/rerank %s: %s %s" % (body, st, b))
    st, h, b = request(port, "POST", "/v1/rerank", {"query": "q", "documents": [1, 2]})
    check(st == 400 and h.get("x-switchyard-worker") and "x-router-error-code" not in h,
          "an engine's 400 passes unchanged: %s %s %s" % (st, h, b[:200]))


def main():
    plain = fleet("plain", "--count", "2", "--", "--model", MODEL)
    urls = [m["url"] for m in plain]
    pd = fleet("pd", "--prefill", "1", "--decode", "1", "--", "--model", PD_MODEL)
    pre = next(m for m in pd if m["role"] == "prefill")
    dec = next(m for m in pd if m["role"] == "decode")
    tok = tokenizer_dir()

    # 1. The plain launch command, with the SGLang routes.
    port, p = router("plain", "--worker-urls", *urls, "--policy", "round_robin",
                     "--log-level", "info", "--admin-api-key", KEY,
                     "--cors-allowed-origins", "http://app.example")
    chat_ok(port, MODEL, "plain")
    st, _, chunks = stream_chat(port, None)
    check(st == 200 and chunks[0]["model"] == MODEL, "a chat without model: %s" % st)
    sglang_routes(port, urls)
    # a second router on the served port is refused
    r = subprocess.run([ROUTER, "--host", "127.0.0.1", "--port", str(port), "--shm", SHM + "dup",
                        "--worker-urls", urls[0]], capture_output=True, text=True, timeout=20)
    shms.append(SHM + "dup")
    check(r.returncode != 0 and "already served" in r.stderr
          and "give another --port" in r.stderr, "second router: %s" % r.stderr)
    stop(p)

    # 2-9. More launch commands, each serving a streamed chat.
    launches = [
        ("cache_aware", ["--worker-urls", *urls, "--policy", "cache_aware",
                         "--cache-affinity-min-matched-tokens", "16",
                         "--cache-affinity-min-match-ratio", "0.1",
                         "--cache-candidate-min-workers", "1", "--worker-queue-limit", "8",
                         "--pressure-rel-threshold", "2.0", "--max-payload-size", "33554432",
                         "--request-timeout-secs", "600"]),
        ("power_of_two", ["--worker-urls", ",".join(urls), "--policy", "power_of_two",
                          "--health-check-interval-secs", "1", "--health-check-timeout-secs", "2",
                          "--health-failure-threshold", "2", "--health-success-threshold", "1",
                          "--health-check-endpoint", "/health"]),
        ("retries", ["--worker-urls", *urls, "--policy", "random", "--retry-max-retries", "1",
                     "--cb-failure-threshold", "5", "--cb-timeout-duration-secs", "10",
                     "--max-concurrent-requests", "-1", "--request-id-headers", "x-request-id",
                     "x-trace-id", "--log-json", "--shutdown-grace-period-secs", "5"]),
        ("sticky", ["--worker-urls", *urls, "--policy", "sticky", "--max-idle-secs", "60",
                    "--routing-key-headers", "x-smg-routing-key"]),
        ("model_id", ["--worker-urls", *urls, "--model-id", MODEL,
                      "--disable-health-check", "--upstream-pool-idle-timeout-secs", "3"]),
    ]
    for name, args in launches:
        port, p = router(name, *args)
        chat_ok(port, MODEL, name)
        stop(p)

    # PD the SGLang way, and PD roles discovered from --worker-urls.
    for name, args in (
            ("pd_flags", ["--pd-disaggregation", "--prefill", pre["url"],
                          str(pre["bootstrap_port"]), "--decode", dec["url"],
                          "--prefill-policy", "cache_aware", "--decode-policy", "round_robin"]),
            ("pd_no_port", ["--pd-disaggregation", "--prefill", pre["url"], "--decode", dec["url"],
                            "--policy", "power_of_two"]),
            ("pd_discovered", ["--worker-urls", pre["url"], dec["url"]])):
        port, p = router(name, *args)
        h = chat_ok(port, PD_MODEL, name)
        check(h.get("x-switchyard-bucket") == "default-pd"
              and h.get("x-switchyard-prefill-worker") == pre["url"]
              and h.get("x-switchyard-worker") == dec["url"], "%s: PD headers %s" % (name, h))
        st, _, b = request(port, "GET", "/readiness")
        check(st == 200, "%s: /readiness %s" % (name, b))
        stop(p)

    # A bootstrap port that is not the engine's is used as given, with a warning
    # naming both ports.
    bad = pre["bootstrap_port"] + 1 if pre["bootstrap_port"] < 65535 else 1024
    port, p = router("pd_port_mismatch", "--pd-disaggregation", "--prefill", pre["url"],
                     str(bad), "--decode", dec["url"])
    want = "configured bootstrap port %d differs from the engine's %d" % (
        bad, pre["bootstrap_port"])
    log = os.path.join(T, "pd_port_mismatch.log")
    wait_for("the bootstrap port warning", lambda: want in open(log).read())
    stop(p)

    # A worker an earlier run left in the region, not in this command line,
    # is named at start-up.
    port, p = router("leftover", "--worker-urls", *urls)
    chat_ok(port, MODEL, "leftover")
    stop(p)
    port, p = router("leftover", "--worker-urls", urls[0])
    log = os.path.join(T, "leftover.log")
    want = "worker %s (slot " % urls[1]
    wait_for("the leftover worker warning", lambda: want in open(log).read())
    check(("worker %s (slot " % urls[0]) not in open(log).read(), "configured worker warned")
    stop(p)

    # A tokenizer.json path (implies the hf tokenizer) and a chat template file.
    port, p = router("tokenizer", "--worker-urls", *urls,
                     "--tokenizer-path", os.path.join(tok, "tokenizer.json"),
                     "--chat-template", os.path.join(tok, "template.jinja"),
                     "--chat-template-fallback")
    chat_ok(port, MODEL, "tokenizer")
    st, _, b = request(port, "POST", "/v1/tokenize", {"prompt": "hi"})
    check(st == 200 and json.loads(b)["tokens"] == [256], "hf tokenizer not in use: %s" % b)
    stop(p)

    # The Prometheus listener with SGLang names: a dashboard-style scrape.
    mport = free_port()
    port, p = router("prometheus", "--worker-urls", *urls, "--prometheus-host", "127.0.0.1",
                     "--prometheus-port", str(mport), "--metrics-names", "sglang")
    chat_ok(port, MODEL, "prometheus")
    st, _, b = request(mport, "GET", "/metrics")
    text = b.decode()
    check(st == 200 and "switchyard_" not in text, "metrics: %s" % st)
    for q in ('sgl_router_requests_total{route="/v1/chat/completions"',
              "sgl_router_request_duration_seconds_bucket{",
              'sgl_router_worker_health{worker="%s"' % urls[0],
              'sgl_router_worker_requests_total{worker="', "sgl_router_active_workers 2",
              'smg_http_requests_total{method="POST",path="/v1/chat/completions"} ',
              'smg_router_requests_total{router_type="http",connection_mode="http",endpoint="chat"}',
              'smg_worker_health{worker="%s"} 1' % urls[0], "smg_router_ttft_seconds_bucket{"):
        check(q in text, "scrape lacks %s" % q)
    check(request(mport, "GET", "/v1/models")[0] == 404, "the metrics port serves inference")
    check(request(mport, "GET", "/readiness")[0] == 200, "/readiness on the metrics port")
    check(request(mport, "GET", "/readyz")[0] == 200, "/readyz on the metrics port")
    stop(p)

    # The router's own health checks take a dead engine out (no statebus).
    port, p = router("health", "--worker-urls", *urls, "--health-check-interval-secs", "1",
                     "--health-failure-threshold", "2", "--admin-api-key", KEY)
    chat_ok(port, MODEL, "health")
    os.kill(plain[1]["pid"], signal.SIGKILL)

    def out():
        st, _, b = request(port, "GET", "/readiness")
        return json.loads(b).get("healthy_workers") == 1
    wait_for("the dead engine marked unhealthy", out, timeout=15)
    for _ in range(6):
        st, h, _ = stream_chat(port, MODEL)
        check(st == 200 and h["x-switchyard-worker"] == urls[0], "chat after a death: %s" % st)
    stop(p)

    # Every bad flag in one run, with its replacement.
    r = subprocess.run([ROUTER, "--worker-urls", urls[0], "--cache-threshold", "0.5",
                        "--jwt-issuer", "k", "--service-discovery", "--no-such-flag", "1"],
                       capture_output=True, text=True, timeout=20)
    lines = [l for l in r.stderr.split("\n") if l]
    check(r.returncode == 2 and len(lines) == 4
          and sum("unknown flag" in l for l in lines) == 1, "bad flags: %s" % r.stderr)

    # --version and -h on every binary.
    for b in (ROUTER, STATEBUS, SYCTL, MOCK):
        for flag in ("--version", "-h", "--help"):
            r = subprocess.run([b, flag], capture_output=True, text=True, timeout=10)
            check(r.returncode == 0 and r.stdout.strip(), "%s %s: %s %s" % (b, flag, r.returncode,
                                                                         r.stderr))
        r = subprocess.run([b, "--version"], capture_output=True, text=True, timeout=10)
        check(r.stdout.split()[-1][0].isdigit(), "%s --version: %s" % (b, r.stdout))
    print("router_sglang: OK")


try:
    main()
finally:
    sytest.stop_procs(procs)
    for d in fleets:
        subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
    for s in shms:
        if os.path.exists(s):
            os.unlink(s)
    shutil.rmtree(T, ignore_errors=True)
