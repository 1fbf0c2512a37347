#!/usr/bin/python3
"""statebus_vllm.py STATEBUS SYCTL MOCK — the statebus on a vLLM fleet.

Two switchyard-mock-engine processes in `--engine vllm` mode (vLLM's HTTP
API and its KV events: map-form msgspec structs with 32-byte opaque block
ids, 3-frame PUB messages, a replay ROUTER) and one fake vLLM publisher in
Python (XPUB, so the test knows when the statebus subscribed) feed one
statebus on loopback. Requests go to the engines directly; assertions read
the region through `syctl --json`:
- the wire is vLLM's (batch and event keys in msgspec field order, bin ids);
- a prompt's prefix is indexed for the engine that served it, under the
  router's own chain (`syctl match --tokens`), not under the engine's ids;
- evictions (BlockRemoved) and /reset_prefix_cache (AllBlocksCleared)
  un-index exactly what the engine dropped;
- a LoRA adapter's blocks match only with that adapter's namespace;
- events without token_ids or with an unknown parent are counted, skipped;
- `syctl workers` shows engine "vllm"; the scraped /metrics load appears
  in `syctl load` when the statebus scrapes.
Run with /usr/bin/python3 (Debian's python3-zmq and python3-msgpack).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import msgpack
import zmq

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import check, fail, free_port, free_ports, wait_for  # noqa: E402

STATEBUS, SYCTL, MOCK = sys.argv[1:4]
PID = os.getpid()
SHM = "/dev/shm/sy-test-vllm-%d" % PID
CTL = "ipc://%s.ctl" % SHM
TMP = "/tmp/sy-test-vllm-%d" % PID
ZCTX = zmq.Context.instance()
BS = 4
procs = []


def syctl(*args):
    return sytest.syctl_json(SYCTL, SHM, *args)


@sytest.on_fail
def _logs():
    sytest.print_dir_logs(TMP)


class Mock:
    """One switchyard-mock-engine in vLLM mode."""

    def __init__(self, name, *extra):
        self.name = name
        self.log = open(os.path.join(TMP, name + ".log"), "w")
        for _ in range(5):  # a port taken meanwhile (by a client socket): new ports
            self.port, self.kv, self.replay = free_port(), free_port(), free_port()
            self.p = subprocess.Popen(
                [MOCK, "--engine", "vllm", "--port", str(self.port), "--kv-port", str(self.kv),
                 "--replay-port", str(self.replay), "--block-size", str(BS), "--model",
                 "base-m", "--lora-modules", "sql-lora,chat-lora", "--seed", "7"] + list(extra),
                stdout=self.log, stderr=self.log)
            procs.append(self.p)
            if wait_for(name + " up", lambda: self.p.poll() is not None or
                        self.get("/version")[0] == 200) and self.p.poll() is None:
                break
        check(self.p.poll() is None, name + " did not start")
        self.url = "http://127.0.0.1:%d" % self.port

    def get(self, path):
        try:
            s, _, b = sytest.request(self.port, "GET", path, timeout=5)
            return s, b
        except OSError:
            return 0, b""

    def complete(self, tokens, model="base-m"):
        s, _, b = sytest.request(self.port, "POST", "/v1/completions",
                                 {"model": model, "prompt": tokens, "max_tokens": 1})
        check(s == 200, "%s: completion %d %r" % (self.name, s, b[:200]))
        return json.loads(b)

    def worker(self):
        return {"url": self.url, "engine": "vllm", "model": "base-m",
                "kv_events": {"endpoint_host": "127.0.0.1", "endpoint_port_base": self.kv,
                              "replay_port_base": self.replay, "block_size": BS}}


class FakeVllm:
    """A Python vLLM publisher: XPUB (subscription visible), exact payloads."""

    def __init__(self):
        self.port = free_port()
        self.kv = free_port()
        self.url = "http://127.0.0.1:%d" % self.port  # no HTTP server: discovery fails
        self.pub = ZCTX.socket(zmq.XPUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.bind("tcp://127.0.0.1:%d" % self.kv)
        self.seq = 0

    def wait_subscribed(self):
        if self.pub.poll(15000) == 0:
            fail("fake vLLM: the statebus never subscribed")
        self.pub.recv()

    def send(self, events):
        batch = {"ts": time.time(), "events": events, "data_parallel_rank": 0}
        self.pub.send_multipart([b"", struct.pack(">q", self.seq),
                                 msgpack.packb(batch, use_bin_type=True)])
        self.seq += 1

    def worker(self):
        return {"url": self.url, "engine": "vllm", "model": "base-m",
                "kv_events": {"endpoint_host": "127.0.0.1", "endpoint_port_base": self.kv,
                              "block_size": BS}}


def yaml_config(workers):
    """The statebus's YAML (block style, plain scalars: enums are unquoted)."""
    out = ["state:", "  shm_path: " + SHM, "statebus:", "  control_endpoint: " + CTL,
           "  health_interval_ms: 100", "  discovery_retry_ms: 200", "  discovery_attempts: 1",
           "  discovery_timeout_ms: 500", "workers:"]
    for w in workers:
        out += ["  - url: " + w["url"], "    engine: " + w["engine"], "    model: " + w["model"],
                "    kv_events:"]
        out += ["      %s: %s" % kv for kv in w["kv_events"].items()]
    return "\n".join(out) + "\n"


def stored(hashes, parent, tokens, lora=None, **extra):
    ev = {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
          "token_ids": tokens, "block_size": BS, "lora_id": None, "medium": "GPU",
          "lora_name": lora}
    ev.update(extra)
    return ev


def depth(tokens, url, *opts):
    m = syctl("match", "--tokens", ",".join(map(str, tokens)), "--block-size", str(BS), *opts)
    for x in m["matches"]:
        if x["worker"] == url:
            return x["depth"]
    return 0


def counters():
    return syctl("streams")["counters"]


def stream(url):
    for s in syctl("streams")["streams"]:
        if s["worker"] == url and s["dp_rank"] == 0:
            return s
    return None


def prompt(seed, n):
    return [(seed * 37 + i * (7 + seed)) % 250 + 1 for i in range(n)]


def main():
    os.makedirs(TMP, exist_ok=True)
    a = Mock("A")
    b = Mock("B", "--cache-tokens", "64")  # 16 pages of 4 tokens: evicts soon
    f = FakeVllm()
    # an independent subscriber on A: the wire as vLLM encodes it
    spy = ZCTX.socket(zmq.SUB)
    spy.setsockopt(zmq.LINGER, 0)
    spy.setsockopt(zmq.SUBSCRIBE, b"")
    spy.connect("tcp://127.0.0.1:%d" % a.kv)
    cfg = os.path.join(TMP, "sy.yaml")
    with open(cfg, "w") as fh:
        fh.write(yaml_config([a.worker(), b.worker(), f.worker()]))
    log = open(os.path.join(TMP, "statebus.log"), "w")
    sb = subprocess.Popen([STATEBUS, "--config", cfg, "--log-level", "debug"],
                          stdout=log, stderr=log)
    procs.append(sb)

    # workers: engine vllm, KV facts from the configuration (no /server_info)
    wait_for("the region", lambda: os.path.exists(SHM) and sb.poll() is None, timeout=10)
    time.sleep(0.2)

    def ws():
        return {w["worker"]: w for w in syctl("workers")["workers"]}
    w = wait_for("three vLLM workers subscribed", lambda: (
        lambda m: m if len(m) == 3 and all(stream(u) and stream(u)["subscribed"]
                                           for u in m) else None)(ws()), timeout=20)
    for u, rec in w.items():
        check(rec["engine"] == "vllm", "engine of %s: %r" % (u, rec))
        check(rec["kv_events"]["block_size"] == BS, rec)
    check(w[a.url]["kv_events"]["replay_port_base"] == a.replay, w[a.url])

    # slow joiner: warm each mock up until its batches reach the statebus
    for m, seed in ((a, 90), (b, 91)):
        k = [0]

        def warmed():
            k[0] += 1
            m.complete(prompt(seed + 100 * k[0], 8))
            return (stream(m.url) or {}).get("batches", 0) > 0
        wait_for(m.name + " events indexed", warmed, timeout=15, interval=0.2)
        sytest.request(m.port, "POST", "/reset_prefix_cache")
    wait_for("warm-up cleared", lambda: depth(prompt(190, 8), a.url) == 0)

    # 1. matching on the router's chain, for the engine that served it
    p = prompt(1, 40)  # 10 pages
    a.complete(p)
    wait_for("A holds the prompt", lambda: depth(p, a.url) == 10)
    check(depth(p, b.url) == 0, "B must not match A's prompt")
    check(depth(p + prompt(2, 8), a.url) == 10, "a longer prompt matches A's 10 pages")
    c = counters()
    check(c["switchyard_kv_event_vllm_rehashed_blocks_total"] >= 10, c)

    # the wire of A is vLLM's: map batch, map events in field order, bin ids
    seen = None
    deadline = time.time() + 5
    while seen is None and time.time() < deadline:
        if spy.poll(200):
            topic, seq8, payload = spy.recv_multipart()
            check(len(seq8) == 8, "seq frame of 8 bytes")
            batch = msgpack.unpackb(payload, raw=False)
            for ev in batch["events"]:
                if ev["type"] == "BlockStored":
                    seen = (batch, ev)
                    break
        else:
            a.complete(prompt(3, 8))
    check(seen is not None, "no BlockStored seen on A's PUB")
    batch, ev = seen
    check(list(batch) == ["ts", "events", "data_parallel_rank"], list(batch))
    check(list(ev) == ["type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
                       "lora_id", "medium", "lora_name"], list(ev))
    check(all(isinstance(h, bytes) and len(h) == 32 for h in ev["block_hashes"]), ev)
    check(ev["medium"] == "GPU" and ev["block_size"] == BS, ev)
    # the engine's ids are not the router's: matching them finds nothing
    ids = [str(struct.unpack(">q", h[:8])[0]) for h in ev["block_hashes"]]
    m = syctl("match", "--hashes", ",".join(ids))
    check(all(x["worker"] != a.url for x in m["matches"]), "engine ids must not be indexed")

    # 2. LoRA: the adapter's own namespace
    q = prompt(4, 24)  # 6 pages
    a.complete(q, model="sql-lora")
    wait_for("A holds the adapter's prompt",
             lambda: depth(q, a.url, "--lora", "sql-lora") == 6)
    check(depth(q, a.url) == 0, "base-model hashing must not match the adapter's blocks")
    check(depth(q, a.url, "--lora", "chat-lora") == 0, "another adapter must not match")
    check(depth(p, a.url, "--lora", "sql-lora") == 0, "the adapter must not match base blocks")
    s, _, _ = sytest.request(a.port, "POST", "/v1/completions",
                             {"model": "nope", "prompt": [1, 2], "max_tokens": 1})
    check(s == 404, "vLLM answers 404 for an unknown model, got %d" % s)

    # 3. removals: B's 16-page cache evicts r1's tail when r2 arrives
    r1, r2 = prompt(5, 40), prompt(6, 40)
    b.complete(r1)
    wait_for("B holds r1", lambda: depth(r1, b.url) == 10)
    b.complete(r2)
    wait_for("B holds r2", lambda: depth(r2, b.url) == 10)
    wait_for("r1 cut to what B kept", lambda: depth(r1, b.url) == 6)
    # AllBlocksCleared
    s, _, _ = sytest.request(b.port, "POST", "/reset_prefix_cache")
    check(s == 200, "reset_prefix_cache: %d" % s)
    wait_for("B cleared", lambda: depth(r2, b.url) == 0 and depth(r1, b.url) == 0)
    check(depth(p, a.url) == 10, "A's blocks survive B's clear")
    b.complete(r1)
    wait_for("B re-indexed after the clear", lambda: depth(r1, b.url) == 10)

    # 4. the fake publisher: exact vLLM payloads, bad ones counted
    f.wait_subscribed()
    t = prompt(7, 12)  # 3 pages
    h = [bytes([k]) * 32 for k in (1, 2, 3)]
    before = counters()
    f.send([stored([h[0], h[1]], None, t[:8]),
            stored([b"\x09" * 32], b"\x08" * 32, t[8:12]),   # parent never stored
            stored([b"\x0a" * 32], None, [])])                 # no tokens
    f.send([{"type": "BlockStored", "block_hashes": [b"\x0b" * 32], "parent_block_hash": None,
             "block_size": BS, "lora_id": None, "medium": "GPU", "lora_name": None}])
    f.send([stored([h[2]], h[1], t[8:12], group_idx=0, extra_keys=[None])])
    wait_for("fake's chain indexed", lambda: depth(t, f.url) == 3)
    after = counters()
    check(after["switchyard_kv_event_vllm_parent_unknown_total"] -
          before["switchyard_kv_event_vllm_parent_unknown_total"] == 1, after)
    check(after["switchyard_kv_event_vllm_tokens_missing_total"] -
          before["switchyard_kv_event_vllm_tokens_missing_total"] == 2, after)
    # BlockRemoved of the middle block: the match stops before it, exactly
    f.send([{"type": "BlockRemoved", "block_hashes": [h[1]], "medium": "GPU"}])
    wait_for("middle block removed", lambda: depth(t, f.url) == 1)
    f.send([{"type": "BlockRemoved", "block_hashes": [b"\x77" * 32], "medium": None}])
    wait_for("unknown removal counted", lambda: counters()[
        "switchyard_kv_event_vllm_remove_unknown_total"] > before[
        "switchyard_kv_event_vllm_remove_unknown_total"])
    # another KV-cache group is not indexed
    f.send([stored([b"\x0c" * 32], None, t[:4], group_idx=1)])
    wait_for("other group counted", lambda: counters()[
        "switchyard_kv_event_vllm_other_group_total"] > before[
        "switchyard_kv_event_vllm_other_group_total"])
    f.send([{"type": "AllBlocksCleared"}])
    wait_for("fake cleared", lambda: depth(t, f.url) == 0)
    # the cleared ids are forgotten: a child of a cleared block has no parent
    f.send([stored([b"\x0d" * 32], h[0], t[4:8])])
    wait_for("child of a cleared block refused", lambda: counters()[
        "switchyard_kv_event_vllm_parent_unknown_total"] - before[
        "switchyard_kv_event_vllm_parent_unknown_total"] == 2)
    check(depth(p, a.url) == 10, "A unaffected by the fake's clear")

    # 5. scraped load (when the statebus scrapes vLLM's /metrics)
    if os.environ.get("SY_VLLM_EXPECT_SCRAPE", "1") == "1":
        def scraped():
            for x in syctl("load")["workers"]:
                sc = x.get("scraped", {})
                if x["worker"] == a.url and sc.get("status") == "fresh" and \
                        sc["prompt_tokens_total"] >= len(p) + len(q) and sc["kv_cache_usage"] > 0:
                    return x
            return None
        # a scrape after the traffic above: A's counters and cache usage
        x = wait_for("A's scraped load fresh and counting", scraped, timeout=10)
        check(x["scraped"]["num_requests_running"] == 0, x)
        check(x["scraped"]["num_requests_waiting"] == 0, x)
        check(0 < x["scraped"]["kv_cache_usage"] <= 1, x)
        check(x["scraped"]["generation_tokens_total"] > 0, x)
        check(x["ranks"][0]["scraped"] and x["fresh"], x)
        check(x["max_total_num_tokens"] == 65536, x)  # num_gpu_blocks × block_size
        for y in syctl("load")["workers"]:
            if y["worker"] == f.url:
                check(y.get("scraped", {}).get("status") != "fresh",
                      "no /metrics on the fake: its scraped load must be unknown: %r" % y)
    print("statebus_vllm: ok")
    return True


if __name__ == "__main__":
    ok = False
    try:
        ok = main()
    finally:
        sytest.stop_procs(procs)
        for p in (SHM, SHM + ".ctl"):
            try:
                os.unlink(p)
            except OSError:
                pass
        subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
        if ok:
            shutil.rmtree(TMP, ignore_errors=True)
