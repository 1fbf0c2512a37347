#!/usr/bin/python3
"""mock_qa.py FLEET BIN — defects found by QA in the mock engine, kept fixed:

- SGLang matches a prompt's cached prefix on its first n-1 tokens (the last
  token is always computed, it yields the logits), so a page-aligned prompt
  sent twice reports one page less than the whole prompt as cached, never all
  of it (schedule_batch.py, init_next_round_input: max_prefix_len = n - 1).
- a request body over --max-body-bytes is refused with 413 before it is
  tokenized (a 200 MB prompt held the single event loop for 13 s and 1.7 GB).
- a non-boolean "stream" is a 400 naming the field, not silently non-streaming.
"""
import glob, json, os, shutil, subprocess, sys, tempfile, urllib.error, urllib.request

FLEET, BIN = sys.argv[1], sys.argv[2]


def fail(msg, d=None):
    print("FAIL:", msg, file=sys.stderr)
    for log in glob.glob(os.path.join(d or "/nonexistent", "*.log")):
        print(f"--- {log}", open(log).read()[-3000:], sep="\n", file=sys.stderr)
    sys.exit(1)


def req(url, path, body=None, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    r = urllib.request.Request(url + path, data=data, headers={"content-type": "application/json"})
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
    print("mock_qa: OK")


main()
