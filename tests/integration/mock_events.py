#!/usr/bin/python3
"""mock_events.py FLEET BIN — an independent decoder (python3-zmq, python3-msgpack)
checks the mock engine's KV-event and LoadStat streams against
shared/reference/sglang-wire.md: frames and dense seqs (§2), batch and both event
encodings (§4-5), coalescing (§8), the SHA-256 block-hash chain (§11, recomputed
here with hashlib), LoadStat V3 (§12), replay in both answer forms (§3), gaps
from --skip-seq-every, END_SEQ on restart and on shutdown."""
import glob, hashlib, json, os, shutil, struct, subprocess, sys, tempfile, time, urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import check, fail  # noqa: E402

import msgpack
import zmq

FLEET, BIN = sys.argv[1], sys.argv[2]
END = b"\xff" * 8
BS = 4
ctx = zmq.Context.instance()


ACTIVE = []  # fleet dirs still running: their logs are shown on failure


@sytest.on_fail
def show_fleet_logs():
    for d in ACTIVE:
        sytest.print_dir_logs(d)


def stop(d):
    sytest.fleet_stop_checked(FLEET, d, ACTIVE)


def fleet(d, *extra):
    subprocess.run([FLEET, "start", "--dir", d, "--bin", BIN, "--dp-size", "2", "--", *extra],
                   check=True, stdout=subprocess.DEVNULL, timeout=30)
    return json.load(open(os.path.join(d, "fleet.json")))[0]


def post(url, path, body, headers=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else b"",
                                 headers={"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read()


def chat(url, content, rank):
    # one output token: SGLang caches prompt + output[:-1], so only prompt pages here
    return json.loads(post(url, "/v1/chat/completions",
                           {"messages": [{"role": "user", "content": content}], "max_tokens": 1},
                           {"X-Data-Parallel-Rank": str(rank)}))


def chain(tokens, bs):
    """SGLang block ids of the whole pages (sglang-wire.md §11)."""
    prev, ids = b"", []
    for p in range(len(tokens) // bs):
        h = hashlib.sha256(prev)
        for t in tokens[p * bs:(p + 1) * bs]:
            h.update(struct.pack("<I", t))
        prev = h.digest()
        ids.append(int.from_bytes(prev[:8], "big", signed=True))
    return ids


def chatml(content):
    return list(f"<|im_start|>user\n{content}<|im_end|>\n<|im_start|>assistant\n".encode())


def chatml_msgs(msgs):
    """Rendered ChatML of a conversation + generation prompt, as byte ids."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs)
    return list((text + "<|im_start|>assistant\n").encode())


def stream_chat(url, msgs, max_tokens, rank=0):
    """Streamed chat → (words as streamed, usage)."""
    body = post(url, "/v1/chat/completions",
                {"messages": msgs, "max_tokens": max_tokens, "stream": True,
                 "stream_options": {"include_usage": True}},
                {"X-Data-Parallel-Rank": str(rank)}).decode()
    words, usage = [], None
    for line in body.split("\n"):
        if not line.startswith("data: {"):
            continue
        c = json.loads(line[6:])
        if c.get("usage"):
            usage = c["usage"]
        for ch in c["choices"]:
            if ch["delta"].get("content"):
                words.append(ch["delta"]["content"])
    return words, usage


def sub(port, topic=b""):
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, topic)
    s.setsockopt(zmq.RCVTIMEO, 3000)
    s.connect(f"tcp://127.0.0.1:{port}")
    return s


def recv(s):
    try:
        return s.recv_multipart()
    except zmq.Again:
        fail("no message within 3 s")


def drain(s, wait=0.3):
    """All messages arriving within `wait` seconds of quiet."""
    out = []
    s.setsockopt(zmq.RCVTIMEO, int(wait * 1000))
    while True:
        try:
            out.append(s.recv_multipart())
        except zmq.Again:
            break
    s.setsockopt(zmq.RCVTIMEO, 3000)
    return out


def seq_of(f):
    check(len(f) == 8, f"seq frame is {len(f)} bytes")
    return struct.unpack(">q", f)[0]


def decode_batch(payload, rank):
    b = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    check(isinstance(b, list) and len(b) == 3, f"batch is not [ts, events, rank]: {b!r}")
    check(isinstance(b[0], float), "ts is not a float")
    check(b[2] == rank, f"batch rank {b[2]} on the socket of rank {rank}")
    return b[1]


def norm(ev, enc):
    """Event → dict, validating its shape in the given encoding."""
    if enc == "array":
        check(isinstance(ev, list), f"array event expected: {ev!r}")
        tag = ev[0]
        if tag == "BlockStored":
            check(len(ev) == 7 and ev[5] is None and ev[6] == "GPU", f"BlockStored shape {ev!r}")
            return dict(type=tag, block_hashes=ev[1], parent_block_hash=ev[2], token_ids=ev[3],
                        block_size=ev[4])
        if tag == "BlockRemoved":
            check(len(ev) == 3 and ev[2] == "GPU", f"BlockRemoved shape {ev!r}")
            return dict(type=tag, block_hashes=ev[1])
        check(ev == ["AllBlocksCleared"], f"unknown event {ev!r}")
        return dict(type=tag)
    check(isinstance(ev, dict) and "type" in ev, f"map event expected: {ev!r}")
    if ev["type"] == "BlockStored":
        check(set(ev) == {"type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
                          "lora_id", "medium"} and ev["lora_id"] is None, f"BlockStored keys {ev!r}")
    elif ev["type"] == "BlockRemoved":
        check(set(ev) == {"type", "block_hashes", "medium"}, f"BlockRemoved keys {ev!r}")
    else:
        check(ev == {"type": "AllBlocksCleared"}, f"unknown event {ev!r}")
    return ev


def run(enc, frames):
    d = tempfile.mkdtemp(prefix="sy-mock-ev-")
    ACTIVE.append(d)
    m = fleet(d, "--block-size", str(BS), "--cache-tokens", "128", "--event-encoding", enc,
              "--replay-frames", str(frames), "--load-interval-ms", "200")
    url, kv, load, replay = m["url"], m["kv_port"], m["load_port"], m["replay_port"]
    try:
        info = json.loads(urllib.request.urlopen(url + "/server_info", timeout=5).read())
        k = info["kv_events"]
        check((k["endpoint_port_base"], k["load_endpoint_port_base"], k["replay_port_base"],
               k["block_size"], k["dp_size"], k["topic"], k["load_topic"]) ==
              (kv, load, replay, BS, 2, "", "load"), f"kv_events block {k}")
        check(info["disaggregation_mode"] == "null" and info["speculative_algorithm"] is None, info)
        subs = [sub(kv), sub(kv + 1)]
        lsub = sub(load + 1, b"load")
        time.sleep(0.4)  # slow joiner

        # --- stores on rank 0: one coalesced BlockStored, root parent, exact chain
        c1 = "a" * 20
        chat(url, c1, 0)
        f = recv(subs[0])
        check(len(f) == 3 and f[0] == b"", f"KV frames {f[:2]!r}")
        s0 = seq_of(f[1])
        check(s0 == 0, f"first seq is {s0}, not 0")
        evs = [norm(e, enc) for e in decode_batch(f[2], 0)]
        toks = chatml(c1)
        want = chain(toks, BS)
        check(len(evs) == 1 and evs[0]["type"] == "BlockStored", f"events {evs}")
        check(evs[0]["block_hashes"] == want, f"hashes {evs[0]['block_hashes']} != chain {want}")
        check(evs[0]["parent_block_hash"] is None and evs[0]["block_size"] == BS, evs[0])
        check(evs[0]["token_ids"] == toks[:len(want) * BS], "token_ids of the pages")

        # --- same prefix again: no new pages, no batch; cached tokens reported
        r = chat(url, c1, 0)
        # SGLang matches on the first n - 1 tokens: a page-aligned prompt misses its last page
        check(r["usage"]["prompt_tokens_details"]["cached_tokens"] == (len(toks) - 1) // BS * BS, r["usage"])
        # --- a continuation: parent = last cached page
        c2 = c1 + "bbbbbbbb"
        chat(url, c2, 0)
        f = recv(subs[0])
        check(seq_of(f[1]) == 1, "seq not dense")
        evs = [norm(e, enc) for e in decode_batch(f[2], 0)]
        want2 = chain(chatml(c2), BS)
        shared = next(i for i, (x, y) in enumerate(zip(want, want2)) if x != y)
        check(evs[0]["parent_block_hash"] == want2[shared - 1], "parent is the last shared page")
        check(evs[0]["block_hashes"] == want2[shared:], "only the new pages are stored")

        # --- capacity 128 tokens = 32 pages: a different prompt evicts LRU leaves first
        chat(url, "z" * 40, 0)
        f = recv(subs[0])
        evs = [norm(e, enc) for e in decode_batch(f[2], 0)]
        check([e["type"] for e in evs] == ["BlockRemoved", "BlockStored"], f"eviction batch {evs}")
        check(set(evs[0]["block_hashes"]) <= set(want + want2), "evicted hashes were stored")

        # --- rank 1 has its own dense stream
        chat(url, "q" * 12, 1)
        f = recv(subs[1])
        check(seq_of(f[1]) == 0, "rank 1 starts at seq 0")

        # --- LoadStat V3 on rank 1's load socket
        for _ in range(20):  # reports from before the request come first
            f = recv(lsub)
            check(f[0] == b"load" and len(f) == 3 and len(f[1]) == 8, "LoadStat frames")
            ls = msgpack.unpackb(f[2], raw=False)
            if ls[3] > 0:
                break
        check(len(ls) == 11 and ls[0] == "LoadStat" and ls[5] == 1, f"LoadStat {ls}")
        check(ls[4] == 128 and ls[8] == 64 and ls[3] > 0, f"LoadStat capacity/max_running/tokens {ls}")
        # idle re-send (interval 200 ms): same values, next seq
        g = recv(lsub)
        check(seq_of(g[1]) == seq_of(f[1]) + 1, "LoadStat seq dense")

        # --- gap fault: every 2nd batch stays off the PUB but is in replay
        post(url, "/mock/faults", {"skip_seq_every": 2})
        for i in range(4):
            chat(url, f"gap{i}" * 6, 0)
        got = [seq_of(x[1]) for x in drain(subs[0])]
        post(url, "/mock/faults", {"skip_seq_every": 0})
        check(got and all((s + 1) % 2 != 0 for s in got), f"live seqs with gaps: {got}")
        last = max(got)

        # --- replay from 0 (DEALER sends the empty delimiter itself)
        dl = ctx.socket(zmq.DEALER)
        dl.setsockopt(zmq.RCVTIMEO, 3000)
        dl.connect(f"tcp://127.0.0.1:{replay}")
        dl.send_multipart([b"", struct.pack(">q", 0)])
        seqs = []
        while True:
            fr = recv(dl)
            check(fr[0] == b"", "replay delimiter")
            check(len(fr) == frames,
                  f"replay answer has {len(fr)} frames, want {frames}")
            sf = fr[2] if frames == 4 else fr[1]
            if frames == 4:
                check(fr[1] == b"", "replay topic frame")
            if sf == END:
                break
            seqs.append(seq_of(sf))
            decode_batch(fr[-1], 0)
        check(seqs == list(range(last + 1)), f"replay seqs {seqs} (live had gaps {got})")

        # --- flush_cache → AllBlocksCleared on each rank
        post(url, "/flush_cache", None)
        evs = [norm(e, enc) for e in decode_batch(recv(subs[1])[2], 1)]
        check(evs == [{"type": "AllBlocksCleared"}] or evs[-1]["type"] == "AllBlocksCleared", evs)

        # --- restart the event stream: END_SEQ, then seq 0 again
        drain(subs[0], 0.1)
        post(url, "/mock/restart_events", None)
        f = recv(subs[0])
        check(f[1] == END and len(f) == 3, "END_SEQ on restart")
        chat(url, "after-restart" * 2, 0)
        check(seq_of(recv(subs[0])[1]) == 0, "seq restarts at 0")
    finally:
        stop(d)
    # --- clean shutdown published END_SEQ (the SUBs are still connected)
    got = drain(subs[0], 1.0)
    check(any(x[1] == END for x in got), "no END_SEQ on shutdown")
    for s in subs + [lsub]:
        s.close(0)
    print(f"ok: encoding={enc} replay_frames={frames}")


def stored_events(s, rank=0):
    """The BlockStored events of every batch that arrives until quiet."""
    evs = [norm(e, "array") for f in drain(s) for e in decode_batch(f[2], rank)]
    return [e for e in evs if e["type"] == "BlockStored"]


def multi_turn():
    """SGLang's cache_finished_req inserts prompt + output[:-1] (page-aligned):
    turn 2 of a chat (turn 1 + assistant reply + new user message) hits beyond
    turn 1's prompt, and the BlockStored events carry exactly those pages."""
    d = tempfile.mkdtemp(prefix="sy-mock-mt-")
    ACTIVE.append(d)
    m = fleet(d, "--block-size", str(BS), "--cache-tokens", "4096")
    url = m["url"]
    s0 = sub(m["kv_port"])
    try:
        time.sleep(0.4)  # slow joiner
        t1 = [{"role": "user", "content": "plan a trip to the north"}]
        p1 = chatml_msgs(t1)
        words1, u1 = stream_chat(url, t1, 9)
        check(len(words1) == 9 and u1["prompt_tokens"] == len(p1), f"turn 1: {words1} {u1}")
        check(u1["prompt_tokens_details"]["cached_tokens"] == 0, u1)
        seq1 = p1 + list("".join(words1[:-1]).encode())  # the last token has no KV
        want1 = chain(seq1, BS)
        check(len(want1) > len(p1) // BS, "the reply filled whole pages")
        st = stored_events(s0)
        check(len(st) == 1, f"prompt and output pages coalesce into one BlockStored: {st}")
        check(st[0]["parent_block_hash"] is None and st[0]["block_hashes"] == want1,
              f"turn 1 pages {st[0]['block_hashes']} != chain of prompt + output[:-1] {want1}")
        check(st[0]["token_ids"] == seq1[:len(want1) * BS], "turn 1 token_ids")

        t2 = t1 + [{"role": "assistant", "content": "".join(words1)},
                   {"role": "user", "content": "and back south"}]
        p2 = chatml_msgs(t2)
        check(p2[:len(seq1)] == seq1, "turn 2 starts with turn 1's prompt and reply")
        words2, u2 = stream_chat(url, t2, 5)
        cached = u2["prompt_tokens_details"]["cached_tokens"]
        check(cached == len(want1) * BS and cached > len(p1) // BS * BS,
              f"turn 2 cached {cached}: want {len(want1) * BS} (> prompt-only {len(p1) // BS * BS})")
        seq2 = p2 + list("".join(words2[:-1]).encode())
        want2 = chain(seq2, BS)
        check(want2[:len(want1)] == want1, "turn 2 chain extends turn 1's")
        st = stored_events(s0)
        check(len(st) == 1 and st[0]["parent_block_hash"] == want1[-1], f"turn 2 store parent: {st}")
        check(st[0]["block_hashes"] == want2[len(want1):], "turn 2 stores only its new pages")
        check(st[0]["token_ids"] == seq2[len(want1) * BS:len(want2) * BS], "turn 2 token_ids")
        last = json.loads(urllib.request.urlopen(url + "/mock/stats", timeout=5).read())["recent"][-1]
        check(last["cached_tokens"] == cached, f"stats agree: {last}")
    finally:
        stop(d)
        s0.close(0)
    print("ok: multi-turn output caching")


run("array", 4)
run("map", 3)
multi_turn()
