#!/usr/bin/env bash
# router_tls.sh ROUTER FLEET MOCK SYCTL — TLS on the client listener:
# --tls-cert-path/--tls-key-path serve HTTP/1.1 and HTTP/2 (ALPN) over TLS,
# plain HTTP is refused on that port, SIGHUP takes a new certificate (a
# broken one is refused and the old one kept), and settings that cannot
# work are refused at --check-config: a certificate without its key, a key
# that does not match, https:// workers (no TLS to engines).
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4
. "$(dirname "$0")/router_lib.sh"
rt_init tls

# A CA and two server certificates for localhost / 127.0.0.1.
cd "$T"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=sy-test-ca 2>/dev/null
for n in one two; do
  openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "/CN=router-$n" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$n.ext"
  openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$n.ext" -out "$n.pem" 2>/dev/null
done
cd - >/dev/null
cp "$T/one.pem" "$T/cert.pem"; cp "$T/one.key" "$T/key.pem"

a=$(rt_fleet "$T/a" --count 1 -- --model m1)
PORT=$(rt_free_port)
URL=https://localhost:$PORT
tls=(--cacert "$T/ca.pem" --resolve "localhost:$PORT:127.0.0.1" -sS)
"$ROUTER" --port "$PORT" --shm "$SHM" --worker-urls "$a" --model-id m1 \
  --tls-cert-path "$T/cert.pem" --tls-key-path "$T/key.pem" >>"$T/router.log" 2>&1 &
RPID=$!
for _ in $(seq 1 100); do
  curl "${tls[@]}" -f "$URL/health" >/dev/null 2>&1 && break
  kill -0 "$RPID" 2>/dev/null || rt_fail "router exited at start: $(tail -5 "$T/router.log")"
  sleep 0.05
done
[ "$(curl "${tls[@]}" -o /dev/null -w '%{http_code} %{http_version}' --http1.1 "$URL/health")" = "200 1.1" ] || rt_fail "HTTP/1.1 over TLS"
[ "$(curl "${tls[@]}" -o /dev/null -w '%{http_code} %{http_version}' --http2 "$URL/health")" = "200 2" ] || rt_fail "ALPN h2"
chat='{"model":"m1","messages":[{"role":"user","content":"x"}],"max_tokens":1}'
for v in --http1.1 --http2; do
  st=$(curl "${tls[@]}" $v -o "$T/o" -w '%{http_code}' -d "$chat" "$URL/v1/chat/completions")
  [ "$st" = 200 ] || rt_fail "chat over TLS ($v): $st $(cat "$T/o")"
done
if curl -sS -m 3 -o /dev/null "http://127.0.0.1:$PORT/health" 2>/dev/null; then
  rt_fail "plain HTTP answered on the TLS port"
fi
subject() {
  openssl s_client -connect "127.0.0.1:$PORT" -servername localhost -CAfile "$T/ca.pem" </dev/null 2>/dev/null |
    openssl x509 -noout -subject
}
subject | grep -q 'CN *= *router-one' || rt_fail "first certificate not served: $(subject)"
# SIGHUP takes the new files for new connections.
cp "$T/two.pem" "$T/cert.pem"; cp "$T/two.key" "$T/key.pem"
kill -HUP "$RPID"
for _ in $(seq 1 50); do subject | grep -q 'CN *= *router-two' && break; sleep 0.1; done
subject | grep -q 'CN *= *router-two' || rt_fail "rotated certificate not served after SIGHUP: $(subject)"
# A key that does not match: the reload is refused, the served one stays.
cp "$T/one.key" "$T/key.pem"
kill -HUP "$RPID"
for _ in $(seq 1 50); do grep -q 'SIGHUP: configuration refused.*does not match' "$T/router.log" && break; sleep 0.1; done
grep -q 'SIGHUP: configuration refused.*router.tls_key_path: the key in .* does not match' "$T/router.log" ||
  rt_fail "mismatched key not refused on reload: $(tail -3 "$T/router.log")"
subject | grep -q 'CN *= *router-two' || rt_fail "certificate lost after a refused reload"
[ "$(curl "${tls[@]}" -o /dev/null -w '%{http_code}' "$URL/health")" = 200 ] || rt_fail "not serving after a refused reload"

chk() { "$ROUTER" --check-config --worker-urls "$a" "$@" 2>&1; }
out=$(chk --tls-cert-path "$T/one.pem") && rt_fail "certificate without key accepted"
grep -q 'router.tls_cert_path: needs router.tls_key_path too' <<<"$out" || rt_fail "no key: $out"
out=$(chk --tls-cert-path "$T/one.pem" --tls-key-path "$T/two.key") && rt_fail "mismatched key accepted"
grep -q 'router.tls_key_path: the key in .* does not match the certificate' <<<"$out" || rt_fail "mismatch: $out"
out=$(chk --tls-cert-path "$T/missing.pem" --tls-key-path "$T/one.key") && rt_fail "missing certificate accepted"
grep -q "router.tls_cert_path: cannot load a PEM certificate chain from $T/missing.pem" <<<"$out" || rt_fail "missing: $out"
out=$("$ROUTER" --check-config --worker-urls https://127.0.0.1:1 2>&1) && rt_fail "https worker accepted"
grep -q 'workers\[0\].url: https://127.0.0.1:1: https:// workers are not supported' <<<"$out" || rt_fail "https worker: $out"
chk --tls-cert-path "$T/one.pem" --tls-key-path "$T/one.key" | grep -q 'configuration OK' || rt_fail "good TLS refused"
echo "router_tls: OK"
