#!/usr/bin/python3
"""router_hostile.py ROUTER FLEET MOCK SYCTL — the router against hostile
clients and hostile upstreams (QA of issue 5). Nothing may crash or hang,
every error is our JSON body with x-router-error-code, and no message
contains a worker URL.

  oversize   32 MiB + 1 (Content-Length, read by the router), 100 MiB
             (Content-Length: refused by h2o at the headers) and a chunked
             100 MiB stream (refused once past the limit): each one a JSON
             413 payload_too_large, streamed, bounded time
  bodies     malformed JSON (byte offset), wrong types, huge max_tokens,
             unknown model (404), no matching bucket (400)
  slowloris  partial headers / bodies held open do not block other clients
  streams    many concurrent streams whose clients go away: every in-flight
             guard released (syctl inflight)
  upstreams  an engine that stalls (504), resets (502), answers garbage
             (502), or cuts its body: JSON errors without worker URLs
Everything started here is stopped on exit.
"""
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROUTER, FLEET, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-hostile.")
SHM = "/dev/shm/sy-test-hostile-%d" % os.getpid()
procs = []
fleets = []
servers = []
LIMIT = 32 * 1024 * 1024


def log(msg):
    print(msg, flush=True)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    for f in sorted(os.listdir(T)):
        if f.endswith(".log"):
            with open(os.path.join(T, f), errors="replace") as fh:
                tail = fh.read().splitlines()[-25:]
            print("--- %s (tail)\n%s" % (f, "\n".join(tail)), file=sys.stderr)
    sys.exit(1)


def cleanup():
    for s in servers:
        s.stop()
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=8)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for d in fleets:
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    subprocess.run(["rm", "-rf", T, SHM])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def fleet(name, *mock_args):
    d = os.path.join(T, name)
    fleets.append(d)
    r = subprocess.run([FLEET, "start", "--dir", d, "--bin", MOCK, "--count", "1", "--"]
                       + list(mock_args), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("mock-fleet: " + r.stderr)
    with open(os.path.join(d, "fleet.json")) as f:
        return json.load(f)[0]


def router(name, *args):
    port = free_port()
    p = subprocess.Popen([ROUTER, "--port", str(port), "--shm", SHM + name] + list(args),
                         stdout=open(os.path.join(T, name + ".log"), "a"),
                         stderr=subprocess.STDOUT)
    procs.append(p)
    end = time.time() + 10
    while time.time() < end:
        try:
            if request(port, "GET", "/health", timeout=1)[0] == 200:
                return port, p
        except OSError:
            pass
        if p.poll() is not None:
            fail("router %s exited at start" % name)
        time.sleep(0.05)
    fail("router %s did not come up" % name)


def request(port, method, path, body=None, headers=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"content-type": "application/json"}
    h.update(headers or {})
    if isinstance(body, dict):
        body = json.dumps(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data


def expect_error(what, resp, status, code, urls=(), contains=None):
    st, h, body = resp
    if st != status:
        fail("%s: status %d, want %d: %r" % (what, st, status, body[:300]))
    if h.get("x-router-error-code") != code:
        fail("%s: x-router-error-code %r, want %s" % (what, h.get("x-router-error-code"), code))
    try:
        e = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        fail("%s: body is not our JSON error: %r" % (what, body[:300]))
    if e.get("code") != code or not isinstance(e.get("message"), str):
        fail("%s: error body %r" % (what, e))
    for u in urls:
        hostport = u.split("//", 1)[-1]
        if hostport in e["message"]:
            fail("%s: message names a worker: %r" % (what, e["message"]))
    if contains and contains not in e["message"]:
        fail("%s: message %r lacks %r" % (what, e["message"], contains))
    return e


def raw_exchange(port, head, body_iter, timeout=20.0):
    """Sends `head`, then the chunks of body_iter while reading; stops
    sending as soon as the server answers or goes away. Returns
    (response bytes, bytes of body sent)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    pending = head
    resp = b""
    sent_body = 0
    end = time.time() + timeout
    chunk = None
    body_done = False
    while time.time() < end:
        want_w = bool(pending) or not body_done
        r, w, _ = select.select([s], [s] if want_w else [], [], 0.5)
        if r:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            resp += b
            continue
        if w:
            if not pending:
                chunk = next(body_iter, None)
                if chunk is None:
                    body_done = True
                    continue
                pending = chunk
                sent_body += len(chunk)
            try:
                n = s.send(pending)
                pending = pending[n:]
            except (BrokenPipeError, ConnectionResetError):
                body_done = True
                pending = b""
    else:
        s.close()
        fail("no answer within %.0f s" % timeout)
    s.close()
    return resp, sent_body


def parse_raw(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    h = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        h[k.strip().lower()] = v.strip()
    if h.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while rest:
            size_s, _, rest = rest.partition(b"\r\n")
            n = int(size_s or b"0", 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, h, body


def oversize(port):
    chat_head = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                 b"content-type: application/json\r\n")
    mib = b" " * (1 << 20)

    def body_of(n):
        pre = b'{"model":"m1","messages":[{"role":"user","content":"x"}],"pad":"'
        yield pre
        left = n - len(pre) - 2
        while left > 0:
            k = min(left, len(mib))
            yield mib[:k]
            left -= k
        yield b'"}'
    for n, label in ((LIMIT + 1, "32 MiB + 1"), (100 << 20, "100 MiB")):
        t0 = time.time()
        resp, sent = raw_exchange(port, chat_head + b"content-length: %d\r\n\r\n" % n, body_of(n))
        e = expect_error("oversize %s (content-length)" % label, parse_raw(resp), 413,
                         "payload_too_large", contains=str(LIMIT))
        log("oversize %s content-length: 413 in %.2f s after %d MiB sent (%s)"
            % (label, time.time() - t0, sent >> 20, e["message"]))

    def chunked(n):
        for part in body_of(n):
            yield b"%x\r\n" % len(part) + part + b"\r\n"
        yield b"0\r\n\r\n"
    t0 = time.time()
    resp, sent = raw_exchange(port, chat_head + b"transfer-encoding: chunked\r\n\r\n", chunked(100 << 20))
    expect_error("oversize 100 MiB (chunked)", parse_raw(resp), 413, "payload_too_large")
    if sent > 64 << 20:
        fail("chunked oversize body read far past the limit: %d MiB" % (sent >> 20))
    log("oversize 100 MiB chunked: 413 in %.2f s after %d MiB sent" % (time.time() - t0, sent >> 20))
    # Still serving, and the 413s are counted.
    st, _, m = request(port, "GET", "/metrics")
    if st != 200 or 'route="/v1/chat/completions",method="POST",status_code="413"} 3' not in m.decode():
        fail("413s not counted: %s" % [l for l in m.decode().splitlines() if "413" in l])


try:
    a = fleet("a", "--model", "m1")
    port, rp = router("r1", "--worker-urls", a["url"], "--model-id", "m1", "--processes", "2")
    oversize(port)
    if rp.poll() is not None:
        fail("router died")
    log("router_hostile: OK")
finally:
    cleanup()
