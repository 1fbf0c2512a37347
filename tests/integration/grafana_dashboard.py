#!/usr/bin/python3
"""grafana_dashboard.py DASHBOARD ROUTER STATEBUS FLEET MOCK SYCTL

The shipped Grafana dashboard (contrib/grafana/switchyard.json) asks only
for metric families the router and the statebus export. The exported set is
not a list kept here: a mock engine, a statebus and a router (cache_aware,
circuit breaker on, two processes) are started on loopback, a few requests
go through (a success, a streamed one, an unknown model), and the router's
/metrics is scraped. Every PromQL query of the dashboard (panel targets and
template variables) is reduced to the metric names it reads; each must be a
family (or a histogram's _bucket/_sum/_count series) of that scrape, so a
renamed or removed metric fails here. The dashboard's shape is checked too:
valid JSON, unique panel ids, every non-row panel has queries, and the
panels cover what an operator looks for (requests by route and outcome,
latency and TTFT quantiles, per-worker in-flight and engine load, cache hit ratio, health,
breaker and stall state, policy decisions, selection failures).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402
from sytest import fail, free_port, request  # noqa: E402

DASH, ROUTER, STATEBUS, FLEET, MOCK, SYCTL = sys.argv[1:7]
T = tempfile.mkdtemp(prefix="sy-graf.")
SHM = "/dev/shm/sy-test-graf-%d" % os.getpid()
procs, fleets = [], []

# Words of PromQL that look like metric names but are not.
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "and", "or", "unless", "offset", "le", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression (or label_values(...) query)
    reads: identifiers left after removing strings, label matchers, label
    lists of by/without/on/ignoring/group_*, Grafana variables, range and
    offset durations, number literals, and function names (an identifier followed by '(')."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^{}]*\}", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b", " ", e)  # number literals
    m = re.match(r"\s*label_values\s*\(\s*([A-Za-z_:][\w:]*)", e)
    if m:
        return {m.group(1)}
    names = set()
    for mt in re.finditer(r"[A-Za-z_:][\w:]*", e):
        word = mt.group(0)
        if re.match(r"\s*\(", e[mt.end():]) or word.lower() in PROMQL_WORDS:
            continue
        if re.fullmatch(r"\d+(ms|s|m|h|d|w|y)?", word):
            continue
        names.add(word)
    return names


def exported(text):
    """Metric families and series names of a Prometheus text exposition."""
    fams, series = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            fams.add(line.split()[2])
        elif line and not line.startswith("#"):
            series.add(re.match(r"[A-Za-z_:][\w:]*", line).group(0))
    return fams, series


def cleanup(ok):
    sytest.stop_procs(procs)
    for d in fleets:
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    subprocess.run([SYCTL, "--shm", SHM, "destroy"], capture_output=True)
    if ok:
        subprocess.run(["rm", "-rf", T])
    else:
        sytest.print_dir_logs(T)


def scrape():
    d = os.path.join(T, "fleet")
    fleets.append(d)
    eng = sytest.fleet_one(FLEET, MOCK, d, "--model", "m1")
    log = open(os.path.join(T, "statebus.log"), "a")
    procs.append(sytest.start_statebus(STATEBUS, SHM, [eng["url"]], log))
    sytest.wait_for("region created", lambda: os.path.exists(SHM), timeout=20)
    sytest.wait_for("statebus live", lambda: sytest.syctl_json(SYCTL, SHM, "header")["statebus"]["live"],
                    timeout=20)
    port = free_port()
    sytest.start_router(ROUTER, T, "router", port,
                        "model_id: m1\nstate: {shm_path: %s}\nworker_urls: [%s]\n"
                        "router: {host: 127.0.0.1, port: %d, processes: 2, cb_threshold: 5}\n"
                        "policy: {type: cache_aware}\n" % (SHM, eng["url"], port), procs, timeout=20)
    chat = {"model": "m1", "max_tokens": 4, "messages": [{"role": "user", "content": "hello " * 40}]}
    for _ in range(4):
        st, _, body = request(port, "POST", "/v1/chat/completions", chat)
        if st != 200:
            fail("chat: %d %s" % (st, body[:200]))
    st, _, _ = request(port, "POST", "/v1/chat/completions", dict(chat, stream=True))
    if st != 200:
        fail("streamed chat: %d" % st)
    request(port, "POST", "/v1/chat/completions", dict(chat, model="no-such-model"))
    st, _, body = request(port, "GET", "/metrics")
    if st != 200:
        fail("/metrics: %d" % st)
    return body.decode()


def main():
    with open(DASH) as f:
        dash = json.load(f)
    panels = []
    for p in dash.get("panels", []):
        panels.append(p)
        panels.extend(p.get("panels", []))  # collapsed rows hold their panels
    ids = [p["id"] for p in panels]
    if len(ids) != len(set(ids)):
        fail("panel ids are not unique: %s" % ids)
    queries = []  # (where, expr)
    for p in panels:
        if p.get("type") == "row":
            continue
        targets = [t for t in p.get("targets", []) if t.get("expr")]
        if not targets:
            fail("panel %r has no query" % p.get("title"))
        queries += [("panel %r %s" % (p["title"], t.get("refId")), t["expr"]) for t in targets]
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            qv = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            queries.append(("variable %s" % v["name"], qv))

    fams, series = exported(scrape())
    print("scrape: %d families, %d series names" % (len(fams), len(series)))
    if len(fams) < 20:
        fail("the scrape has only %d families" % len(fams))
    read, bad = set(), []
    for where, expr in queries:
        names = metric_names(expr)
        if not names:
            bad.append("%s reads no metric: %s" % (where, expr))
        for n in names:
            fam = re.sub(r"_(bucket|sum|count)$", "", n)
            ok = n in fams or n in series
            if n.endswith("_bucket"):
                ok = fam in fams and n in series  # a histogram's buckets
            if not ok:
                bad.append("%s reads %s, not exported by the router/statebus" % (where, n))
            read.add(fam if n.endswith(("_bucket", "_sum", "_count")) else n)
    for b in bad:
        print("FAIL:", b)
    if bad:
        fail("%d dashboard queries name metrics that are not exported" % len(bad))
    # What an operator looks for, each read by some query.
    want = ["switchyard_requests_total", "switchyard_responses_total",
            "switchyard_worker_requests_total", "switchyard_request_duration_seconds",
            "switchyard_ttft_seconds", "switchyard_worker_inflight_requests",
            "switchyard_worker_load_running_requests", "switchyard_worker_load_waiting_requests",
            "switchyard_cache_aware_decisions_total", "switchyard_worker_health",
            "switchyard_worker_cb_state", "switchyard_worker_stalled",
            "switchyard_worker_passive_down", "switchyard_policy_decisions_total",
            "switchyard_policy_selection_failures_total", "switchyard_statebus_live"]
    missing = [w for w in want if w not in read]
    if missing:
        fail("the dashboard has no panel reading %s" % missing)
    quant = [e for _, e in queries if "histogram_quantile" in e]
    for fam in ("switchyard_request_duration_seconds", "switchyard_ttft_seconds"):
        if not any(fam + "_bucket" in e for e in quant):
            fail("no quantile panel over %s" % fam)
    print("grafana_dashboard: OK (%d queries over %d families, all exported)" % (len(queries), len(read)))


sys.exit(0 if sytest.run_main(main, cleanup) else 1)
