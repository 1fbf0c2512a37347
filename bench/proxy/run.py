#!/usr/bin/python3
"""bench/proxy/run.py — switchyard-router vs HAProxy (balance random(2)) in
front of the same two upstreams (docs: bench/proxy/README.md).

Pinning: the proxy under test on CPU 0; wrk and nginx on CPU 1. The
proxies are run alternately (ROUNDS rounds), each for DURATION seconds with
the same wrk settings, for three workloads: a small non-streaming JSON answer
and a 64-event SSE answer (both from nginx, the SSE body in one piece), and
token streaming: build/bench/token_upstream writes each of 64 SSE events with
its own send(), one event per stream per BENCH_TOKEN_US µs (1000), to
BENCH_STREAM_CONNS (64) connections. Token streaming runs HAProxy twice: as
configured for the other workloads, and with `option http-no-delay`
(HAProxy's default sends with MSG_MORE, so the kernel holds a token until
more data or an ACK comes; http-no-delay forwards each as it arrives, as
switchyard does). While wrk streams, a probe connection streams too and
records each event's delay: its arrival time minus the send time
token_upstream wrote into it (CLOCK_MONOTONIC µs, same host).

Reported per proxy (median over rounds): req/s, p99 latency, p99 added over
the direct-to-upstream run, CPU µs per request (on-CPU time of every thread
of every proxy process, /proc/PID/task/TID/schedstat, over the requests wrk
completed); for token streaming also CPU µs per relayed event and the token
delay p50 / p99. Writes a Markdown table to bench/results/proxy.md (and
stdout).

Env: ROUTER_BIN (the router under test), ROUTER_ARGS (extra router flags),
ROUTER_BASE_BIN (optional: a second router build, e.g. main's, run in the
same alternation as "switchyard-base" for before/after figures).
"""
import glob, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

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


def cpu_ns(pids):
    """On-CPU time (ns) of every thread of pids (schedstat's first field)."""
    total = 0
    for pid in pids:
        for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
            try:
                total += int(open(f).read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


class TokenProbe(threading.Thread):
    """One streaming connection to port for `seconds`, request after
    request: each event's delay = arrival (CLOCK_MONOTONIC µs) − the send
    time token_upstream wrote into it ("t":µs)."""
    T = re.compile(rb'"t":(\d+)')

    def __init__(self, port, seconds):
        super().__init__(daemon=True)
        self.port, self.seconds, self.delays, self.done = port, seconds, [], 0

    def run(self):
        req = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
               b"content-length: %d\r\n\r\n%s" % (len(STREAM_BODY), STREAM_BODY.encode()))
        end = time.monotonic() + self.seconds
        try:
            s = socket.create_connection(("127.0.0.1", self.port), 5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while time.monotonic() < end:
                s.sendall(req)
                tail = b""
                while not tail.endswith(b"0\r\n\r\n"):
                    d = s.recv(65536)
                    now = time.monotonic_ns() // 1000
                    if not d:
                        return
                    self.delays += [now - int(m.group(1)) for m in self.T.finditer(d)]
                    tail = (tail + d)[-16:]
                self.done += 1
            s.close()
        except OSError:
            pass

    def quantiles(self):
        d = sorted(self.delays)
        if not d:
            return None, None
        return d[len(d) // 2], d[min(len(d) - 1, int(0.99 * len(d)))]


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
    probe = None
    if kind == "stream":  # a stream beside wrk's
        probe = TokenProbe(port, DURATION - 0.5)
        probe.start()
    t0 = cpu_ns(pids)
    rps, p99, reqs, errs = wrk(port, script, STREAM_CONNS if kind == "stream" else CONNS)
    t1 = cpu_ns(pids)
    if probe is not None:
        probe.join(5)
        reqs += probe.done
    cpu_us = (t1 - t0) / 1e3 / max(reqs, 1)
    r = {"rps": rps, "p99": p99, "cpu_us": cpu_us, "cpu_ev": cpu_us / EVENTS, "errs": errs,
         "tok50": None, "tok99": None}
    if probe is not None:
        r["tok50"], r["tok99"] = probe.quantiles()
    return r


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
            # HAProxy, one thread, balance random(2), keep-alive to the upstreams;
            # for token streaming also with option http-no-delay.
            haproxies = {}  # name -> (process, port)
            variants = [("haproxy", "")]
            if kind == "stream":
                variants.append(("haproxy-nodelay", "  option http-no-delay\n"))
            for hname, extra_opt in variants:
                hport = free_port()
                cfg = tmp + "/%s.cfg" % hname
                open(cfg, "w").write("""global
  nbthread 1
  maxconn 4000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 300s
  http-reuse always
%sfrontend fe
  bind 127.0.0.1:%d
  default_backend be
backend be
  balance random(2)
  server a 127.0.0.1:%d
  server b 127.0.0.1:%d
""" % (extra_opt, hport, ports[0], ports[1]))
                hp = subprocess.Popen(["taskset", "-c", "0", "/usr/sbin/haproxy", "-f", cfg],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                procs.append(hp)
                haproxies[hname] = (hp, hport)
            routers = {}  # name -> (process, port, shm)
            for name, binary, extra in (("switchyard", ROUTER, ROUTER_ARGS), ("switchyard-base", ROUTER_BASE, [])):
                if binary is None:
                    continue
                port = free_port()
                shm = "/dev/shm/sy-bench-proxy-%d-%s" % (os.getpid(), name)
                rp = subprocess.Popen(["taskset", "-c", "0", binary, "--port", str(port), "--processes", "1",
                                       "--shm", shm, "--model-id", "bench", "--log-level", "warn",
                                       "--worker-urls", "http://127.0.0.1:%d" % ports[0],
                                       "http://127.0.0.1:%d" % ports[1], *extra],
                                      stdout=subprocess.DEVNULL, stderr=open(tmp + "/%s.log" % name, "w"))
                procs.append(rp)
                routers[name] = (rp, port, shm)
            for _, hport in haproxies.values():
                wait_port(hport)
            for rp, port, _ in routers.values():
                wait_port(port)
            time.sleep(0.3)
            targets = {name: (port, [rp.pid] + children(rp.pid)) for name, (rp, port, _) in routers.items()}
            targets.update({name: (hport, [hp.pid]) for name, (hp, hport) in haproxies.items()})
            direct = wrk(ports[0], script_k, STREAM_CONNS if kind == "stream" else CONNS)  # straight to the upstream
            rows = {name: [] for name in targets}
            for _ in range(ROUNDS):
                for name, (port, pids) in targets.items():
                    rows[name].append(run_proxy(kind, port, pids, script_k))
            results[kind] = (direct, rows)
            for p in [h[0] for h in haproxies.values()] + [r[0] for r in routers.values()]:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
            for _, _, shm in routers.values():
                if os.path.exists(shm):
                    os.unlink(shm)

        med = lambda rs, k: statistics.median(r[k] for r in rs)
        us = lambda rs, k: "%.0f" % med(rs, k) if all(r[k] is not None for r in rs) else "—"
        lines = ["| workload | proxy | req/s | p99 µs | p99 added µs | CPU µs/req | CPU µs/event | "
                 "token delay p50 / p99 µs | non-2xx |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        ratios = []
        for kind, (direct, rows) in results.items():
            for name in rows:
                rs = rows[name]
                lines.append("| %s | %s | %.0f | %.0f | %.0f | %.1f | %s | %s | %d |" % (
                    NAMES[kind], name, med(rs, "rps"), med(rs, "p99"), med(rs, "p99") - direct[1],
                    med(rs, "cpu_us"), "%.2f" % med(rs, "cpu_ev") if kind == "stream" else "—",
                    "%s / %s" % (us(rs, "tok50"), us(rs, "tok99")) if kind == "stream" else "—",
                    sum(r["errs"] for r in rs)))
            for name in rows:
                if name.startswith("haproxy"):
                    continue
                for base in (b for b in rows if b.startswith("haproxy")):
                    ratios.append("%s: %s/%s req/s %.2f×, CPU per request %.2f×" % (
                        kind, name, base, med(rows[name], "rps") / med(rows[base], "rps"),
                        med(rows[name], "cpu_us") / med(rows[base], "cpu_us")))
        text = ("# bench/proxy — switchyard-router vs HAProxy random(2)\n\n"
                "%s, %d CPUs, Linux %s.\n\n" % (time.strftime("%Y-%m-%d"), os.cpu_count(), os.uname().release)
                + "%d rounds × %d s alternating, wrk -t1 -c%d, proxy pinned to CPU 0, wrk + nginx to CPU 1; "
                "medians; CPU = on-CPU time of the proxy's threads (schedstat). Token stream: -c%d plus "
                "one probe stream, one event per stream per %d µs; haproxy-nodelay = option "
                "http-no-delay; token delay = event arrival at the probe − its send time. p99 added = "
                "proxy p99 − direct-to-upstream p99 (%.0f µs small, %.0f µs SSE, %.0f µs token stream)."
                "\n\n"
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
