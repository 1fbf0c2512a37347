#!/usr/bin/python3
"""mock_pd_dns.py FLEET BIN — a decode mock resolves bootstrap_host off its
event loop (QA defect: getaddrinfo() ran synchronously on the single loop,
/health stalled for seconds and the request ended after ~6 s instead of
--pd-timeout-ms 1.5 s).

- an unresolvable name: /health keeps answering at once meanwhile, and the
  request fails with the PD-timeout 500 within the timeout (resolution time
  counts against it);
- a name that resolves ("localhost") completes the handshake with the prefill;
- a streaming client that goes away while its lookup is in flight, and a
  shutdown with a lookup in flight, leave no crash or sanitizer report.
"""
import glob, json, os, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.error, urllib.request

FLEET, BIN = sys.argv[1], sys.argv[2]


def fail(msg, d):
    print("FAIL:", msg, file=sys.stderr)
    for log in glob.glob(os.path.join(d, "*.log")):
        print(f"--- {log}", open(log).read()[-3000:], sep="\n", file=sys.stderr)
    subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
    sys.exit(1)


def post(url, path, body):
    r = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                               headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


d = tempfile.mkdtemp(prefix="sy-mock-pd-dns-")
subprocess.run([FLEET, "start", "--dir", d, "--bin", BIN, "--prefill", "1", "--decode", "1", "--",
                "--pd-timeout-ms", "1500"], check=True, stdout=subprocess.DEVNULL, timeout=30)
fleet = json.load(open(os.path.join(d, "fleet.json")))
pre = next(m for m in fleet if m["role"] == "prefill")
dec = next(m for m in fleet if m["role"] == "decode")


def body(host, room, **kw):
    return {"messages": [{"role": "user", "content": "x"}], "bootstrap_host": host,
            "bootstrap_port": int(pre["bootstrap_port"]), "bootstrap_room": room, **kw}


# 1. unresolvable name: the loop keeps serving, the timeout is honoured
out = {}
def pd():
    t = time.monotonic()
    out["r"] = post(dec["url"], "/v1/chat/completions", body("no.such.host.invalid", 7))
    out["t"] = time.monotonic() - t
th = threading.Thread(target=pd); th.start()
worst = 0.0
while th.is_alive():
    t = time.monotonic()
    urllib.request.urlopen(dec["url"] + "/health", timeout=30).read()
    worst = max(worst, time.monotonic() - t)
    time.sleep(0.1)
print(f"pd request {out['t']:.2f}s (timeout 1.5 s), worst /health {worst:.2f}s")
if not (1.4 <= out["t"] < 2.5 and worst < 0.5):
    fail(f"unresolvable host: request {out['t']:.2f}s, worst /health {worst:.2f}s", d)
s, b = out["r"]
if s != 500 or "bootstrap_room 7" not in json.loads(b)["error"]["message"]:
    fail(f"unresolvable host: want the PD-timeout 500, got {s} {b[:200]}", d)

# 2. a name that resolves: decode waits for the prefill, then answers
out = {}
th = threading.Thread(target=lambda: out.update(r=post(dec["url"], "/v1/chat/completions",
                                                       body("localhost", 8, max_tokens=2))))
th.start()
time.sleep(0.3)
if "r" in out:
    fail(f"decode via 'localhost' answered before its prefill: {out}", d)
s, b = post(pre["url"], "/v1/chat/completions", body("localhost", 8, max_tokens=2))
if s != 200:
    fail(f"prefill: {s} {b[:200]}", d)
th.join(5)
if out.get("r", (0,))[0] != 200:
    fail(f"decode via 'localhost' after its prefill: {out}", d)

# 3. a streaming client leaves while its lookup is in flight; then stop the
#    fleet with that lookup (about 5 s without DNS) possibly still running
u = urllib.parse.urlsplit(dec["url"])
payload = json.dumps(body("no.such.host.invalid", 9, stream=True)).encode()
c = socket.create_connection((u.hostname, u.port), timeout=5)
c.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
time.sleep(0.2)
c.close()
time.sleep(0.2)
if urllib.request.urlopen(dec["url"] + "/health", timeout=5).status != 200:
    fail("decode mock unhealthy after the aborted request", d)
subprocess.run([FLEET, "stop", "--dir", d], timeout=30)
for log in glob.glob(os.path.join(d, "*.log")):
    text = open(log).read()
    if "Sanitizer" in text or "runtime error" in text:
        fail(f"sanitizer report in {log}", d)
shutil.rmtree(d, ignore_errors=True)
print("mock_pd_dns: OK")
