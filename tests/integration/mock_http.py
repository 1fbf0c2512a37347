#!/usr/bin/python3
"""mock_http.py FLEET BIN — the mock engine's HTTP behaviour: /mock/stats cached
tokens rise when a prefix is sent twice; malformed JSON and bad fields → 400 with
an OpenAI-style error; fault switches (fail-rate, stall, drop mid-stream and
mid-body); the timing model (queue behind --max-running, serial prefill, decode
pacing); PD: decode waits for the prefill of its bootstrap_room, times out
without one; info routes."""
import glob, http.client, json, os, shutil, subprocess, sys, tempfile, threading, time, urllib.error, urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import check, fail  # noqa: E402

FLEET, BIN = sys.argv[1], sys.argv[2]


ACTIVE = []  # fleet dirs still running: their logs are shown on failure


@sytest.on_fail
def show_fleet_logs():
    for d in ACTIVE:
        sytest.print_dir_logs(d)


def stop(d):
    sytest.fleet_stop_checked(FLEET, d, ACTIVE)


def start(*args, **kw):
    d = tempfile.mkdtemp(prefix="sy-mock-http-")
    ACTIVE.append(d)
    cmd = [FLEET, "start", "--dir", d, "--bin", BIN]
    for k, v in kw.items():
        cmd += ["--" + k, str(v)]
    subprocess.run(cmd + ["--", *args], check=True, stdout=subprocess.DEVNULL, timeout=30)
    return d, json.load(open(os.path.join(d, "fleet.json")))


def req(url, path, body=None, raw=None, method=None, headers=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    r = urllib.request.Request(url + path, data=data, method=method,
                               headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def chat_body(content, **kw):
    return {"model": "mock-model", "messages": [{"role": "user", "content": content}], **kw}


def stats(url):
    return json.loads(req(url, "/mock/stats")[1])


def plain_tests():
    d, [m] = start("--block-size", "4")
    url = m["url"]
    try:
        # info routes
        check(req(url, "/health")[0] == 200, "/health")
        models = json.loads(req(url, "/v1/models")[1])
        check(models["data"][0]["id"] == "mock-model", models)
        loads = json.loads(req(url, "/v1/loads?include=core")[1])
        check(loads["loads"][0]["dp_rank"] == 0 and "num_waiting_uncached_tokens" in loads["loads"][0], loads)
        check(json.loads(req(url, "/get_load")[1])[0]["num_reqs"] == 0, "/get_load")
        check(req(url, "/nope")[0] == 404, "unknown route is 404")
        check(req(url, "/v1/chat/completions", method="GET")[0] == 405, "GET chat is 405")

        # (3) cached tokens rise when the same prefix is sent twice
        check(req(url, "/mock/reset", {})[0] == 200, "reset")
        s, _ = req(url, "/v1/chat/completions", chat_body("the same long prefix " * 4))
        check(s == 200, "first chat")
        first = stats(url)
        check(first["requests"] == 1 and first["cached_tokens"] == 0, first)
        s, b = req(url, "/v1/chat/completions", chat_body("the same long prefix " * 4))
        after = stats(url)
        check(after["cached_tokens"] > 0 and after["hit_ratio"] > 0.4, after)
        check(after["recent"][-1]["cached_tokens"] == json.loads(b)["usage"]["prompt_tokens_details"]["cached_tokens"],
              "per-request cached tokens in stats and usage agree")
        check(sum(x["count"] for x in after["ttft_ms_histogram"]["buckets"]) == 2, "TTFT histogram counts")

        # (4) malformed JSON and bad fields → 400 with an OpenAI-style error
        s, b = req(url, "/v1/chat/completions", raw=b'{"messages": [')
        e = json.loads(b)["error"]
        check(s == 400 and e["code"] == 400 and e["type"] == "BadRequestError" and "malformed JSON" in e["message"], b)
        for bad in ([1, 2], {"messages": "x"}, {"messages": [{"content": "no role"}]},
                    {"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}):
            s, b = req(url, "/v1/chat/completions", bad)
            check(s == 400 and "error" in json.loads(b), f"{bad} → {s} {b}")
        check(req(url, "/generate", {"sampling_params": {}})[0] == 400, "/generate without text")
        s, b = req(url, "/generate", {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 3}})
        g = json.loads(b)
        check(s == 200 and len(g["output_ids"]) == 3 and g["meta_info"]["finish_reason"]["length"] == 3, g)
        check(stats(url)["bad_requests"] >= 6, "bad requests counted")

        # fail-rate 1 → 500; back to 0 → 200
        req(url, "/mock/faults", {"fail_rate": 1.0})
        s, b = req(url, "/v1/chat/completions", chat_body("x"))
        check(s == 500 and json.loads(b)["error"]["code"] == 500, f"fail-rate: {s} {b}")
        req(url, "/mock/faults", {"fail_rate": 0})
        check(req(url, "/v1/chat/completions", chat_body("x"))[0] == 200, "fail-rate off")
        check(req(url, "/mock/faults", {"fail_rate": 2})[0] == 400, "fail_rate out of range")

        # stall-ms delays the answer
        req(url, "/mock/faults", {"stall_ms": 300})
        t = time.monotonic()
        req(url, "/v1/chat/completions", chat_body("stall"))
        check(time.monotonic() - t >= 0.29, "stall-ms")
        req(url, "/mock/faults", {"stall_ms": 0})

        # drop mid-stream: chunks stop after 2 tokens, no [DONE], connection cut
        req(url, "/mock/faults", {"drop_after_tokens": 2})
        host, port = url[7:].split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=5)
        c.request("POST", "/v1/chat/completions", json.dumps(chat_body("drop", stream=True, max_tokens=8)),
                  {"content-type": "application/json"})
        resp = c.getresponse()
        got = b""
        try:
            while True:
                x = resp.read1(65536)
                if not x:
                    break
                got += x
            cut = False
        except http.client.IncompleteRead as e:
            got += e.partial
            cut = True
        check(b"[DONE]" not in got and got.count(b'"content":" ') == 2, f"dropped stream: {got[-200:]}")
        check(cut, "stream was cut, not ended")
        # and mid-body for a non-streaming answer
        c = http.client.HTTPConnection(host, int(port), timeout=5)
        c.request("POST", "/v1/chat/completions", json.dumps(chat_body("drop")), {"content-type": "application/json"})
        try:
            c.getresponse().read()
            fail("non-streaming drop returned a whole body")
        except http.client.IncompleteRead:
            pass
        req(url, "/mock/faults", {"drop_after_tokens": 0})
        check(stats(url)["dropped_streams"] == 2, "dropped streams counted")
        check(req(url, "/v1/chat/completions", chat_body("fine"))[0] == 200, "healthy after drops")
    finally:
        stop(d)
    print("ok: stats, errors, faults")


def robust_tests():
    """Bad input never crashes or hangs the mock: 400s for what SGLang refuses or
    the mock does not model, a huge streamed max_tokens keeps the loop responsive
    and its memory bounded, an abandoned huge stream frees its slot."""
    d, [m] = start("--block-size", "4")
    url = m["url"]
    host, port = url[7:].split(":")
    try:
        chat = "/v1/chat/completions"
        for bad, why in (
                (chat_body("x", n=3), "n > 1"), (chat_body("x", n=0), "n = 0"),
                (chat_body("x", n="2"), "n not an integer"),
                (chat_body("x", max_tokens=1000001), "max_tokens over the cap"),
                (chat_body("x", max_tokens=-5), "negative max_tokens"),
                (chat_body("x", max_completion_tokens=1.5), "fractional max tokens"),
                (chat_body("x", bootstrap_port="8998"), "bootstrap_port not an integer"),
                (chat_body("x", bootstrap_port=70000), "bootstrap_port out of range"),
                (chat_body("x", bootstrap_room=-1), "negative bootstrap_room"),
                ({"model": "m"}, "missing messages"), ({"messages": None}, "null messages"),
                ({"messages": ["hi"]}, "message not an object"),
                ({"messages": [{"role": "user", "content": 5}]}, "content a number"),
                ({"messages": [{"role": "", "content": "x"}]}, "empty role")):
            s, b = req(url, chat, bad)
            check(s == 400 and "error" in json.loads(b), f"{why}: {s} {b[:200]}")
        check(req(url, chat, chat_body("x", n=1))[0] == 200, "n = 1 is fine")
        check(req(url, "/generate", {"text": "x", "sampling_params": {"n": 2}})[0] == 400, "/generate n > 1")
        # batches (SGLang: one choice per prompt) are refused by name, not
        # half-answered or misreported as bad token ids; a batch of one is
        # that prompt
        for batch in ([[1, 2], [3]], ["a", "b"]):
            s, b = req(url, "/v1/completions", {"prompt": batch})
            check(s == 400 and "batched prompts" in json.loads(b)["error"]["message"],
                  f"batch {batch}: {s} {b[:200]}")
        for one in ([[1, 2]], ["a"]):
            s, b = req(url, "/v1/completions", {"prompt": one, "max_tokens": 2})
            ch = json.loads(b)["choices"] if s == 200 else []
            check(s == 200 and len(ch) == 1 and ch[0]["index"] == 0, f"batch of one {one}: {s} {b[:200]}")
        check(req(url, "/v1/completions", {"prompt": [[1, -2]]})[0] == 400, "negative id in a batch of one")
        check(req(url, "/v1/completions", {"prompt": [-1]})[0] == 400, "negative token id")
        check(req(url, "/v1/completions", {"prompt": "", "max_tokens": 0})[0] == 200, "empty prompt, no output")
        for raw in (b'{"messages":[{"role":"user","content":"\xff\xfe"}]}',
                    b'{"messages":[{"role":"user","content":"a\\u0000b"}]}', b"", b"[]", b"nul"):
            s, b = req(url, chat, raw=raw)
            check(s == 400 and json.loads(b)["error"]["code"] == 400, f"{raw!r}: {s} {b[:200]}")
        check(req(url, chat, chat_body("x"), headers={"X-Data-Parallel-Rank": "-1"})[0] == 200,
              "a bad rank header is ignored")
        check(req(url, "/mock/faults", {"stall_ms": 10 ** 11})[0] == 400, "stall_ms over the cap")
        check(req(url, "/mock/faults", {"drop_after_tokens": -1})[0] == 400, "negative drop")

        # a huge stream read by nobody: the loop still answers, then the
        # abandoned stream releases its slot
        c = http.client.HTTPConnection(host, int(port), timeout=5)
        c.request("POST", chat, json.dumps(chat_body("huge", stream=True, max_tokens=1000000)),
                  {"content-type": "application/json"})
        resp = c.getresponse()
        check(resp.status == 200 and len(resp.read1(65536)) > 0, "huge stream starts")
        t = time.monotonic()
        check(req(url, "/health")[0] == 200 and time.monotonic() - t < 1.0, "loop responsive during a huge stream")
        c.close()
        for _ in range(100):
            if json.loads(req(url, "/v1/loads")[1])["loads"][0]["num_running_reqs"] == 0:
                break
            time.sleep(0.05)
        else:
            fail("abandoned huge stream kept its running slot")
        check(req(url, chat, chat_body("after"))[0] == 200, "healthy after bad input")
    finally:
        stop(d)
    print("ok: bad input")


def timing_tests():
    # 1 running slot, 1 ms per uncached prompt token, 5 ms per output token
    d, [m] = start("--max-running", "1", "--prefill-us-per-token", "1000", "--decode-us-per-token", "5000")
    url = m["url"]
    try:
        done = {}

        def one(i):
            t = time.monotonic()
            s, b = req(url, "/v1/chat/completions", chat_body(f"{i}" * 20, max_tokens=4))
            done[i] = (s, time.monotonic() - t)

        ths = [threading.Thread(target=one, args=(i,)) for i in range(3)]
        for th in ths:
            th.start()
        time.sleep(0.05)
        ld = json.loads(req(url, "/v1/loads")[1])["loads"][0]
        check(ld["num_running_reqs"] == 1 and ld["num_waiting_reqs"] == 2, f"queue while busy: {ld}")
        check(ld["num_waiting_uncached_tokens"] > 0, ld)
        for th in ths:
            th.join(10)
        check(all(s == 200 for s, _ in done.values()), done)
        # each: ~53 ms prefill + 20 ms decode; serialised by max-running 1
        slow = max(t for _, t in done.values())
        check(slow >= 0.2, f"third request waited for the other two: {done}")
        st = stats(url)
        check(st["queue"]["peak_waiting"] >= 2 and st["queue"]["max_ms"] >= 60, st["queue"])
        # decode pacing on a stream: 10 tokens × 5 ms
        t = time.monotonic()
        s, b = req(url, "/v1/chat/completions", chat_body("pace", stream=True, max_tokens=10))
        check(s == 200 and b.endswith(b"data: [DONE]\n\n") and time.monotonic() - t >= 0.05, "decode pacing")
    finally:
        stop(d)
    print("ok: timing model and queue")


def pd_tests():
    d, fl = start("--pd-timeout-ms", "1500", prefill=1, decode=1)
    p, dc = fl
    try:
        pi = json.loads(req(p["url"], "/server_info")[1])
        di = json.loads(req(dc["url"], "/server_info")[1])
        check(pi["disaggregation_mode"] == "prefill" and di["disaggregation_mode"] == "decode", (pi, di))
        check(pi["disaggregation_bootstrap_port"] == p["bootstrap_port"], pi)
        body = chat_body("pd prompt", max_tokens=3, bootstrap_host="127.0.0.1",
                         bootstrap_port=p["bootstrap_port"], bootstrap_room=(1 << 62) + 7)
        out = {}
        th = threading.Thread(target=lambda: out.update(r=req(dc["url"], "/v1/chat/completions", body),
                                                        t=time.monotonic()))
        th.start()
        time.sleep(0.3)
        check("r" not in out, "decode answered before its prefill ran")
        t_prefill = time.monotonic()
        s, b = req(p["url"], "/v1/chat/completions", body)
        check(s == 200 and json.loads(b)["usage"]["completion_tokens"] == 1, "prefill computes one token")
        th.join(5)
        check(out.get("r", (0,))[0] == 200 and out["t"] >= t_prefill, f"decode after prefill: {out}")
        check(json.loads(out["r"][1])["usage"]["completion_tokens"] == 3, out)
        # the prefill already done: a second decode with that room goes at once
        check(req(dc["url"], "/v1/chat/completions", body)[0] == 200, "room remembered")
        # no prefill for the room → 500 after the timeout
        t = time.monotonic()
        s, b = req(dc["url"], "/v1/chat/completions", {**body, "bootstrap_room": 12345})
        check(s == 500 and "bootstrap_room 12345" in json.loads(b)["error"]["message"], b)
        check(1.4 <= time.monotonic() - t < 4, "timeout honoured")
        check(stats(dc["url"])["pd_timeouts"] == 1, "pd timeout counted")
        s, _ = req(dc["url"], "/v1/chat/completions", chat_body("no bootstrap"))
        check(s == 400, "decode without bootstrap fields is 400")
    finally:
        stop(d)
    print("ok: PD bootstrap handshake")


def spec_test():
    d, [m] = start("--speculative-algorithm", "EAGLE", "--block-size", "4")
    try:
        info = json.loads(req(m["url"], "/server_info")[1])
        check(info["speculative_algorithm"] == "EAGLE", info)
        req(m["url"], "/v1/chat/completions", chat_body("bigram " * 4))
        s, b = req(m["url"], "/v1/chat/completions", chat_body("bigram " * 4))
        cached = json.loads(b)["usage"]["prompt_tokens_details"]["cached_tokens"]
        check(s == 200 and cached > 0, f"bigram pages hit too: {cached}")
    finally:
        stop(d)
    print("ok: speculative_algorithm")


# GROUPS (argv[3:]) picks groups; none = all. The ASan run takes the cheap,
# timing-free ones (tests/integration/meson.build).
GROUPS = {"plain": plain_tests, "robust": robust_tests, "timing": timing_tests,
          "pd": pd_tests, "spec": spec_test}
for name in sys.argv[3:] or GROUPS:
    GROUPS[name]()
