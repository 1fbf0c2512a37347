#!/usr/bin/python3
"""router_upstream.py ROUTER — the upstream client's edge cases against a
scripted raw-socket engine (one router process, so one socket pool):
content-length and chunked answers (chunk boundaries split across reads,
extensions, trailers), SSE relayed chunk by chunk, read-until-close framing,
the engine closing a non-streamed body mid-body, inside a chunk or after a
whole chunk without the 0-chunk, or before the first body byte (502
upstream_body_incomplete: such bodies are held until complete), a stream
cut after an event (the client sees the event, then a broken end), keep-alive
reuse (one upstream connection for sequential requests; none after
"connection: close"), an idle kept-alive socket closed by the engine (the
next request still succeeds), connection refused (502
upstream_unreachable, then 503: the worker is marked down), the header timeout (504 upstream_timeout), an
engine's own 400 passed on as written, rerank answers wrapped as SMG does
(chunked), or refused with 502 upstream_invalid_response (not a list,
past --max-body-bytes), and --upstream-client h2o refused at start-up with
its reason.

Client side of keep-alive (the edge parks a connection while its request
runs, edge.c): 40 sequential requests on one client connection, plain and
streamed; two requests pipelined in one write while the first waits on the
engine, both answered in order; a client that closes while its request waits
is cancelled (the engine's connection is closed) and the router serves the
next client.

The fake engine picks its behaviour from the request header x-fake (passed
upstream by the router like any client header)."""
import http.client, json, os, socket, subprocess, sys, tempfile, threading, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sytest  # noqa: E402  (shared helpers beside this script)
from sytest import check, fail, free_port  # noqa: E402

ROUTER = sys.argv[1]
CHAT = json.dumps({"model": "m1", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
SMALL = b'{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}'
REFUSAL = b'{"object":"error","message":"The input is longer than the context","type":"BadRequestError","code":400}'
RERANK = b'[{"score":0.75,"document":"b","index":1,"meta_info":null},{"score":0.25,"document":"a","index":0}]'
RERANK_BODY = json.dumps({"model": "m1", "query": "q", "documents": ["a", "b"], "top_k": 1, "rid": "r"})


@sytest.on_fail
def show_log():
    sytest.print_tail(globals().get("LOG", ""))


class Engine:
    """A raw HTTP/1.1 server on a thread per connection."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.requests = 0
        self.aborted = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:  # the listener was shut down
                return
            self.connections += 1
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode().split("\r\n")
                hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
                n = int(hdrs.get("content-length", "0"))
                while len(buf) < n:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                buf = buf[n:]
                self.requests += 1
                if not self.answer(c, hdrs.get("x-fake", "cl")):
                    c.close()
                    return
        except OSError:
            pass

    def answer(self, c, mode):
        """Sends one answer; returns False to close the connection."""
        if mode == "cl":
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                      b"x-engine: yes\r\n\r\n" % len(SMALL) + SMALL)
            return True
        if mode == "cl-split":  # head and body in pieces
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-")
            time.sleep(0.05)
            c.sendall(b"length: %d\r\n\r\n%s" % (len(SMALL), SMALL[:10]))
            time.sleep(0.05)
            c.sendall(SMALL[10:])
            return True
        if mode == "chunked":  # boundaries split across reads, an extension, a trailer
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
                      b"5;ext=1\r\nhello\r\nc")
            time.sleep(0.05)
            c.sendall(b"\r\n, chunked wo\r\n3\r\nrld\r\n0\r\nx-trailer: t\r\n")
            time.sleep(0.05)
            c.sendall(b"\r\n")
            return True
        if mode == "sse":  # three events 300 ms apart
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for i in range(3):
                ev = b"data: %d\n\n" % i
                c.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
                time.sleep(0.3)
            c.sendall(b"0\r\n\r\n")
            return True
        if mode == "until-close":
            c.sendall(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nall of it until the end")
            return False
        if mode == "conn-close":
            c.sendall(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok")
            return False
        if mode == "mid-body":  # promises 100 bytes, sends 10
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\n0123456789")
            time.sleep(0.1)
            return False
        if mode == "sse-cut":  # one event, then the engine goes away
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                      b"9\r\ndata: 0\n\n\r\n")
            time.sleep(0.1)
            return False
        if mode == "mid-chunk":
            c.sendall(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\na\r\n0123456789\r\n")
            time.sleep(0.1)
            return False
        if mode == "in-chunk":  # close inside a chunk
            c.sendall(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\na\r\n01234")
            time.sleep(0.1)
            return False
        if mode == "chunked-no-body":  # chunked head only, then close
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n")
            time.sleep(0.1)
            return False
        if mode == "no-body":  # head only, then close
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\n")
            time.sleep(0.1)
            return False
        if mode == "close-after":  # answer keep-alive, then drop the idle socket
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            time.sleep(0.05)
            return False
        if mode == "silent":
            time.sleep(3)
            return False
        if mode == "hold":  # no answer; counts the router closing the request (abort)
            c.settimeout(5)
            try:
                if c.recv(1) == b"":
                    self.aborted += 1
            except OSError:
                pass
            return False
        if mode == "slow":  # a content-length answer after 300 ms
            time.sleep(0.3)
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                      % len(SMALL) + SMALL)
            return True
        if mode == "empty":
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            return True
        if mode == "refuse":  # the engine's own 400 (e.g. a prompt too long)
            c.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                      b"content-length: %d\r\n\r\n%s" % (len(REFUSAL), REFUSAL))
            return True
        if mode == "rerank-chunked":  # SGLang's rerank list, in two chunks
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                      b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(RERANK[:20]), RERANK[:20]))
            time.sleep(0.05)
            c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(RERANK[20:]), RERANK[20:]))
            return True
        if mode == "rerank-object":  # not a result list
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 14\r\n\r\n"
                      b'{"results":[]}')
            return True
        if mode == "rerank-huge":  # a list past --max-body-bytes (64 KiB here)
            body = b"[" + b",".join([b'{"score":0.5,"index":1}'] * 8000) + b"]"
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                      % len(body) + body)
            return True
        return False


def post(port, mode, timeout=10, path="/v1/chat/completions", body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, body or CHAT, {"content-type": "application/json", "x-fake": mode})
    r = conn.getresponse()
    try:
        body = r.read()
        complete = True
    except http.client.IncompleteRead as e:
        body, complete = e.partial, False
    conn.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body, complete


def raw_request(mode, body=CHAT):
    return (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"x-fake: %s\r\ncontent-length: %d\r\n\r\n%s" % (mode.encode(), len(body), body.encode()))


def read_response(f):
    """One HTTP/1.1 response from the file f (content-length or chunked) →
    (status, body)."""
    status = int(f.readline().split()[1])
    hdrs = {}
    while True:
        line = f.readline().decode()
        if line in ("\r\n", ""):
            break
        k, v = line.split(":", 1)
        hdrs[k.strip().lower()] = v.strip()
    if "content-length" in hdrs:
        return status, f.read(int(hdrs["content-length"]))
    body = b""
    while True:
        n = int(f.readline().split(b";")[0], 16)
        if n == 0:
            f.readline()
            return status, body
        body += f.read(n)
        f.readline()


def client_keepalive(port, eng):
    """The client side of keep-alive: the edge parks a connection while h2o
    serves its request (edge.c), and must lose nothing."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sock0 = None
    for i in range(40):
        mode = "sse" if i % 10 == 9 else "cl"
        conn.request("POST", "/v1/chat/completions", CHAT, {"content-type": "application/json", "x-fake": mode})
        r = conn.getresponse()
        b = r.read()
        check(r.status == 200 and (b == SMALL if mode == "cl" else b.startswith(b"data: 0")),
              "keep-alive request %d (%s): %s %r" % (i, mode, r.status, b[:60]))
        sock0 = sock0 or conn.sock
        check(conn.sock is sock0, "the client connection was not kept alive at request %d" % i)
    conn.close()
    # Pipelined: the second request arrives while the first waits on the engine.
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(raw_request("slow") + raw_request("cl"))
    f = s.makefile("rb")
    for what in ("first", "second"):
        st, b = read_response(f)
        check(st == 200 and b == SMALL, "pipelined %s answer: %s %r" % (what, st, b))
    # ... and bytes that arrive after the first request is parked.
    s.sendall(raw_request("slow"))
    time.sleep(0.1)
    s.sendall(raw_request("cl"))
    for what in ("first", "second"):
        st, b = read_response(f)
        check(st == 200 and b == SMALL, "late pipelined %s answer: %s %r" % (what, st, b))
    f.close()
    s.close()
    # The client leaves while its request waits: the engine's connection is
    # closed (SGLang's abort), and the router goes on serving.
    a0 = eng.aborted
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(raw_request("hold"))
    time.sleep(0.2)
    s.close()
    sytest.wait_for("the engine connection of a cancelled request to close",
                    lambda: eng.aborted > a0, timeout=3)
    st, _, b, _ = post(port, "cl")
    check(st == 200 and b == SMALL, "request after a cancelled one: %s %r" % (st, b))


def start_router(urls, *extra):
    port = free_port()
    shm = "/dev/shm/sy-test-upstream-%d-%d" % (os.getpid(), port)
    p = subprocess.Popen([ROUTER, "--port", str(port), "--shm", shm, "--processes", "1",
                          "--model-id", "m1", "--worker-urls", *urls, *extra],
                         stdout=open(LOG, "a"), stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p, port, shm
        except OSError:
            time.sleep(0.05)
    fail("router did not come up")


def stop_router(p, shm):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
    if os.path.exists(shm):
        os.unlink(shm)


LOG = tempfile.mktemp(prefix="sy-upstream-", suffix=".log")


def main():
    eng = Engine()
    p, port, shm = start_router(["http://127.0.0.1:%d" % eng.port], "--header-timeout-secs", "1",
                                "--max-body-bytes", "65536")
    try:
        st, h, b, ok = post(port, "cl")
        check(st == 200 and b == SMALL and ok, "content-length answer: %s %r" % (st, b))
        check(h.get("x-engine") == "yes" and h.get("content-type") == "application/json", "headers not passed: %s" % h)
        check(h.get("x-switchyard-worker", "").endswith(str(eng.port)), "no decision header")
        st, h, b, ok = post(port, "cl-split")
        check(st == 200 and b == SMALL and ok, "split content-length answer: %s %r" % (st, b))
        st, h, b, ok = post(port, "chunked")
        check(st == 200 and b == b"hello, chunked world" and ok, "chunked answer: %s %r" % (st, b))
        st, h, b, ok = post(port, "empty")
        check(st == 200 and b == b"" and ok, "empty answer: %s %r" % (st, b))

        # Keep-alive reuse: sequential requests share one upstream connection.
        c0 = eng.connections
        for _ in range(5):
            check(post(port, "cl")[0] == 200, "keep-alive request failed")
        check(eng.connections - c0 <= 1, "no reuse: %d connections for 5 requests" % (eng.connections - c0))
        # "connection: close" is honoured: the next request opens a new one.
        check(post(port, "conn-close")[2] == b"ok", "connection: close answer")
        c0 = eng.connections
        check(post(port, "cl")[0] == 200, "request after connection: close")
        check(eng.connections - c0 == 1, "socket reused after connection: close")
        # An idle kept-alive socket dropped by the engine: the next request
        # still succeeds (on a new connection).
        check(post(port, "close-after")[2] == b"ok", "close-after answer")
        time.sleep(0.3)
        st, _, b, _ = post(port, "cl")
        check(st == 200 and b == SMALL, "request after the engine dropped an idle socket: %s" % st)

        client_keepalive(port, eng)

        # SSE relayed chunk by chunk: the first event arrives well before the last.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        t0 = time.time()
        conn.request("POST", "/v1/chat/completions", CHAT, {"content-type": "application/json", "x-fake": "sse"})
        r = conn.getresponse()
        first = r.readline()
        t_first = time.time() - t0
        rest = r.read()
        t_all = time.time() - t0
        conn.close()
        check(first == b"data: 0\n", "first SSE line %r" % first)
        check(t_first < 0.25 and t_all > 0.8, "SSE not streamed: first %.2fs, all %.2fs" % (t_first, t_all))
        check(rest == b"\ndata: 1\n\ndata: 2\n\n", "SSE rest %r" % rest)

        st, h, b, ok = post(port, "until-close")
        check(st == 200 and b == b"all of it until the end" and ok, "read-until-close answer: %s %r" % (st, b))

        # The engine closes a non-streamed body before it is complete: the
        # router holds such a body until its end, so the client gets a 502
        # upstream_body_incomplete, never a truncated 200 — short of
        # content-length, after a whole chunk without the 0-chunk, inside a
        # chunk.
        for mode in ("mid-body", "mid-chunk", "in-chunk"):
            st, h, b, ok = post(port, mode)
            check(st == 502 and h.get("x-router-error-code") == "upstream_body_incomplete" and ok,
                  "%s close: %s %s %r complete=%s" % (mode, st, h.get("x-router-error-code"), b, ok))
        # A stream cut after its first event: the client has the event, then
        # the end of a broken chunked response.
        st, h, b, ok = post(port, "sse-cut")
        check(st == 200 and b == b"data: 0\n\n" and not ok, "sse cut: %s %r complete=%s" % (st, b, ok))
        # ... before any body byte: a proper error instead.
        st, h, b, ok = post(port, "no-body")
        check(st == 502 and h.get("x-router-error-code") == "upstream_body_incomplete",
              "close before the first body byte: %s %s %r" % (st, h.get("x-router-error-code"), b))
        check(json.loads(b)["error"]["code"] == "upstream_body_incomplete", "error body %r" % b)
        st, h, b, ok = post(port, "chunked-no-body")
        check(st == 502 and h.get("x-router-error-code") == "upstream_body_incomplete",
              "chunked close before the first body byte: %s %s %r" % (st, h.get("x-router-error-code"), b))

        # An engine's own 4xx reaches the client as the engine wrote it.
        st, h, b, ok = post(port, "refuse")
        check(st == 400 and b == REFUSAL and "x-router-error-code" not in h,
              "the engine's 400 was not passed on: %s %s %r" % (st, h, b))

        # Rerank as SMG answers it: the engine's list (chunked here) held
        # whole and wrapped; a 2xx that is not a result list, or one past
        # --max-body-bytes, is 502 upstream_invalid_response.
        st, h, b, ok = post(port, "rerank-chunked", path="/rerank", body=RERANK_BODY)
        d = json.loads(b) if st == 200 else {}
        check(st == 200 and ok and d.get("object") == "rerank" and d.get("id") == "r"
              and d.get("model") == "m1"
              and d.get("results") == [{"score": 0.75, "document": "b", "index": 1}]
              and int(h.get("content-length", -1)) == len(b), "rerank wrap: %s %s %r" % (st, h, b))
        for mode in ("rerank-object", "rerank-huge"):
            st, h, b, ok = post(port, mode, path="/v1/rerank", body=RERANK_BODY)
            check(st == 502 and h.get("x-router-error-code") == "upstream_invalid_response" and ok,
                  "%s: %s %s %r" % (mode, st, h.get("x-router-error-code"), b[:200]))
        st, h, b, ok = post(port, "refuse", path="/v1/rerank", body=RERANK_BODY)
        check(st == 400 and b == REFUSAL, "rerank: the engine's 400 was not passed on: %s %r" % (st, b))
        check(post(port, "cl")[0] == 200, "a request after the rerank refusals")

        # Header timeout (--header-timeout-secs 1): 504.
        t0 = time.time()
        st, h, b, ok = post(port, "silent")
        check(st == 504 and h.get("x-router-error-code") == "upstream_timeout", "header timeout: %s %r" % (st, b))
        check(time.time() - t0 < 2.5, "header timeout took %.1fs" % (time.time() - t0))
        # ... the timeout marked the worker down (passive health); the
        # master's probe, sent at once after the mark, brings it back.
        t0 = time.time()
        while post(port, "cl")[0] != 200:
            check(time.time() - t0 < 2, "worker not back within 2 s of the timeout")
            time.sleep(0.05)
    finally:
        stop_router(p, shm)

    # Connection refused: 502 upstream_unreachable, and the worker is marked
    # down at once (passive health): the next request finds no candidate.
    gone = Engine()
    # Probes 60 s apart: the request, not a probe, is what finds the engine
    # gone (the first probe at start-up still gates its first pick).
    p, port, shm = start_router(["http://127.0.0.1:%d" % gone.port], "--health-interval-ms", "60000")
    try:
        # The first probe passed once a request is served (until then the
        # worker is unknown and the request below would get 503); the
        # engine closes that connection, so no pooled socket outlives it.
        t0 = time.time()
        while post(port, "conn-close")[0] != 200:
            check(time.time() - t0 < 5, "worker not picked within 5 s of the start")
            time.sleep(0.05)
        gone.sock.shutdown(socket.SHUT_RDWR)  # the engine passed its probe; now it refuses
        gone.sock.close()
        st, h, b, ok = post(port, "cl")
        check(st == 502 and h.get("x-router-error-code") == "upstream_unreachable", "refused: %s %r" % (st, b))
        check(str(gone.port) not in b.decode(), "worker URL in the error message")
        st, h, b, ok = post(port, "cl")
        check(st == 503 and h.get("x-router-error-code") == "no_healthy_workers",
              "after the refusal: %s %r" % (st, b))
    finally:
        stop_router(p, shm)
    # One upstream client: lean is accepted, h2o refused with its reason.
    r = subprocess.run([ROUTER, "--check-config", "--upstream-client", "lean", "--worker-urls",
                        "http://127.0.0.1:1"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 0, "--upstream-client lean refused: %s" % r.stderr)
    r = subprocess.run([ROUTER, "--check-config", "--upstream-client", "h2o", "--worker-urls",
                        "http://127.0.0.1:1"], capture_output=True, text=True, timeout=10)
    check(r.returncode != 0 and "--upstream-client: h2o is no longer offered" in r.stderr
          and "use lean" in r.stderr, "--upstream-client h2o: rc %d, %r" % (r.returncode, r.stderr))
    os.unlink(LOG)
    print("router_upstream: OK")


if __name__ == "__main__":
    main()
