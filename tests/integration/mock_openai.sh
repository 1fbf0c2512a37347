#!/usr/bin/env bash
# mock_openai.sh FLEET BIN CACHE_DIR — the official `openai` npm client (v4)
# parses the mock engine's responses: a non-streamed and a streamed chat
# completion (SSE framing, final finish_reason chunk, include_usage chunk,
# [DONE]), a streamed text completion, and a 400 surfacing as BadRequestError.
# The client is installed with npm into CACHE_DIR (inside the build dir, which
# git ignores). Exit 77 (skip) only when the npm registry cannot be reached.
set -euo pipefail
fleet=$1 bin=$2 cache=$3
dir=$(mktemp -d /tmp/sy-mock-openai.XXXXXX)
cleanup() { "$fleet" stop --dir "$dir" || true; rm -rf "$dir"; }
trap cleanup EXIT

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
if [ ! -f "$cache/node_modules/openai/package.json" ]; then
  if ! (cd "$cache" && timeout 120 npm install --no-audit --no-fund --silent openai@4 >"$cache/npm.log" 2>&1); then
    if ! timeout 20 npm ping >/dev/null 2>&1; then
      echo "SKIP: the npm registry is unreachable" >&2
      exit 77
    fi
    cat "$cache/npm.log" >&2
    echo "FAIL: npm install openai@4 failed although the registry answers" >&2
    exit 1
  fi
fi

url=$("$fleet" start --dir "$dir" --bin "$bin" -- --decode-us-per-token 2000 --model mock-model)

cat >"$dir/client.mjs" <<'JS'
import { createRequire } from "module";
const require = createRequire(process.env.OPENAI_DIR + "/");
const OpenAI = require("openai");
const assert = require("assert");

const client = new OpenAI({ baseURL: process.env.MOCK_URL + "/v1", apiKey: "unused", maxRetries: 0 });
const messages = [{ role: "system", content: "be brief" }, { role: "user", content: "hello switchyard" }];

const full = await client.chat.completions.create({ model: "mock-model", messages, max_tokens: 7 });
assert.strictEqual(full.object, "chat.completion");
assert.strictEqual(full.choices[0].finish_reason, "length");
assert.strictEqual(full.usage.completion_tokens, 7);
const text = full.choices[0].message.content;
assert.ok(text.length > 0, "non-empty content");

const stream = await client.chat.completions.create({
  model: "mock-model", messages, max_tokens: 7, stream: true,
  stream_options: { include_usage: true },
});
let streamed = "", finish = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  assert.strictEqual(chunk.object, "chat.completion.chunk");
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta && c.delta.content) streamed += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
assert.strictEqual(streamed, text, "stream and non-stream texts are the same (seeded by the prompt)");
assert.strictEqual(finish, "length");
assert.ok(usage && usage.completion_tokens === 7, "usage chunk");
assert.ok(usage.prompt_tokens_details.cached_tokens > 0, "second request hits the cache");
assert.ok(chunks >= 9, `role + 7 tokens + finish + usage chunks, got ${chunks}`);

// The collected stream helper of the SDK agrees.
const s2 = client.beta.chat.completions.stream({ model: "mock-model", messages, max_tokens: 3 });
const final = await s2.finalChatCompletion();
assert.strictEqual(final.choices[0].message.content.length > 0, true);

const comp = await client.completions.create({ model: "mock-model", prompt: "once upon", max_tokens: 4, stream: true });
let ctext = "";
for await (const c of comp) ctext += c.choices[0]?.text ?? "";
assert.ok(ctext.split(" ").length >= 4, `completion text '${ctext}'`);

try {
  await client.chat.completions.create({ model: "mock-model", messages: [] });
  assert.fail("empty messages accepted");
} catch (e) {
  assert.ok(e instanceof OpenAI.BadRequestError, `want BadRequestError, got ${e}`);
  assert.match(e.message, /messages/);
}
console.log("ok: openai client against", process.env.MOCK_URL);
JS
OPENAI_DIR="$cache/node_modules/openai" MOCK_URL=$url timeout 60 /usr/bin/node "$dir/client.mjs"
"$fleet" stop --dir "$dir"
if grep -l "Sanitizer\|runtime error" "$dir"/*.log >&2; then
  cat "$dir"/*.log >&2
  echo "FAIL: sanitizer report in the mock's log" >&2
  exit 1
fi
