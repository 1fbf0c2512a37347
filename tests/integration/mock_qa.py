#!/usr/bin/python3
"""mock_qa.py FLEET BIN — defects found by QA in the mock engine, kept fixed:

- SGLang matches a prompt's cached prefix on its first n-1 tokens (the last
  token is always computed, it yields the logits), so a page-aligned prompt
  sent twice reports one page less than the whole prompt as cached, never all
  of it (schedule_batch.py, init_next_round_input: max_prefix_len = n - 1).
- a request body over --max-body-bytes is refused with 413 before it is
  tokenized (a 200 MB prompt held the single event loop for 13 s and 1.7 GB).
- a non-boolean "stream" is a 400 naming the field, not silently non-streaming.
- /v1/loads' cache_hit_rate is per DP rank (that rank's cached / prompt
  tokens of finished requests), not the engine-wide figure on every rank;
  POST /mock/reset zeroes it.
"""
import glob, json, os, shutil, subprocess, sys, tempfile, urllib.error, urllib.request

FLEET, BIN = sys.argv[1], sys.argv[2]


def fail(msg, d=None):
    print("FAIL:", msg, file=sys.stderr)
    for log in glob.glob(os.path.join(d or "/nonexistent", "*.log")):
        print(f"--- {log}", open(log).read()[-3000:], sep="\n", file=sys.stderr)
    sys.exit(1)


def req(url, path, body=None, raw=None, headers=None, method=None):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    r = urllib.request.Request(url + path, data=data, method=method,
                               headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    d = tempfile.mkdtemp(prefix="sy-mock-qa-")
    subprocess.run([FLEET, "start", "--dir", d, "--bin", BIN, "--",
                    "--block-size", "4", "--max-body-bytes", "65536"],
                   check=True, stdout=subprocess.DEVNULL, timeout=30)
    url = json.load(open(os.path.join(d, "fleet.json")))[0]["url"]
    try:
        # page-aligned prompt (8 tokens, pages of 4): the second time 4 are cached, not 8
        ids = {"input_ids": [9, 8, 7, 6, 5, 4, 3, 2], "sampling_params": {"max_new_tokens": 1}}
        for want in (0, 4):
            s, b = req(url, "/generate", ids)
            got = json.loads(b)["meta_info"]["cached_tokens"] if s == 200 else None
            if got != want:
                fail(f"page-aligned prompt: cached_tokens {got}, SGLang reports {want}: {b[:300]}", d)
        # 9 tokens: the first two pages (8 tokens) can be cached
        ids["input_ids"].append(1)
        s, b = req(url, "/generate", ids)
        if s != 200 or json.loads(b)["meta_info"]["cached_tokens"] != 8:
            fail(f"9-token prompt after the 8-token one: {s} {b[:300]}", d)

        # body over --max-body-bytes → 413
        big = {"prompt": "x" * 70000, "max_tokens": 1}
        s, b = req(url, "/v1/completions", big)
        if s != 413:
            fail(f"70 kB body with --max-body-bytes 65536: {s} {b[:200]}", d)
        s, b = req(url, "/v1/completions", {"prompt": "small", "max_tokens": 1})
        if s != 200:
            fail(f"engine unusable after a 413: {s} {b[:200]}", d)

        # "stream" must be a boolean
        s, b = req(url, "/v1/chat/completions",
                   {"messages": [{"role": "user", "content": "hi"}], "stream": "yes"})
        if s != 400 or "stream" not in json.loads(b)["error"]["message"]:
            fail(f'"stream": "yes" → {s} {b[:200]}', d)
    finally:
        subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
    for log in glob.glob(os.path.join(d, "*.log")):
        text = open(log).read()
        if "Sanitizer" in text or "runtime error" in text:
            fail(f"sanitizer report in {log}", d)
    shutil.rmtree(d, ignore_errors=True)
    per_rank_hit_rate()
    print("mock_qa: OK")


def per_rank_hit_rate():
    d = tempfile.mkdtemp(prefix="sy-mock-qa-dp-")
    subprocess.run([FLEET, "start", "--dir", d, "--bin", BIN, "--dp-size", "2", "--",
                    "--block-size", "4"],
                   check=True, stdout=subprocess.DEVNULL, timeout=30)
    url = json.load(open(os.path.join(d, "fleet.json")))[0]["url"]

    def gen(rank, ids):
        s, b = req(url, "/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 1}},
                   headers={"x-data-parallel-rank": str(rank)})
        if s != 200:
            fail(f"/generate on rank {rank}: {s} {b[:200]}", d)
        return json.loads(b)["meta_info"]["cached_tokens"]

    def rates():
        s, b = req(url, "/v1/loads")
        if s != 200:
            fail(f"/v1/loads: {s} {b[:200]}", d)
        return {l["dp_rank"]: l["cache_hit_rate"] for l in json.loads(b)["loads"]}

    try:
        if rates() != {0: 0.0, 1: 0.0}:
            fail(f"fresh engine: cache_hit_rate {rates()}", d)
        # rank 0: a 9-token prompt twice → 0 then 8 cached: 8 / 18
        ids = [11, 12, 13, 14, 15, 16, 17, 18, 19]
        got = [gen(0, ids), gen(0, ids)]
        if got != [0, 8]:
            fail(f"rank 0 cached_tokens {got}, want [0, 8]", d)
        # rank 1: one fresh 5-token prompt → 0 / 5 (engine-wide would be 8 / 23)
        if gen(1, [1, 2, 3, 4, 5]) != 0:
            fail("rank 1: fresh prompt reported cached tokens", d)
        r = rates()
        if abs(r[0] - 8 / 18) > 1e-5 or r[1] != 0.0:
            fail(f"per-rank cache_hit_rate {r}, want {{0: {8 / 18:.6f}, 1: 0.0}}", d)
        # the same prompt on rank 1 hits rank 1's own cache only now: 4 / 10
        gen(1, [1, 2, 3, 4, 5])
        r = rates()
        if abs(r[0] - 8 / 18) > 1e-5 or abs(r[1] - 4 / 10) > 1e-5:
            fail(f"per-rank cache_hit_rate {r}, want {{0: {8 / 18:.6f}, 1: 0.4}}", d)
        s, b = req(url, "/mock/reset", raw=b"", method="POST")
        if s != 200 or rates() != {0: 0.0, 1: 0.0}:
            fail(f"after /mock/reset: {s} {rates()}", d)
    finally:
        subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
    for log in glob.glob(os.path.join(d, "*.log")):
        text = open(log).read()
        if "Sanitizer" in text or "runtime error" in text:
            fail(f"sanitizer report in {log}", d)
    shutil.rmtree(d, ignore_errors=True)


main()
