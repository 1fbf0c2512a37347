#!/usr/bin/env bash
# router_openai.sh ROUTER FLEET MOCK SYCTL CACHE_DIR — the official `openai`
# npm client (v4) through a 2-process router in front of two mock engines:
# a non-streamed and a streamed chat completion (same text), a streamed
# text completion, and a router error (404 model_not_found) surfacing as
# NotFoundError. npm installs into CACHE_DIR (build dir, git-ignored); exit
# 77 (skip) only when the npm registry cannot be reached.
ROUTER=$1 FLEET=$2 MOCK=$3 SYCTL=$4 CACHE=$5
. "$(dirname "$0")/router_lib.sh"
rt_init openai

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
if [ ! -f "$CACHE/node_modules/openai/package.json" ]; then
  if ! (cd "$CACHE" && timeout 120 /usr/bin/npm install --no-audit --no-fund --silent openai@4 >"$CACHE/npm.log" 2>&1); then
    if ! timeout 20 /usr/bin/npm ping >/dev/null 2>&1; then
      echo "SKIP: the npm registry is unreachable" >&2
      exit 77
    fi
    cat "$CACHE/npm.log" >&2
    rt_fail "npm install openai@4 failed although the registry answers"
  fi
fi

urls=$(rt_fleet "$T/fleet" --count 2 -- --model mock-model --decode-us-per-token 1000)
rt_router --worker-urls $urls --model-id mock-model --processes 2

cat >"$T/client.mjs" <<'JS'
import { createRequire } from "module";
const require = createRequire(process.env.OPENAI_DIR + "/");
const OpenAI = require("openai");
const assert = require("assert");
const client = new OpenAI({ baseURL: process.env.ROUTER_URL + "/v1", apiKey: "unused", maxRetries: 0 });
const messages = [{ role: "user", content: "hello through switchyard" }];

const full = await client.chat.completions.create({ model: "mock-model", messages, max_tokens: 6 });
assert.strictEqual(full.object, "chat.completion");
assert.strictEqual(full.usage.completion_tokens, 6);

const stream = await client.chat.completions.create({ model: "mock-model", messages, max_tokens: 6, stream: true });
let text = "", finish = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  for (const c of chunk.choices) {
    if (c.delta && c.delta.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
assert.ok(chunks >= 6, "several chunks");
assert.strictEqual(finish, "length");
assert.strictEqual(text, full.choices[0].message.content);

const cs = await client.completions.create({ model: "mock-model", prompt: "once upon", max_tokens: 4, stream: true });
let n = 0;
for await (const chunk of cs) n++;
assert.ok(n >= 4);

try {
  await client.chat.completions.create({ model: "no-such-model", messages, max_tokens: 2 });
  assert.fail("expected an error");
} catch (e) {
  assert.ok(e instanceof OpenAI.NotFoundError, "NotFoundError, got " + e);
  assert.strictEqual(e.error.code, "model_not_found");
}
console.log("openai client OK:", JSON.stringify(text));
JS
OPENAI_DIR="$CACHE/node_modules" ROUTER_URL="$RURL" timeout 60 node "$T/client.mjs" || rt_fail "openai client"
echo "router_openai: OK"
