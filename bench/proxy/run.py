#!/usr/bin/python3
"""bench/proxy/run.py — switchyard-router vs HAProxy (balance random(2)) in
front of the same two upstreams (docs: bench/proxy/README.md).

Pinning: the proxy under test on CPU 0; wrk and nginx on CPU 1. The two
proxies are run alternately (ROUNDS rounds), each for DURATION seconds with
the same wrk settings, for three workloads: a small non-streaming JSON answer
and a 64-event SSE answer (both from nginx, the SSE body in one piece), and
token streaming: build/bench/token_upstream writes each of 64 SSE events with
its own send(), one event per stream per BENCH_TOKEN_US µs (1000), to
BENCH_STREAM_CONNS (64) connections. Reported per proxy (median over rounds):
req/s, p99 latency, p99 added over the direct-to-upstream run, and CPU µs per
request (utime+stime of every proxy process from /proc, divided by
requests); for token streaming also CPU µs per relayed event.
Writes a Markdown table to bench/results/proxy.md (and stdout).

Env: ROUTER_BIN (the router under test), ROUTER_ARGS (extra router flags),
ROUTER_BASE_BIN (optional: a second router build, e.g. main's, run in the
same alternation as "switchyard-base" for before/after figures).
"""
import os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROUTER = os.environ.get("ROUTER_BIN", os.path.join(ROOT, "build/router/switchyard-router"))
ROUTER_ARGS = os.environ.get("ROUTER_ARGS", "").split()
ROUTER_BASE = os.environ.get("ROUTER_BASE_BIN")
DURATION = int(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
CONNS = int(os.environ.get("BENCH_CONNS", "32"))
STREAM_CONNS = int(os.environ.get("BENCH_STREAM_CONNS", "64"))
TOKEN_US = int(os.environ.get("BENCH_TOKEN_US", "1000"))
EVENTS = 64
TOKEN_UPSTREAM = os.environ.get("TOKEN_UPSTREAM_BIN", os.path.join(ROOT, "build/bench/token_upstream"))
NAMES = {"small": "small JSON", "sse": "SSE, 64 events", "stream": "token stream, 64 sends"}
TICK = os.sysconf("SC_CLK_TCK")

BODY = '{"model":"bench","messages":[{"role":"user","content":"hello"}],"max_tokens":8}'
STREAM_BODY = '{"model":"bench","messages":[{"role":"user","content":"hello"}],"max_tokens":64,"stream":true}'
SMALL = ('{"id":"x","object":"chat.completion","model":"bench","choices":[{"index":0,'
         '"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}')
SSE = "".join('data: {"choices":[{"delta":{"content":"tok%d"}}]}\\n\\n' % i for i in range(63)) + "data: [DONE]\\n\\n"


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def wait_port(port, t=5.0):
    end = time.time() + t
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close(); return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d did not open" % port)


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        try:
            f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except OSError:
            pass
    return total


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def wrk(port, script, conns=CONNS):
    cmd = ["taskset", "-c", "1", "wrk", "-t1", "-c%d" % conns, "-d%ds" % DURATION, "--latency",
           "-s", script, "http://127.0.0.1:%d/v1/chat/completions" % port]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99 = float(m.group(1)) * {"us": 1, "ms": 1000, "s": 1e6}[m.group(2)]
    errs = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, p99, reqs, int(errs.group(1)) if errs else 0


def run_proxy(kind, port, pids, script):
    t0 = cpu_ticks(pids)
    rps, p99, reqs, errs = wrk(port, script, STREAM_CONNS if kind == "stream" else CONNS)
    t1 = cpu_ticks(pids)
    cpu_us = (t1 - t0) * 1e6 / TICK / max(reqs, 1)
    return {"rps": rps, "p99": p99, "cpu_us": cpu_us, "cpu_ev": cpu_us / EVENTS, "errs": errs}


def main():
    for tool in ("haproxy", "nginx", "wrk", "taskset"):
        if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
            sys.exit("missing %s (bench/proxy/run installs it)" % tool)
    if not os.access(TOKEN_UPSTREAM, os.X_OK):
        sys.exit("missing %s (meson compile -C build)" % TOKEN_UPSTREAM)
    tmp = tempfile.mkdtemp(prefix="sy-bench-proxy.")
    procs = []
    try:
        up = {"small": [free_port(), free_port()], "sse": [free_port(), free_port()]}
        servers = ""
        for kind, ports in up.items():
            if kind == "stream":
                continue
            ctype, body = ("application/json", SMALL) if kind == "small" else ("text/event-stream", SSE)
            for p in ports:
                servers += """server { listen 127.0.0.1:%d; access_log off; keepalive_requests 1000000;
                  location / { default_type %s; return 200 '%s'; } }\n""" % (p, ctype, body)
        open(tmp + "/nginx.conf", "w").write("""daemon off; worker_processes 1; pid %s/nginx.pid;
error_log %s/nginx.err; events { worker_connections 4096; }
http { client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s; uwsgi_temp_path %s;
scgi_temp_path %s; %s }""" % ((tmp,) * 7 + (servers,)))
        procs.append(subprocess.Popen(["taskset", "-c", "1", "/usr/sbin/nginx", "-c", tmp + "/nginx.conf",
                                       "-p", tmp], stderr=subprocess.DEVNULL))
        up["stream"] = [free_port(), free_port()]
        for p in up["stream"]:
            procs.append(subprocess.Popen(["taskset", "-c", "1", TOKEN_UPSTREAM, "--port", str(p),
                                           "--events", str(EVENTS), "--interval-us", str(TOKEN_US)]))
        for ports in up.values():
            for p in ports:
                wait_port(p)
        script = tmp + "/post.lua"
        open(script, "w").write('wrk.method = "POST"\nwrk.body = \'%s\'\n'
                                'wrk.headers["Content-Type"] = "application/json"\n' % BODY)
        stream_script = tmp + "/post-stream.lua"
        open(stream_script, "w").write('wrk.method = "POST"\nwrk.body = \'%s\'\n'
                                       'wrk.headers["Content-Type"] = "application/json"\n' % STREAM_BODY)

        results = {}
        for kind, ports in up.items():
            script_k = stream_script if kind == "stream" else script
            # HAProxy, one thread, balance random(2), keep-alive to the upstreams.
            hport, rport = free_port(), free_port()
            open(tmp + "/haproxy.cfg", "w").write("""global
  nbthread 1
  maxconn 4000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 300s
  http-reuse always
frontend fe
  bind 127.0.0.1:%d
  default_backend be
backend be
  balance random(2)
  server a 127.0.0.1:%d
  server b 127.0.0.1:%d
""" % (hport, ports[0], ports[1]))
            hp = subprocess.Popen(["taskset", "-c", "0", "/usr/sbin/haproxy", "-f", tmp + "/haproxy.cfg"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(hp)
            routers = {}  # name -> (process, port, shm)
            for name, binary, extra in (("switchyard", ROUTER, ROUTER_ARGS), ("switchyard-base", ROUTER_BASE, [])):
                if binary is None:
                    continue
                port = rport if name == "switchyard" else free_port()
                shm = "/dev/shm/sy-bench-proxy-%d-%s" % (os.getpid(), name)
                rp = subprocess.Popen(["taskset", "-c", "0", binary, "--port", str(port), "--processes", "1",
                                       "--shm", shm, "--model-id", "bench", "--log-level", "warn",
                                       "--worker-urls", "http://127.0.0.1:%d" % ports[0],
                                       "http://127.0.0.1:%d" % ports[1], *extra],
                                      stdout=subprocess.DEVNULL, stderr=open(tmp + "/%s.log" % name, "w"))
                procs.append(rp)
                routers[name] = (rp, port, shm)
            wait_port(hport)
            for rp, port, _ in routers.values():
                wait_port(port)
            time.sleep(0.3)
            rpids = {name: [rp.pid] + children(rp.pid) for name, (rp, _, _) in routers.items()}
            direct = wrk(ports[0], script_k, STREAM_CONNS if kind == "stream" else CONNS)  # straight to the upstream
            rows = {"haproxy": [], **{name: [] for name in routers}}
            for _ in range(ROUNDS):
                for name, (_, port, _) in routers.items():
                    rows[name].append(run_proxy(kind, port, rpids[name], script_k))
                rows["haproxy"].append(run_proxy(kind, hport, [hp.pid], script_k))
            results[kind] = (direct, rows)
            for p in [hp] + [r[0] for r in routers.values()]:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            for _, _, shm in routers.values():
                if os.path.exists(shm):
                    os.unlink(shm)

        med = lambda rs, k: statistics.median(r[k] for r in rs)
        lines = ["| workload | proxy | req/s | p99 µs | p99 added µs | CPU µs/req | CPU µs/event | non-2xx |",
                 "|---|---|---:|---:|---:|---:|---:|---:|"]
        ratios = []
        for kind, (direct, rows) in results.items():
            for name in rows:
                rs = rows[name]
                lines.append("| %s | %s | %.0f | %.0f | %.0f | %.1f | %s | %d |" % (
                    NAMES[kind], name, med(rs, "rps"), med(rs, "p99"), med(rs, "p99") - direct[1],
                    med(rs, "cpu_us"), "%.2f" % med(rs, "cpu_ev") if kind == "stream" else "—",
                    sum(r["errs"] for r in rs)))
            for name in rows:
                if name == "haproxy":
                    continue
                ratios.append("%s: %s/HAProxy req/s %.2f×, CPU per request %.2f×" % (
                    kind, name, med(rows[name], "rps") / med(rows["haproxy"], "rps"),
                    med(rows[name], "cpu_us") / med(rows["haproxy"], "cpu_us")))
        text = ("# bench/proxy — switchyard-router vs HAProxy random(2)\n\n"
                "%d rounds × %d s alternating, wrk -t1 -c%d, proxy pinned to CPU 0, wrk + nginx to CPU 1; "
                "medians; token stream: -c%d, one event per stream per %d µs. p99 added = proxy p99 − "
                "direct-to-upstream p99 (%.0f µs small, %.0f µs SSE, %.0f µs token stream).\n\n"
                % (ROUNDS, DURATION, CONNS, STREAM_CONNS, TOKEN_US, results["small"][0][1],
                   results["sse"][0][1], results["stream"][0][1])
                + "\n".join(lines) + "\n\n" + "\n".join("- " + r for r in ratios) + "\n")
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        open(os.path.join(ROOT, "bench/results/proxy.md"), "w").write(text)
        print(text)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
        for name in ("switchyard", "switchyard-base"):
            shm = "/dev/shm/sy-bench-proxy-%d-%s" % (os.getpid(), name)
            if os.path.exists(shm):
                os.unlink(shm)


if __name__ == "__main__":
    main()
