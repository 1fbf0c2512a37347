#!/usr/bin/python3
"""bench/quality/run.py — routing quality on a shared-prefix workload:
the same multi-turn chat sessions, in the same
order and at the same concurrency, through switchyard-router with
round_robin, power_of_two, cache_aware and session_aware, and through
HAProxy `balance random(2)` pointed at the same mock engines.

Workload (seeded, identical for every run): SESSIONS chat sessions of TURNS
turns over PROMPTS common system prompts (PROMPT_CHARS tokens each with the
mocks' bytes tokenizer); each turn adds a short user message and the
previous reply (the mocks cache prompt + reply, so turn t+1 can hit turn t
through the reply). CONC client threads take sessions from one queue and
run a session's turns in order, streaming (TTFT = first content chunk).

Engines: ENGINES mocks with block 16, CACHE_TOKENS of KV each (not enough
for every system prompt on every engine), PREFILL_US µs per uncached
prompt token on one serial prefill timeline per engine, DECODE_US µs per
output token, MAX_TOKENS output tokens. Between runs every mock gets
POST /mock/reset and /flush_cache (the statebus index empties too).

Reported per run: engine-side hit ratio (Σ cached / Σ prompt tokens from
/mock/stats), TTFT mean/p50/p99 client-side and engine-side (/mock/stats
`recent`, polled during the run), throughput (requests/s of the run) and
errors. Writes bench/results/quality.md and bench/results/quality.png
(ENGINE=vllm: quality-vllm.md and quality-vllm.png).

ENGINE=vllm runs the same workload on mocks in `--engine vllm` mode (vLLM's
HTTP API, /metrics and map-form KV events with opaque ids; the statebus
re-hashes their token_ids and scrapes /metrics for load; workers[].engine
vllm with their kv_events endpoints from the configuration; flushes by
/reset_prefix_cache).

Scenarios (SCENARIOS, default "events"):
  events    the engines publish KV events at once (the table above:
            POLICIES) → bench/results/quality.md, quality.png;
  noevents  the same engines, the statebus with kv_events off: cache state
            only from the routers' predictions (approximate mode);
  delayed   every engine publishes each KV-event batch DELAY_MS late (the
            prefill-plus-publish window of a real engine).
The last two run PREDICT_POLICIES and append to
bench/results/quality-predict.md; `cache_aware_events_only` is cache_aware
with policy.cache_predicted_weight 0 (predictions ignored: KV events only).

Env (defaults): ENGINES 8, PROMPTS 32, PROMPT_CHARS 2000, SESSIONS 128,
TURNS 6, CONC 32, CACHE_TOKENS 10240, PREFILL_US 40, DECODE_US 4000,
MAX_TOKENS 16, ENGINE sglang, POLICIES "round_robin power_of_two session_aware cache_aware
haproxy", SCENARIOS "events", PREDICT_POLICIES "round_robin cache_aware
cache_aware_events_only", DELAY_MS 200.
"""
import http.client
import json
import os
import queue
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from benchlib import MOCK, ROOT, ROUTER, STATEBUS, SYCTL, env, free_port  # noqa: E402

FLEET = os.path.join(ROOT, "tools/mock-fleet")
RESULTS = os.path.join(ROOT, "bench/results")

ENGINES = env("ENGINES", 8)
ENGINE = os.environ.get("ENGINE", "sglang")
if ENGINE not in ("sglang", "vllm"):
    raise SystemExit("ENGINE: sglang or vllm")
SUFFIX = "" if ENGINE == "sglang" else "-vllm"
FLEET_ROWS = []
PROMPTS = env("PROMPTS", 32)
PROMPT_CHARS = env("PROMPT_CHARS", 2000)
SESSIONS = env("SESSIONS", 128)
TURNS = env("TURNS", 6)
CONC = env("CONC", 32)
CACHE_TOKENS = env("CACHE_TOKENS", 10240)
PREFILL_US = env("PREFILL_US", 40)
DECODE_US = env("DECODE_US", 4000)
MAX_TOKENS = env("MAX_TOKENS", 16)
POLICIES = os.environ.get("POLICIES",
                          "round_robin power_of_two session_aware cache_aware haproxy").split()
SCENARIOS = os.environ.get("SCENARIOS", "events").split()
PREDICT_POLICIES = os.environ.get("PREDICT_POLICIES",
                                  "round_robin cache_aware cache_aware_events_only").split()
DELAY_MS = env("DELAY_MS", 200)
# router policy block per run name
POLICY_YAML = {"cache_aware_events_only": "{type: cache_aware, cache_predicted_weight: 0}"}

T = tempfile.mkdtemp(prefix="sy-quality.")
SHM = "/dev/shm/sy-bench-quality-%d" % os.getpid()
procs = []


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def hreq(port, method, path, body=None, headers=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"content-type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=json.dumps(body) if isinstance(body, dict) else body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def wait_for(what, pred, timeout=30.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if pred():
                return
        except (OSError, ValueError, KeyError, subprocess.SubprocessError):
            pass
        time.sleep(0.1)
    raise SystemExit("bench/quality: timed out waiting for " + what)


def syctl(*args):
    r = subprocess.run([SYCTL, "--shm", SHM] + list(args) + ["--json"], capture_output=True,
                       text=True, timeout=10, check=True)
    return json.loads(r.stdout)


# ---- workload ---------------------------------------------------------------

WORDS = ("the of and to in is that for it as with was on be by at this from or an are "
         "system model answer question data engine cache token prefix request policy "
         "router latency throughput session context memory block page kernel").split()


def text(rng, n):
    out, size = [], 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def workload():
    rng = random.Random(42)
    prompts = ["[system prompt %d] " % i + text(rng, PROMPT_CHARS) for i in range(PROMPTS)]
    sessions = []
    for s in range(SESSIONS):
        p = rng.randrange(PROMPTS)
        users = [text(rng, rng.randrange(60, 240)) for _ in range(TURNS)]
        sessions.append((s, prompts[p], users))
    return sessions


def stream_chat(port, messages, session):
    """One streamed chat turn: (ttft_s, content, ok)."""
    body = json.dumps({"model": "m1", "stream": True, "max_tokens": MAX_TOKENS,
                       "messages": messages})
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/chat/completions", body=body,
              headers={"content-type": "application/json", "x-session-id": session})
    r = c.getresponse()
    if r.status != 200:
        r.read()
        c.close()
        return None, "", False
    ttft, parts = None, []
    for line in r:
        if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
            continue
        d = json.loads(line[6:])
        ch = d.get("choices") or []
        piece = ch[0].get("delta", {}).get("content") if ch else None
        if piece:
            if ttft is None:
                ttft = time.perf_counter() - t0
            parts.append(piece)
    c.close()
    return ttft, "".join(parts), ttft is not None


def run_workload(port, tag, sessions):
    q = queue.Queue()
    for s in sessions:
        q.put(s)
    ttfts, errors = [], [0]
    lock = threading.Lock()

    def worker():
        while True:
            try:
                sid, system, users = q.get_nowait()
            except queue.Empty:
                return
            msgs = [{"role": "system", "content": system}]
            for u in users:
                msgs.append({"role": "user", "content": u})
                try:
                    ttft, content, ok = stream_chat(port, msgs, "%s-%d" % (tag, sid))
                except (OSError, http.client.HTTPException, ValueError):
                    ttft, content, ok = None, "", False
                with lock:
                    if ok:
                        ttfts.append(ttft)
                    else:
                        errors[0] += 1
                msgs.append({"role": "assistant", "content": content})

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(CONC)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return ttfts, errors[0], time.perf_counter() - t0


# ---- engines ------------------------------------------------------------------

def mock_ports(urls):
    return [int(u.rsplit(":", 1)[1]) for u in urls]


def reset_mocks(urls):
    for p in mock_ports(urls):
        hreq(p, "POST", "/mock/reset", "")
        hreq(p, "POST", "/flush_cache" if ENGINE == "sglang" else "/reset_prefix_cache", "")


class RecentPoller(threading.Thread):
    """Collects every request's engine-side TTFT from /mock/stats `recent`."""

    def __init__(self, urls):
        super().__init__(daemon=True)
        self.ports = mock_ports(urls)
        self.seen = {}
        self.stop = threading.Event()
        self.start()

    def poll(self):
        for p in self.ports:
            st = json.loads(hreq(p, "GET", "/mock/stats")[1])
            for r in st.get("recent", []):
                self.seen[(p, r["id"])] = r["ttft_us"] / 1e6

    def run(self):
        while not self.stop.is_set():
            self.poll()
            time.sleep(0.2)

    def finish(self):
        self.stop.set()
        self.join()
        self.poll()
        return list(self.seen.values())


def pct(v, q):
    if not v:
        return float("nan")
    s = sorted(v)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def start_router(policy):
    port = free_port()
    cfg = os.path.join(T, "router-%s.yaml" % policy)
    with open(cfg, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\n%s"
                "router: {host: 127.0.0.1, port: %d, processes: 2}\n"
                "policy: %s\n" % (SHM, workers_yaml(), port,
                                   POLICY_YAML.get(policy, "{type: %s}" % policy)))
    p = subprocess.Popen([ROUTER, "--config", cfg, "--log-level", "warn"],
                         stdout=open(os.path.join(T, "router-%s.log" % policy), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    wait_for("router " + policy, lambda: hreq(port, "GET", "/readyz", timeout=2)[0] == 200)
    return p, port


def workers_yaml(kv_events="on"):
    """The workers: section (vLLM engines advertise no KV endpoint: from
    here; with KV events off only their block size)."""
    if ENGINE == "sglang":
        return "worker_urls: [%s]\n" % ", ".join(URLS)
    if kv_events == "off":
        return "workers:\n" + "".join("  - {url: %s, engine: vllm, kv_events: {block_size: 16}}\n"
                                       % m["url"] for m in FLEET_ROWS)
    return "workers:\n" + "".join(
        "  - {url: %s, engine: vllm, kv_events: {endpoint_host: 127.0.0.1, "
        "endpoint_port_base: %d, replay_port_base: %d, block_size: 16}}\n"
        % (m["url"], m["kv_port"], m["replay_port"]) for m in FLEET_ROWS)


def start_haproxy():
    port = free_port()
    cfg = os.path.join(T, "haproxy.cfg")
    servers = "".join("  server e%d 127.0.0.1:%d\n" % (i, p)
                      for i, p in enumerate(mock_ports(URLS)))
    with open(cfg, "w") as f:
        f.write("global\n  nbthread 1\n  maxconn 4000\ndefaults\n  mode http\n"
                "  timeout connect 5s\n  timeout client 120s\n  timeout server 120s\n"
                "  http-reuse always\nfrontend fe\n  bind 127.0.0.1:%d\n  default_backend be\n"
                "backend be\n  balance random(2)\n%s" % (port, servers))
    p = subprocess.Popen(["/usr/sbin/haproxy", "-f", cfg], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    procs.append(p)

    def up():
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.close()
        return True
    wait_for("haproxy", up)
    return p, port


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def one_run(name, sessions):
    reset_mocks(URLS)
    wait_for("index empty", lambda: sum(w["blocks"] for w in syctl("index")["workers"]) == 0)
    p, port = start_haproxy() if name == "haproxy" else start_router(name)
    poller = RecentPoller(URLS)
    ttfts, errors, secs = run_workload(port, name, sessions)
    eng = poller.finish()
    stop(p)
    stats = [json.loads(hreq(pp, "GET", "/mock/stats")[1]) for pp in mock_ports(URLS)]
    prompt = sum(s["prompt_tokens"] for s in stats)
    cached = sum(s["cached_tokens"] for s in stats)
    reqs = [s["requests"] for s in stats]
    row = {"name": name, "hit": cached / prompt if prompt else 0.0,
           "ttft_mean": statistics.mean(ttfts) if ttfts else float("nan"),
           "ttft_p50": pct(ttfts, 0.5), "ttft_p99": pct(ttfts, 0.99),
           "eng_mean": statistics.mean(eng) if eng else float("nan"),
           "eng_p50": pct(eng, 0.5), "eng_p99": pct(eng, 0.99), "eng_n": len(eng),
           "rps": len(ttfts) / secs, "secs": secs, "errors": errors, "n": len(ttfts),
           "per_engine": reqs, "ttfts": ttfts}
    log("%-14s hit %.3f  ttft mean %.1f p50 %.1f p99 %.1f ms  engine p50 %.1f p99 %.1f ms  "
        "%.1f req/s  errors %d  per engine %s" % (
            name, row["hit"], row["ttft_mean"] * 1e3, row["ttft_p50"] * 1e3,
            row["ttft_p99"] * 1e3, row["eng_p50"] * 1e3, row["eng_p99"] * 1e3, row["rps"],
            errors, reqs))
    return row


def write_results(rows):
    os.makedirs(RESULTS, exist_ok=True)
    by = {r["name"]: r for r in rows}
    rr = by.get("round_robin")
    ca = by.get("cache_aware")
    lines = ["| policy | engine hit ratio | × round_robin | TTFT mean ms | p50 ms | p99 ms | "
             "engine TTFT mean ms | p50 ms | p99 ms | req/s | errors | requests per engine |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ratio = r["hit"] / rr["hit"] if rr and rr["hit"] > 0 else float("nan")
        label = "HAProxy `balance random(2)`" if r["name"] == "haproxy" else "switchyard " + r["name"]
        lines.append("| %s | %.3f | %.2f× | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %s |" % (
            label, r["hit"], ratio, r["ttft_mean"] * 1e3, r["ttft_p50"] * 1e3,
            r["ttft_p99"] * 1e3, r["eng_mean"] * 1e3, r["eng_p50"] * 1e3, r["eng_p99"] * 1e3,
            r["rps"], r["errors"], "/".join(str(x) for x in r["per_engine"])))
    verdict = []
    if ca and rr:
        ratio = ca["hit"] / rr["hit"] if rr["hit"] > 0 else float("inf")
        verdict.append("cache_aware hit ratio = %.2f× round_robin's (target ≥ 3.8×): %s"
                       % (ratio, "met" if ratio >= 3.8 else "**not met**"))
        others = [r for r in rows if r["name"] != "cache_aware"]
        for k, lab in (("ttft_p50", "p50"), ("ttft_p99", "p99")):
            worst = [r["name"] for r in others if not ca[k] < r[k]]
            verdict.append("cache_aware client TTFT %s below every baseline: %s" % (
                lab, "met" if not worst else "**not met** (vs %s)" % ", ".join(worst)))
    head = ("Engines: %s mocks. Workload: %d sessions × %d turns over %d system prompts of %d tokens (+60–240-token "
            "user turns, %d output tokens each), %d concurrent clients, streamed; %d mock engines "
            "(block 16, %d KV tokens each, %d µs/uncached prompt token on a serial prefill "
            "timeline, %d µs/output token). Router: 2 processes, statebus on the same region. "
            "Date %s, %s." % (ENGINE, SESSIONS, TURNS, PROMPTS, PROMPT_CHARS, MAX_TOKENS, CONC, ENGINES,
                              CACHE_TOKENS, PREFILL_US, DECODE_US,
                              time.strftime("%Y-%m-%d"), machine()))
    md = "# bench/quality\n\n" + head + "\n\n" + "\n".join(lines) + "\n\n" + \
         "\n".join("- " + v for v in verdict) + "\n"
    with open(os.path.join(RESULTS, "quality%s.md" % SUFFIX), "w") as f:
        f.write(md)
    print(md)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    names = [r["name"] for r in rows]
    ax[0].bar(names, [r["hit"] for r in rows], color="#4a7")
    ax[0].set_title("engine-side cache hit ratio")
    ax[0].tick_params(axis="x", rotation=30)
    x = range(len(rows))
    w = 0.27
    for i, (k, lab) in enumerate((("ttft_mean", "mean"), ("ttft_p50", "p50"), ("ttft_p99", "p99"))):
        ax[1].bar([j + (i - 1) * w for j in x], [r[k] * 1e3 for r in rows], w, label=lab)
    ax[1].set_xticks(list(x))
    ax[1].set_xticklabels(names, rotation=30)
    ax[1].set_ylabel("client TTFT (ms)")
    ax[1].set_title("TTFT (client side)")
    ax[1].legend()
    fig.suptitle("switchyard bench/quality — shared-prefix multi-turn workload (%s mocks)" % ENGINE)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "quality%s.png" % SUFFIX), dpi=110)


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "%d-vCPU %s (load average %.1f at the end)" % (os.cpu_count(), cpu, os.getloadavg()[0])


def start_fleet(d, extra):
    """ENGINES mocks (mock-fleet) with extra flags → their URLs."""
    r = subprocess.run([FLEET, "start", "--dir", d, "--bin", MOCK, "--count", str(ENGINES), "--",
                        "--model", "m1", "--block-size", "16", "--cache-tokens", str(CACHE_TOKENS),
                        "--prefill-us-per-token", str(PREFILL_US),
                        "--decode-us-per-token", str(DECODE_US), "--max-running", "32",
                        "--load-interval-ms", "200", "--log-level", "warn"] + extra
                       + (["--engine", "vllm"] if ENGINE == "vllm" else []),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("mock-fleet: " + r.stderr)
    global FLEET_ROWS
    with open(os.path.join(d, "fleet.json")) as f:
        FLEET_ROWS = json.load(f)
    return [m["url"] for m in FLEET_ROWS]


def start_statebus(kv_events):
    cfg = os.path.join(T, "statebus.yaml")
    with open(cfg, "w") as f:
        f.write("model_id: m1\nstate: {shm_path: %s}\n%s"
                "statebus: {kv_events: %s}\n" % (SHM, workers_yaml(kv_events), kv_events))
    sb = subprocess.Popen([STATEBUS, "--config", cfg, "--log-level", "warn"],
                          stdout=open(os.path.join(T, "statebus.log"), "a"),
                          stderr=subprocess.STDOUT)
    procs.append(sb)
    signal_want = "events" if kv_events == "on" else "predicted"
    wait_for("statebus", lambda: syctl("header")["statebus"]["live"] and
             all(w.get("kv_events", {}).get("block_size") == 16 and
                 w.get("cache_signal") == signal_want
                 for w in syctl("workers")["workers"]) and
             len(syctl("workers")["workers"]) == ENGINES)
    return sb


SCENARIO_TEXT = {
    "noevents": "engines without KV events (statebus kv_events off: approximate mode)",
    "delayed": "KV events published %d ms after each step (--kv-event-delay-ms)",
}


def write_predict_results(scenario, rows, secs):
    by = {r["name"]: r for r in rows}
    rr, ea = by.get("round_robin"), by.get("cache_aware_events_only")
    lines = ["| policy | engine hit ratio | × round_robin | × events only | TTFT mean ms | "
             "p50 ms | p99 ms | req/s | errors | requests per engine |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        x_rr = r["hit"] / rr["hit"] if rr and rr["hit"] > 0 else float("nan")
        x_ea = r["hit"] / ea["hit"] if ea and ea["hit"] > 0 else float("nan")
        lines.append("| %s | %.3f | %.2f× | %.2f× | %.1f | %.1f | %.1f | %.1f | %d | %s |" % (
            r["name"], r["hit"], x_rr, x_ea, r["ttft_mean"] * 1e3, r["ttft_p50"] * 1e3,
            r["ttft_p99"] * 1e3, r["rps"], r["errors"],
            "/".join(str(x) for x in r["per_engine"])))
    head = ("## %s\n\n%s. Workload as in quality.md: %d sessions × %d turns over %d system "
            "prompts of %d tokens, %d concurrent clients, %d mock engines (%d KV tokens each, "
            "%d µs/uncached prompt token, %d µs/output token); router 2 processes. Date %s, %s; "
            "the %d runs took %.0f s." % (
                scenario, SCENARIO_TEXT[scenario] % DELAY_MS if "%" in SCENARIO_TEXT[scenario]
                else SCENARIO_TEXT[scenario], SESSIONS, TURNS, PROMPTS, PROMPT_CHARS, CONC,
                ENGINES, CACHE_TOKENS, PREFILL_US, DECODE_US, time.strftime("%Y-%m-%d %H:%M UTC",
                                                                            time.gmtime()),
                machine(), len(rows), secs))
    md = head + "\n\n" + "\n".join(lines) + "\n\n"
    path = os.path.join(RESULTS, "quality-predict.md")
    os.makedirs(RESULTS, exist_ok=True)
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write("# bench/quality — predicted cache state\n\n")
        f.write(md)
    print(md)


def main():
    global URLS
    for scenario in SCENARIOS:
        if scenario not in ("events", "noevents", "delayed"):
            raise SystemExit("bench/quality: unknown scenario " + scenario)
    d = os.path.join(T, "fleet")
    try:
        sessions = workload()
        for scenario in SCENARIOS:
            t0 = time.monotonic()
            extra = ["--kv-event-delay-ms", str(DELAY_MS)] if scenario == "delayed" else []
            URLS = start_fleet(d, extra)
            names = POLICIES if scenario == "events" else PREDICT_POLICIES
            rows = []
            for name in names:
                # a fresh statebus and region per run: predictions of the
                # previous run would otherwise outlive the engines' flush
                sb = start_statebus("off" if scenario == "noevents" else "on")
                rows.append(one_run(name, sessions))
                stop(sb)
                procs.remove(sb)
                subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
            if scenario == "events":
                write_results(rows)
            else:
                write_predict_results(scenario, rows, time.monotonic() - t0)
            subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
            log("scenario %s: %.0f s" % (scenario, time.monotonic() - t0))
    finally:
        for p in procs:
            if p.poll() is None:
                stop(p)
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
        subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
        subprocess.run(["rm", "-rf", T])


if __name__ == "__main__":
    main()
