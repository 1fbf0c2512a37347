#!/usr/bin/env python3
"""bench/proxy/callgrind.py — user-space instructions per request of one
router worker process (callgrind, collecting only inside h2o_evloop_run),
for a load-independent before/after figure next to bench/proxy's CPU ratios.

Two static nginx upstreams (the small JSON answer of run.py); the router runs
`--processes 1` in degraded mode under `valgrind --tool=callgrind
--trace-children=yes --toggle-collect=h2o_evloop_run`; wrk -t1 -c8 posts the
chat body for BENCH_SECONDS (5). Instructions per request = the worker's
collected Ir under load minus its Ir over an idle window of the same
length, over the requests wrk completed. ROUTER_BIN and ROUTER_BASE_BIN (a
second build, measured the same way right after) as in run.py; BENCH_KEEP=DIR
keeps the dumps for callgrind_annotate.
Run through bench/proxy/run-callgrind (installs nginx, wrk, valgrind)."""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (free_port, wait_port, BODY, SMALL)


def measure(binary, ports, script, tmp, seconds):
    out = tempfile.mkdtemp(prefix="cg.", dir=tmp)
    rport = run.free_port()
    shm = "/dev/shm/sy-bench-cg-%d" % os.getpid()
    rp = subprocess.Popen(["valgrind", "--tool=callgrind", "--trace-children=yes",
                           "--toggle-collect=h2o_evloop_run", "--callgrind-out-file=%s/cg.%%p" % out,
                           binary, "--port", str(rport), "--processes", "1", "--shm", shm,
                           "--model-id", "bench", "--log-level", "warn", "--worker-urls",
                           "http://127.0.0.1:%d" % ports[0], "http://127.0.0.1:%d" % ports[1]],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run.wait_port(rport, 60.0)
        time.sleep(1.0)
        subprocess.run(["wrk", "-t1", "-c8", "-d2s", "-s", script, "http://127.0.0.1:%d/v1/chat/completions" % rport],
                       stdout=subprocess.DEVNULL, check=True)  # warm-up: pools, memo, caches
        # Zero the counters after the warm-up (every callgrind process of
        # this run), let the loop idle as long as the load will last (its
        # timers and housekeeping: dump 1), then the load (dump 2).
        cg = lambda flag: subprocess.run(["callgrind_control", flag], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        cg("-z")
        time.sleep(seconds)
        cg("-d")
        w = subprocess.run(["wrk", "-t1", "-c8", "-d%ds" % seconds, "-s", script,
                            "http://127.0.0.1:%d/v1/chat/completions" % rport],
                           capture_output=True, text=True, check=True).stdout
        m = re.search(r"(\d+) requests in", w)
        requests = int(m.group(1))
        cg("-d")
        time.sleep(1.0)
    finally:
        rp.send_signal(signal.SIGTERM)
        try:
            rp.wait(30)
        except subprocess.TimeoutExpired:
            rp.kill()
        if os.path.exists(shm):
            os.unlink(shm)
    def summary(path):
        for line in open(path, errors="replace"):
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
        return 0
    # The worker is the process whose dumps collected anything (the master
    # runs no h2o loop). Its dump .1 is the idle window, .2 the load.
    idle = load = 0
    for f in glob.glob(out + "/cg.*.2"):
        l2 = summary(f)
        if l2 > load:
            load, idle = l2, summary(f[:-2] + ".1")
    keep = os.environ.get("BENCH_KEEP")
    if keep:  # the dumps, for callgrind_annotate
        os.makedirs(keep, exist_ok=True)
        for f in glob.glob(out + "/cg.*"):
            shutil.copy(f, os.path.join(keep, os.path.basename(binary.replace("/", "_")) + "." + os.path.basename(f)))
    per_req = (load - idle) / requests if requests else float("nan")
    return per_req, requests, idle / seconds


def main():
    for tool in ("nginx", "wrk", "valgrind", "callgrind_control"):
        if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
            sys.exit("missing %s (bench/proxy/run-callgrind installs it)" % tool)
    seconds = int(os.environ.get("BENCH_SECONDS", "5"))
    tmp = tempfile.mkdtemp(prefix="sy-bench-cg.")
    nginx = None
    try:
        ports = [run.free_port(), run.free_port()]
        servers = "".join("""server { listen 127.0.0.1:%d; access_log off; keepalive_requests 1000000;
          location / { default_type application/json; return 200 '%s'; } }\n""" % (p, run.SMALL) for p in ports)
        open(tmp + "/nginx.conf", "w").write("""daemon off; worker_processes 1; pid %s/nginx.pid;
error_log %s/nginx.err; events { worker_connections 4096; }
http { client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s; uwsgi_temp_path %s;
scgi_temp_path %s; %s }""" % ((tmp,) * 7 + (servers,)))
        nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", tmp + "/nginx.conf", "-p", tmp],
                                 stderr=subprocess.DEVNULL)
        for p in ports:
            run.wait_port(p)
        script = tmp + "/post.lua"
        open(script, "w").write('wrk.method = "POST"\nwrk.body = \'%s\'\n'
                                'wrk.headers["Content-Type"] = "application/json"\n' % run.BODY)
        rows = []
        for name, binary in (("switchyard", run.ROUTER), ("switchyard-base", run.ROUTER_BASE)):
            if binary is None:
                continue
            ir, n, idle = measure(binary, ports, script, tmp, seconds)
            rows.append("| %s | %s | %d | %.1f k | %.0f k |" % (name, binary, n, ir / 1000.0, idle / 1000.0))
        text = ("# bench/proxy — instructions per request (callgrind)\n\n"
                "small JSON, wrk -t1 -c8 for %d s after a 2 s warm-up, worker process only, "
                "collected inside h2o_evloop_run; instructions/request = (load window − idle window of "
                "the same length) / requests\n\n| build | binary | requests | instructions/request | "
                "idle instructions/s |\n|---|---|---:|---:|---:|\n" % seconds + "\n".join(rows) + "\n")
        os.makedirs(os.path.join(run.ROOT, "bench/results"), exist_ok=True)
        open(os.path.join(run.ROOT, "bench/results/proxy-callgrind.md"), "w").write(text)
        print(text)
    finally:
        if nginx is not None and nginx.poll() is None:
            nginx.send_signal(signal.SIGTERM)
            nginx.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
