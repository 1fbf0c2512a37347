#!/usr/bin/python3
"""mock_pd_dns.py FLEET BIN — NOT registered in meson (known defect, QA):
a decode request whose bootstrap_host does not resolve must neither block the
mock's event loop nor overrun --pd-timeout-ms. Today tools/mock-engine/pd.c
try_connect() calls getaddrinfo() synchronously on the event loop, again on
every 20 ms retry: /health stalls for seconds and the request ends after ~6 s
instead of 1.5 s. Run: /usr/bin/python3 tests/integration/mock_pd_dns.py \
tools/mock-fleet build/tools/mock-engine/switchyard-mock-engine"""
import json, os, shutil, subprocess, sys, tempfile, threading, time, urllib.error, urllib.request

FLEET, BIN = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp(prefix="sy-mock-pd-dns-")
subprocess.run([FLEET, "start", "--dir", d, "--bin", BIN, "--prefill", "1", "--decode", "1", "--",
                "--pd-timeout-ms", "1500"], check=True, stdout=subprocess.DEVNULL, timeout=30)
fleet = json.load(open(os.path.join(d, "fleet.json")))
pre = next(m for m in fleet if m["role"] == "prefill")
dec = next(m for m in fleet if m["role"] == "decode")
body = json.dumps({"messages": [{"role": "user", "content": "x"}], "bootstrap_host": "no.such.host.invalid",
                   "bootstrap_port": int(pre["bootstrap_port"]), "bootstrap_room": 7}).encode()
took = {}
def pd():
    t = time.monotonic()
    try:
        urllib.request.urlopen(urllib.request.Request(dec["url"] + "/v1/chat/completions", data=body), timeout=30)
    except urllib.error.HTTPError:
        pass
    took["pd"] = time.monotonic() - t
th = threading.Thread(target=pd); th.start()
worst = 0.0
while th.is_alive():
    t = time.monotonic()
    urllib.request.urlopen(dec["url"] + "/health", timeout=30).read()
    worst = max(worst, time.monotonic() - t)
    time.sleep(0.1)
subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
shutil.rmtree(d, ignore_errors=True)
print(f"pd request {took['pd']:.2f}s (timeout 1.5 s), worst /health {worst:.2f}s")
sys.exit(0 if took["pd"] < 2.5 and worst < 0.5 else 1)
