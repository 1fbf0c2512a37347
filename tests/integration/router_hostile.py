#!/usr/bin/python3
"""router_hostile.py ROUTER FLEET MOCK SYCTL — the router against hostile
clients and hostile upstreams. Nothing may crash or hang,
every error is our JSON body with x-router-error-code, and no message
contains a worker URL.

  oversize   32 MiB + 1 and 100 MiB (Content-Length: refused at the
             headers) and a chunked 100 MiB stream (refused as it passes the
             limit): each one a JSON 413 payload_too_large, bounded time
  framing    conflicting or malformed Content-Length, Transfer-Encoding with
             Content-Length, two Transfer-Encodings, an overflowing or
             oversize chunk size, Expect: 100-continue over the limit: 400 /
             413 at the headers, no 100 Continue, connection closed
  budget     20 parallel 40 MiB bodies against a 256 MiB body budget: 503 +
             Retry-After at the headers past it, RSS near the budget, cut
             uploads released; HTTP/2 bodies past it: GOAWAY
  h2 reset   HTTP/2 rapid reset: GOAWAY and close per connection, RSS flat
             across runs
  bodies     malformed JSON (byte offset), invalid UTF-8, lone surrogate
             escapes, wrong types, huge max_tokens,
             unknown model (404), no matching bucket (400)
  slowloris  partial headers / bodies held open do not block other clients
  streams    many concurrent streams whose clients go away: every in-flight
             guard released (syctl inflight)
  upstreams  an engine that stalls (504), resets (502), answers garbage
             (502), or cuts a non-streamed body (502 upstream_body_incomplete):
             JSON errors without worker URLs
Everything started here is stopped on exit.
"""
import http.client
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import fail, free_port, request  # noqa: E402

ROUTER, FLEET, MOCK, SYCTL = sys.argv[1:5]
T = tempfile.mkdtemp(prefix="sy-hostile.")
SHM = "/dev/shm/sy-test-hostile-%d" % os.getpid()
procs = []
fleets = []
servers = []
shms = []
LIMIT = 32 * 1024 * 1024


def log(msg):
    print(msg, flush=True)


@sytest.on_fail
def show_logs():
    for f in sorted(os.listdir(T)):
        if f.endswith(".log"):
            with open(os.path.join(T, f), errors="replace") as fh:
                tail = fh.read().splitlines()[-25:]
            print("--- %s (tail)\n%s" % (f, "\n".join(tail)), file=sys.stderr)


def cleanup():
    for s in servers:
        s.stop()
    sytest.stop_procs(procs)
    for d in fleets:
        subprocess.run([FLEET, "stop", "--dir", d], capture_output=True)
    subprocess.run(["rm", "-rf", T] + [SHM + n for n in shms])


def fleet(name, *mock_args):
    d = os.path.join(T, name)
    fleets.append(d)
    return sytest.fleet_one(FLEET, MOCK, d, *mock_args)


def router(name, *args):
    port = free_port()
    shms.append(name)
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
    if sent > LIMIT + (16 << 20):  # + socket buffers
        fail("chunked oversize body read past the limit: %d MiB" % (sent >> 20))
    log("oversize 100 MiB chunked: 413 in %.2f s after %d MiB sent" % (time.time() - t0, sent >> 20))
    # Still serving, and the 413s are counted.
    st, _, m = request(port, "GET", "/metrics")
    if st != 200 or 'route="/v1/chat/completions",method="POST",status_code="413"} 3' not in m.decode():
        fail("413s not counted: %s" % [l for l in m.decode().splitlines() if "413" in l])


def raw_once(port, data, timeout=5.0):
    """Sends `data` on a new connection and reads until the server closes
    it. Returns (bytes, closed): closed is False when the connection was
    still open at `timeout`."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.2)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    resp = b""
    end = time.time() + timeout
    while time.time() < end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return resp, True
        if not b:
            s.close()
            return resp, True
        resp += b
    s.close()
    return resp, False


def framing(port):
    """Strict HTTP/1 framing (RFC 9112 section 6.3): conflicting lengths
    and Transfer-Encoding with Content-Length are refused with 400 and the
    connection closed, so bytes after them are never read as a request."""
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    body = b'{"model":"m1","max_tokens":1,"messages":[{"role":"user","content":"x"}]}'
    smuggled = b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n"

    def refused(what, data, status, code, contains):
        t0 = time.time()
        resp, closed = raw_once(port, data)
        if resp.count(b"HTTP/1.1 ") != 1:
            fail("%s: want exactly one response, got %r" % (what, resp[:400]))
        if b"100 Continue" in resp:
            fail("%s: got 100 Continue" % what)
        if not closed:
            fail("%s: connection left open" % what)
        expect_error(what, parse_raw(resp), status, code, contains=contains)
        if time.time() - t0 > 3:
            fail("%s: answered after %.1f s" % (what, time.time() - t0))

    refused("conflicting Content-Length",
            head + b"content-length: %d\r\ncontent-length: %d\r\n\r\n" % (len(body), len(body) + 5)
            + body + smuggled, 400, "bad_request", "conflicting Content-Length")
    refused("malformed Content-Length", head + b"content-length: 1x\r\n\r\n" + body, 400,
            "bad_request", "Content-Length")
    refused("Transfer-Encoding with Content-Length",
            head + b"content-length: 6\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
            400, "bad_request", "Transfer-Encoding together with Content-Length")
    refused("Content-Length with Transfer-Encoding",
            head + b"transfer-encoding: chunked\r\ncontent-length: 6\r\n\r\n0\r\n\r\n" + smuggled,
            400, "bad_request", "Transfer-Encoding together with Content-Length")
    refused("two Transfer-Encoding headers",
            head + b"transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
            400, "bad_request", "more than one Transfer-Encoding")
    refused("Transfer-Encoding gzip", head + b"transfer-encoding: gzip\r\n\r\n", 400, "bad_request",
            "only chunked")
    refused("overflowing chunk size",
            head + b"transfer-encoding: chunked\r\n\r\nffffffffffffffff\r\n{\"model\"", 400,
            "bad_request", "chunk size overflows")
    refused("chunk larger than the limit",
            head + b"transfer-encoding: chunked\r\n\r\n%x\r\n{\"model\"" % (LIMIT + 1), 413,
            "payload_too_large", str(LIMIT))
    refused("Expect: 100-continue over the limit",
            head + b"expect: 100-continue\r\ncontent-length: %d\r\n\r\n" % (LIMIT + 1), 413,
            "payload_too_large", str(LIMIT))
    # The same length twice is one length (RFC 9110 section 8.6); a body
    # within the limit after Expect: 100-continue gets 100 Continue.
    resp, _ = raw_once(port, head + b"content-length: %d\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
                       % (len(body), len(body)) + body)
    if parse_raw(resp)[0] != 200:
        fail("repeated equal Content-Length refused: %r" % resp[:300])
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    s.sendall(head + b"expect: 100-continue\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body))
    if not s.recv(100).startswith(b"HTTP/1.1 100 Continue"):
        fail("no 100 Continue for a body within the limit")
    s.sendall(body)
    resp = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        resp += b
    s.close()
    if parse_raw(resp)[0] != 200:
        fail("Expect: 100-continue within the limit: %r" % resp[:300])
    log("framing: conflicting/malformed lengths, TE+CL, two TEs, gzip TE, overflowing and oversize "
        "chunks, Expect over the limit: refused at the headers and closed")


def worker_pids(master):
    with open("/proc/%d/task/%d/children" % (master, master)) as f:
        return [int(x) for x in f.read().split()]


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) / 1024.0
    return 0.0


def metric(port, name):
    st, _, m = request(port, "GET", "/metrics")
    for l in m.decode().splitlines():
        if l.startswith(name + " "):
            return float(l.split()[1])
    fail("metric %s missing" % name)


def body_budget(a_url):
    """20 parallel 40 MiB bodies against a 256 MiB budget: the heads past
    the budget get 503 service_overloaded + Retry-After at once; memory
    stays near the budget; aborted uploads return their bytes."""
    mib40 = 40 << 20
    port, rp = router("budget", "--worker-urls", a_url, "--model-id", "m1", "--processes", "1",
                      "--max-body-bytes", str(64 << 20), "--max-pending-body-bytes", str(256 << 20))
    worker = worker_pids(rp.pid)[0]
    rss0 = rss_mib(worker)
    pre = b'{"model":"m1","max_tokens":1,"messages":[{"role":"user","content":"x"}],"pad":"'
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n" % mib40)
    pad = b" " * (1 << 20)
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    for s in socks:
        s.sendall(head)
    time.sleep(0.5)  # every head judged before any body arrives
    results = [None] * len(socks)

    def upload(i, s):
        s.settimeout(20)
        resp = b""
        try:
            s.setblocking(False)
            r, _, _ = select.select([s], [], [], 0.2)
            if r:  # refused at the head
                resp = s.recv(65536)
            else:
                s.setblocking(True)
                s.sendall(pre)
                left = mib40 - len(pre) - 2
                while left > 0:
                    k = min(left, len(pad))
                    s.sendall(pad[:k])
                    left -= k
                s.sendall(b'"}')
            s.setblocking(True)
            while True:
                b = s.recv(65536)
                if not b:
                    break
                resp += b
        except OSError:
            pass
        s.close()
        results[i] = parse_raw(resp) if resp else (0, {}, b"")
    peak = [rss0]
    done = [False]

    def sample():
        while not done[0]:
            peak[0] = max(peak[0], rss_mib(worker))
            time.sleep(0.02)
    smp = threading.Thread(target=sample)
    smp.start()
    ts = [threading.Thread(target=upload, args=(i, s)) for i, s in enumerate(socks)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    done[0] = True
    smp.join()
    # Admitted bodies go to the mock engine, whose own request timeout may
    # cut a 40 MiB upload on a loaded machine (502): admitted all the same.
    ok = [r for r in results if r and r[0] in (200, 502)]
    busy = [r for r in results if r and r[0] == 503]
    if len(ok) != 6 or len(busy) != 14 or not any(r[0] == 200 for r in ok):
        fail("budget: want 6 admitted and 14 refused, got %s" % [r[0] if r else None for r in results])
    for r in busy:
        expect_error("over the body budget", r, 503, "service_overloaded", contains="retry later")
        if r[1].get("retry-after") != "1":
            fail("503 without Retry-After: %s" % r[1])
    if peak[0] - rss0 > 256 + 96:
        fail("budget: worker RSS grew by %.0f MiB (budget 256 MiB)" % (peak[0] - rss0))
    sytest.wait_for("budget back to 0", lambda: metric(port, "switchyard_pending_body_bytes") == 0)
    # Uploads cut short give their bytes back.
    cut = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
    for s in cut:
        s.sendall(head + pre + pad)
    sytest.wait_for("cut uploads held", lambda: metric(port, "switchyard_pending_body_bytes") == 6 * mib40)
    for s in cut:
        s.close()
    sytest.wait_for("cut uploads released", lambda: metric(port, "switchyard_pending_body_bytes") == 0)
    st, _, _ = request(port, "POST", "/v1/chat/completions",
                       {"model": "m1", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]})
    if st != 200 or rp.poll() is not None:
        fail("router unusable after the body budget run: %d" % st)
    log("body budget: 20 x 40 MiB against 256 MiB: 6 admitted, 14 x 503 + Retry-After at the "
        "headers; worker RSS %.0f -> peak %.0f MiB; cut uploads released" % (rss0, peak[0]))


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def rapid_reset(port, seconds):
    """HTTP/2 rapid reset (CVE-2023-44487) for `seconds`: HEADERS then
    RST_STREAM as fast as possible, reconnecting whenever the router closes.
    Returns (streams sent, connections, GOAWAYs received)."""
    # :method POST, :scheme http, :path /v1/chat/completions, :authority x
    # (static-table names, literal values never indexed: no HPACK state).
    block = b"\x83\x86\x04\x14/v1/chat/completions\x01\x01x"
    end = time.time() + seconds
    streams = conns = goaways = 0
    while time.time() < end:
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        conns += 1
        out = H2_PREFACE + h2_frame(4, 0, 0)
        sid, inbuf, closed = 1, b"", False
        while not closed and time.time() < end:
            batch = []
            for _ in range(200):
                batch.append(h2_frame(1, 0x5, sid, block))  # END_STREAM | END_HEADERS
                batch.append(h2_frame(3, 0, sid, b"\x00\x00\x00\x08"))  # CANCEL
                sid += 2
            out += b"".join(batch)
            streams += 200
            while out and not closed:
                try:
                    n = s.send(out)
                    out = out[n:]
                except BlockingIOError:
                    select.select([s], [s], [], 0.05)
                except OSError:
                    closed = True
                try:
                    b = s.recv(65536)
                    if not b:
                        closed = True
                    inbuf += b
                except BlockingIOError:
                    pass
                except OSError:
                    closed = True
            while len(inbuf) >= 9:
                n = int.from_bytes(inbuf[:3], "big")
                if len(inbuf) < 9 + n:
                    break
                if inbuf[3] == 7:
                    goaways += 1
                inbuf = inbuf[9 + n:]
        s.close()
    return streams, conns, goaways


def h2_rapid_reset(port, rp):
    worker = worker_pids(rp.pid)
    runs = []
    chat = 'switchyard_requests_total{route="/v1/chat/completions",method="POST"}'
    for i in range(3):
        served0 = metric(port, chat)
        streams, conns, goaways = rapid_reset(port, 2.0)
        time.sleep(0.3)
        served = metric(port, chat) - served0
        runs.append((streams, conns, goaways, sum(rss_mib(w) for w in worker), served))
    for streams, conns, goaways, _, served in runs:
        if conns < 2 or goaways < conns - 1:
            fail("rapid reset: %d streams on %d connections, %d GOAWAYs" % (streams, conns, goaways))
        # The budget (200 resets) plus the rest of the batch in flight.
        if served / conns > 450:
            fail("rapid reset: %d requests reached the router per connection" % (served // conns))
    if runs[2][3] - runs[1][3] > 2.0:
        fail("rapid reset: RSS grows across runs: %s" % [round(r[3], 1) for r in runs])
    if metric(port, "switchyard_http2_connections_refused_total") < 1:
        fail("rapid reset: refusals not counted")
    st, _, _ = request(port, "GET", "/health")
    if st != 200 or rp.poll() is not None:
        fail("router unusable after rapid reset")
    log("HTTP/2 rapid reset: %s streams sent on %s connections per 2 s run, %s served, each "
        "connection closed with GOAWAY; worker RSS by run %s MiB"
        % ([r[0] for r in runs], [r[1] for r in runs], [int(r[4]) for r in runs],
           [round(r[3], 1) for r in runs]))


def h2_body_budget(a_url):
    """HTTP/2 bodies count against the budget as their DATA arrives: a
    body that does not fit closes the connection with GOAWAY; completed
    requests give their bytes back (python3-h2 speaks the protocol)."""
    import h2.config
    import h2.connection
    import h2.events
    port, rp = router("h2budget", "--worker-urls", a_url, "--model-id", "m1", "--processes", "1",
                      "--max-body-bytes", str(1 << 20), "--max-pending-body-bytes", str(1 << 20))

    def conn():
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(5)
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        s.sendall(c.data_to_send())
        return s, c

    def pump(s, c, want):
        """Reads until an event of class `want` arrives; returns the events."""
        evs = []
        end = time.time() + 10
        while time.time() < end:
            try:
                b = s.recv(65536)
            except socket.timeout:
                continue
            if not b:
                return evs + ["closed"]
            got = c.receive_data(b)
            evs += got
            s.sendall(c.data_to_send())
            if any(isinstance(e, want) for e in got):
                return evs
        fail("HTTP/2: no %s" % want.__name__)

    def send_body(s, c, sid, data, end):
        while data:
            w = c.local_flow_control_window(sid)
            if w == 0:
                pump(s, c, h2.events.WindowUpdated)
                continue
            k = min(w, len(data), c.max_outbound_frame_size)
            c.send_data(sid, data[:k])
            data = data[k:]
            s.sendall(c.data_to_send())
        if end:
            c.end_stream(sid)
            s.sendall(c.data_to_send())
    hdrs = [(":method", "POST"), (":path", "/v1/chat/completions"), (":scheme", "http"),
            (":authority", "x"), ("content-type", "application/json")]
    # A request within the budget completes, and gives its bytes back.
    s, c = conn()
    body = json.dumps({"model": "m1", "max_tokens": 1, "pad": " " * 600000,
                       "messages": [{"role": "user", "content": "x"}]}).encode()
    c.send_headers(1, hdrs)
    send_body(s, c, 1, body, True)
    evs = pump(s, c, h2.events.StreamEnded)
    st = [dict(e.headers).get(b":status") for e in evs if isinstance(e, h2.events.ResponseReceived)]
    if st != [b"200"]:
        fail("HTTP/2 request within the budget: %s" % evs)
    sytest.wait_for("HTTP/2 budget back to 0", lambda: metric(port, "switchyard_pending_body_bytes") == 0)
    # Two bodies arriving at once past the budget: GOAWAY, connection closed.
    c.send_headers(3, hdrs)
    send_body(s, c, 3, b"x" * 700000, False)
    c.send_headers(5, hdrs)
    try:
        send_body(s, c, 5, b"x" * 700000, False)
        evs = pump(s, c, h2.events.ConnectionTerminated)
    except OSError:
        evs = ["closed"]
    if not any(isinstance(e, h2.events.ConnectionTerminated) for e in evs) and "closed" not in evs:
        fail("HTTP/2 bodies past the budget: %s" % evs)
    s.close()
    sytest.wait_for("HTTP/2 budget released on close",
                    lambda: metric(port, "switchyard_pending_body_bytes") == 0)
    if metric(port, "switchyard_http2_connections_refused_total") != 1:
        fail("HTTP/2 budget refusal not counted")
    st, _, _ = request(port, "GET", "/health")
    if st != 200 or rp.poll() is not None:
        fail("router unusable after the HTTP/2 budget run")
    log("HTTP/2 body budget: a body within it served and released, bodies past it: GOAWAY")


class FakeEngine:
    """A hostile engine on a loopback port: `mode` is one of stall (reads the
    request, never answers), reset (RST after the request), garbage (a
    non-HTTP answer), hugeheader (a 256 KiB header line), cutbody
    (Content-Length 1000, 10 bytes, close), sse_stall (SSE headers and one
    event, then silence), sse_cut (one event then RST). GET /health (the
    router master's probe without a statebus) is answered 200: the engine
    is hostile only to inference requests."""

    def __init__(self, mode):
        self.mode = mode
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.conns = []
        self.running = True
        threading.Thread(target=self.serve, daemon=True).start()
        servers.append(self)

    def stop(self):
        self.running = False
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.ls.close()

    def serve(self):
        while self.running:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        buf = b""
        try:
            while b"\r\n\r\n" not in buf:
                b = c.recv(65536)
                if not b:
                    return
                buf += b
            if buf.startswith(b"GET /health"):
                c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                c.close()
                return
            m = self.mode
            if m == "stall":
                time.sleep(30)
            elif m == "reset":
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                c.close()
            elif m == "garbage":
                c.sendall(b"\x00\xffthis is not HTTP at all\r\n\r\n" * 10)
                c.close()
            elif m == "hugeheader":
                c.sendall(b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * (256 << 10) + b"\r\n\r\n")
                c.close()
            elif m == "cutbody":
                c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                          b"content-length: 1000\r\n\r\n{\"id\":\"x\",")
                time.sleep(0.2)
                c.close()
            elif m in ("sse_stall", "sse_cut"):
                c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                          b"transfer-encoding: chunked\r\n\r\n")
                ev = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
                c.sendall(b"%x\r\n" % len(ev) + ev + b"\r\n")
                if m == "sse_stall":
                    time.sleep(30)
                else:
                    time.sleep(0.2)
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                    c.close()
        except OSError:
            pass


def inflight_total(shm):
    r = subprocess.run([SYCTL, "--shm", shm, "inflight", "--json"], capture_output=True,
                       text=True, timeout=10)
    return sum(w["in_flight"] for w in json.loads(r.stdout)["workers"])


def wait_inflight_zero(shm, what):
    end = time.time() + 10
    while time.time() < end:
        if inflight_total(shm) == 0:
            return
        time.sleep(0.1)
    fail("in-flight guards not released: " + what)


def upstreams():
    modes = ["stall", "reset", "garbage", "hugeheader", "cutbody", "sse_stall", "sse_cut"]
    fakes = {m: FakeEngine(m) for m in modes}
    cfg = os.path.join(T, "up.yaml")
    with open(cfg, "w") as f:
        f.write("model_id: m1\nworkers:\n")
        for m, fe in fakes.items():
            f.write("  - {url: %s, model: %s}\n" % (fe.url, m))
        f.write("router: {header_timeout_secs: 1, stream_idle_timeout_secs: 1, processes: 1}\n")
    port, rp = router("up", "--config", cfg)
    shm = SHM + "up"
    urls = [fe.url for fe in fakes.values()]

    def chat(model, stream=False):
        return request(port, "POST", "/v1/chat/completions",
                       {"model": model, "stream": stream, "max_tokens": 4,
                        "messages": [{"role": "user", "content": "x"}]}, timeout=15)
    t0 = time.time()
    expect_error("stalled engine", chat("stall"), 504, "upstream_timeout", urls)
    if time.time() - t0 > 5:
        fail("stalled engine: header timeout not kept (%.1f s)" % (time.time() - t0))
    for m in ("reset", "garbage", "hugeheader"):
        expect_error("engine " + m, chat(m), 502, "upstream_unreachable", urls)
    # A non-streamed body cut after the headers: held until complete, so a
    # 502 upstream_body_incomplete (never a truncated 200, never a hang).
    expect_error("cut body", chat("cutbody"), 502, "upstream_body_incomplete", urls)
    for m in ("sse_stall", "sse_cut"):
        t0 = time.time()
        try:
            st, h, body = chat(m, stream=True)
            if b"[DONE]" in body:
                fail(m + ": stream completed?")
        except (http.client.IncompleteRead, ConnectionError):
            pass
        if time.time() - t0 > 6:
            fail(m + ": took %.1f s" % (time.time() - t0))
    wait_inflight_zero(shm, "after hostile engines")
    if rp.poll() is not None:
        fail("router died on a hostile engine")
    st, _, m = request(port, "GET", "/metrics")
    for l in m.decode().splitlines():
        if l.startswith("switchyard_stream_outcome_total") and "idle_timeout" in l and l.endswith(" 0"):
            fail("stream idle timeout not counted: " + l)
    log("upstreams: stall 504, reset/garbage/huge header 502, cut bodies and streams end, guards released")


def bodies(port, urls):
    def post(body, path="/v1/chat/completions"):
        return request(port, "POST", path, body)
    e = expect_error("malformed JSON", post('{"model":"m1","messages":[{"role":"user","content":"x"}],}'),
                     400, "bad_request", urls)
    if "at byte 58" not in e["message"]:
        fail("malformed JSON: no byte offset: " + e["message"])
    expect_error("truncated JSON", post('{"model":"m1","messages":[{"role":'), 400, "bad_request",
                 urls, contains="byte")
    expect_error("invalid UTF-8", post(b'{"model":"m1","messages":[{"role":"user","content":"\xff"}]}'),
                 400, "bad_request", urls, contains="byte")
    expect_error("overlong UTF-8", post(b'{"model":"m1","messages":[{"role":"user","content":"\xc0\xaf"}]}'),
                 400, "bad_request", urls, contains="invalid UTF-8 at byte 52")
    expect_error("encoded surrogate", post(b'{"model":"m1","messages":[{"role":"user","content":"\xed\xb0\x80"}]}'),
                 400, "bad_request", urls, contains="invalid UTF-8 at byte 52")
    expect_error("lone surrogate escape",
                 post(b'{"model":"m1","messages":[{"role":"user","content":"x\\ud800"}],"a":1}'),
                 400, "bad_request", urls, contains="lone surrogate escape \\ud800 at byte 53")
    expect_error("lone surrogate escape in a key", post(b'{"model":"m1","\\udc00":1}'),
                 400, "bad_request", urls, contains="at byte 15")
    expect_error("not an object", post("[1,2]"), 400, "bad_request", urls)
    expect_error("model a number", post({"model": 5, "messages": [{"role": "user", "content": "x"}]}),
                 400, "bad_request", urls, contains="model")
    expect_error("messages a string", post({"model": "m1", "messages": "hi"}), 400, "bad_request",
                 urls, contains="messages")
    expect_error("role a number", post({"model": "m1", "messages": [{"role": 1, "content": "x"}]}),
                 400, "bad_request", urls, contains="messages[0].role")
    expect_error("stream a string", post({"model": "m1", "stream": "yes",
                                          "messages": [{"role": "user", "content": "x"}]}),
                 400, "bad_request", urls, contains="stream")
    for v in ("-1", "1.5", '"5"', "1e300"):
        expect_error("max_tokens " + v,
                     post('{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":%s}' % v),
                     400, "bad_request", urls, contains="max_tokens")
    expect_error("max_tokens overflowing the peak",
                 post('{"model":"m1","messages":[{"role":"user","content":"x"}],'
                      '"max_tokens":18446744073709551615}'), 400, "bad_request", urls,
                 contains="overflow")
    expect_error("deep nesting", post('{"model":"m1","messages":[{"role":"user","content":"x"}],"x":'
                                      + "[" * 100000 + "]" * 100000 + "}"),
                 400, "bad_request", urls, contains="deeper")
    expect_error("unknown model", post({"model": "nope", "messages": [{"role": "user", "content": "x"}]}),
                 404, "model_not_found", urls)
    expect_error("empty body", post(""), 400, "bad_request", urls)
    log("bodies: malformed (byte offsets), wrong types, peak overflow, depth, 404")


def no_bucket(a_url):
    cfg = os.path.join(T, "nb.yaml")
    with open(cfg, "w") as f:
        f.write("model_id: m1\nworkers: [{url: %s}]\nrouter: {processes: 1}\n"
                "buckets:\n  - id: small\n    rank: 1\n    limits: {min: 0, max: 4096}\n    max_context_tokens: 256\n"
                "    groups: {plain: {policy: {type: random}}}\n" % a_url)
    port, _ = router("nb", "--config", cfg)
    expect_error("no matching bucket",
                 request(port, "POST", "/v1/chat/completions",
                         {"model": "m1", "max_tokens": 1000,
                          "messages": [{"role": "user", "content": "x"}]}),
                 400, "no_matching_bucket", [a_url])
    st, h, _ = request(port, "POST", "/v1/chat/completions",
                       {"model": "m1", "max_tokens": 2, "messages": [{"role": "user", "content": "x"}]})
    if st != 200 or h.get("x-switchyard-bucket") != "small":
        fail("small request not served by bucket small: %d %s" % (st, h))
    log("no matching bucket: 400")


def slowloris(port):
    """Connections that send half a request and hold it: others are served."""
    held = []
    for i in range(40):
        s = socket.create_connection(("127.0.0.1", port))
        if i % 2:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{\"mo")
        else:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: ")
        held.append(s)
    t0 = time.time()
    for _ in range(10):
        st, _, _ = request(port, "POST", "/v1/chat/completions",
                           {"model": "m1", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]},
                           timeout=5)
        if st != 200:
            fail("request while slowloris connections are held: %d" % st)
    if time.time() - t0 > 5:
        fail("slowloris slowed the router down: %.1f s for 10 requests" % (time.time() - t0))
    for s in held:
        s.close()
    log("slowloris: 40 partial requests held, others served")


def cancelled_streams(port, shm):
    """Many concurrent streams whose clients vanish mid-way (and some before
    the first byte): every guard released."""
    socks = []
    body = json.dumps({"model": "m1", "stream": True, "max_tokens": 200,
                       "messages": [{"role": "user", "content": "stream please"}]}).encode()
    for i in range(64):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                  b"content-length: %d\r\n\r\n" % len(body) + body)
        socks.append(s)
    end = time.time() + 10
    while inflight_total(shm) < 32 and time.time() < end:
        time.sleep(0.05)
    n = inflight_total(shm)
    if n < 32:
        fail("streams not in flight: %d" % n)
    for i, s in enumerate(socks):
        if i % 2:
            s.recv(100)
        if i % 3 == 0:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
        s.close()
    wait_inflight_zero(shm, "after 64 cancelled streams")
    st, _, _ = request(port, "POST", "/v1/chat/completions",
                       {"model": "m1", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]})
    if st != 200:
        fail("router unusable after cancelled streams: %d" % st)
    log("streams: 64 concurrent streams cancelled (%d were in flight), guards released" % n)


try:
    a = fleet("a", "--model", "m1", "--decode-us-per-token", "20000")
    port, rp = router("r1", "--worker-urls", a["url"], "--model-id", "m1", "--processes", "2")
    oversize(port)
    framing(port)
    bodies(port, [a["url"]])
    slowloris(port)
    cancelled_streams(port, SHM + "r1")
    h2_rapid_reset(port, rp)
    body_budget(a["url"])
    h2_body_budget(a["url"])
    no_bucket(a["url"])
    upstreams()
    if rp.poll() is not None:
        fail("router died")
    log("router_hostile: OK")
finally:
    cleanup()
