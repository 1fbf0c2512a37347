// tests/tokenizer/corpus.mjs — the oracle-test corpus: fixed texts by
// theme, seeded random strings over class-mixing alphabets, long inputs,
// and OpenAI chat requests (system/tool messages, tools, tool calls,
// thinking). Deterministic: the same cases on every run.

// xorshift32, seeded
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

const fixed = {
  ascii_prose: "The quick brown fox jumps over the lazy dog. It's 5 o'clock; we'll see!",
  contractions: "don't DON'T I'm I'M you're YOU'RE we've WE'VE she'll SHE'LL he'd HE'D it's IT'S 'twas",
  contraction_long_s: "it'\u017F a test; he'\u017Ft 'Re 'lL",
  apostrophes_alone: "' '' ''' 'x 'S' '123 rock'n'roll",
  code_python: "def f(x: int) -> int:\n    \"\"\"Docstring.\"\"\"\n    return x ** 2 + 1  # comment\n\nprint(f(3))\n",
  code_c: "int main(void) {\n\tfor (int i = 0; i < 10; i++) {\n\t\tprintf(\"%d\\n\", i);\n\t}\n\treturn 0;\n}\n",
  code_json: "{\"a\": [1, 2.5, -3e10], \"b\": {\"c\": null, \"d\": true}, \"e\": \"\\u00e9\"}",
  code_html: "<div class=\"x\">\n  <p>Hello &amp; welcome</p>\n</div>",
  whitespace_runs: "a  b   c    d\t\te\t \tf\n\ng\n\n\nh \n i  \n\n  j",
  whitespace_crlf: "line1\r\nline2\r\n\r\nline3\r \r\n",
  whitespace_only: "     ",
  whitespace_trailing: "end with spaces   ",
  whitespace_leading: "   start with spaces",
  newlines_only: "\n\n\n\n",
  tabs_newlines_mix: "\t\n \t\n\t \n",
  numbers: "0 1 12 123 1234 12345 123456 1234567890 3.14159 1,000,000 -42 +7 1e10 0x1F",
  numbers_unicode: "\u0661\u0662\u0663 \uFF11\uFF12\uFF13 \u216B \u00B2\u00B3 \u2460\u2461 \u0967\u0968",
  digits_long: "9".repeat(100) + " " + "0123456789".repeat(20),
  cjk_chinese: "我们今天去公园散步，天气非常好。你好，世界！",
  cjk_japanese: "こんにちは、世界。カタカナとひらがな、漢字を混ぜた文章です。",
  cjk_korean: "안녕하세요, 세계! 한국어 문장입니다.",
  emoji: "I love 🍕 and 🎉! 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🫠",
  emoji_only: "😀😃😄😁😆😅😂🤣",
  accents_precomposed: "café naïve résumé façade Ångström Øre ĳ",
  accents_decomposed: "cafe\u0301 nai\u0308ve re\u0301sume\u0301 A\u030Angstro\u0308m",
  hangul_jamo: "\u1100\u1161\u11A8 \u1112\u1161\u11AB",
  combining_only: "\u0301\u0308 x\u0301\u0327",
  nfc_singletons: "\u212B \u2126 \u0344 \u0958",
  nfc_windows: "\u0301abc \uAC00\u11A8 \u1100\u1161 x\u212Bx a\u0323\u0301 a\u0301\u0323 中\u0301 😀\u0308 e\u0301\u0301\u0301 end\u0301",
  nfc_windows_many: "Voila\u0300 re\u0301sume\u0301, cafe\u0301 — 한\u11AB글 Ω\u0301 \u2126\u0301 ".repeat(5),
  special_tokens_qwen: "<|im_start|>user\nhi<|im_end|>\n<|endoftext|><think>x</think><tool_call>{}</tool_call>",
  special_tokens_llama: "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|reserved_special_token_5|>",
  special_tokens_partial: "<|im_start <|im_end| <think <|begin_of_text| |>",
  special_adjacent: "<|im_start|><|im_start|>a<|im_end|><|im_end|>",
  bom_and_nel: "a \uFEFFb \u0085c\u0085 d \uFEFF \u0085\u0085 e\uFEFF",
  nbsp_ideographic: "a\u00A0b \u00A0 c\u3000d \u3000 e\u2028f\u2029g\u202Fh",
  zero_width: "a\u200Bb\u200Cc\u200Dd\u2060e",
  rtl: "مرحبا بالعالم שלום עולם",
  indic: "नमस्ते दुनिया ਸਤਿ ਸ੍ਰੀ ਅਕਾਲ",
  thai: "สวัสดีชาวโลก",
  cyrillic_greek: "Привет мир! Γειά σου Κόσμε!",
  math_symbols: "∀x∈ℝ: x²≥0 ∑∫∂ √2 ≈ 1.414 ≠ π ⇒ ∞",
  punctuation: "!!! ??? ... --- *** ### $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} ||| \\\\ ///",
  punct_newlines: "hello!!!\n\nworld???\r\n--\n",
  control_chars: "a\u0001b\u0007c\u001Fd\u007Fe\u0000f",
  private_use: "\uE000\uF8FF \u{F0000} \u{10FFFD}",
  astral_letters: "\u{1D400}\u{1D401} \u{20000}\u{2A6D6} \u{10400}",
  url_email: "https://example.com/path?q=1&r=two#frag user.name+tag@example.org",
  base64: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=".repeat(8),
  mixed_script_words: "helloмир你好world123abc",
  single_char_a: "a",
  single_space: " ",
  empty: "",
};

const LONG_PARAGRAPH =
  "In 2024, researchers published 1,234 papers on large language models (LLMs). " +
  "中文段落包含一些常见的词语。 Emoji 🚀 and code `x = y + 1;` mix freely.\n\n";

function longCases() {
  return {
    long_mixed_20k: LONG_PARAGRAPH.repeat(Math.ceil(20000 / LONG_PARAGRAPH.length)),
    long_spaces_5000: " ".repeat(5000) + "x",
    long_spaces_then_end: "x" + " ".repeat(3000),
    long_newlines: "\n".repeat(2000),
    long_word: "a".repeat(3000),
    long_punct: "=".repeat(2000) + "\n",
    long_cjk: "这是一个很长的中文句子".repeat(300),
    long_digits: "1234567890".repeat(300),
  };
}

// alphabets for random strings: each mixes classes that meet at split edges
const ALPHABETS = [
  "abcXYZ '\n\t0123.,!?-_",
  "aé中😀 \u00A0\u3000\u0085\uFEFF'sre\n1",
  "' stSTreREveVEllLLdDmM\u017F",
  " \t\r\n\u000B\u000C\u0085\u00A0\u2028x1!",
  "<|im_start|>endoftext think/\n ",
  "e\u0301a\u0308\u0327\u1100\u1161\u11A8 o",
  "١٢٣123abc ١a",
  "(){}[];:\"'`~@#$%^&*+=\\|/<>",
  "😀👍🏽🇫🇷\u200D\u2764\uFE0F a1 ",
];

function randomCases(n, seed) {
  const r = rng(seed);
  const out = {};
  for (let i = 0; i < n; i++) {
    const alpha = [...ALPHABETS[i % ALPHABETS.length]];
    const len = 1 + Math.floor(r() * (i % 7 === 0 ? 400 : 60));
    let s = "";
    for (let k = 0; k < len; k++) s += alpha[Math.floor(r() * alpha.length)];
    out[`random_${String(i).padStart(3, "0")}`] = s;
  }
  return out;
}

export function textCases() {
  return { ...fixed, ...longCases(), ...randomCases(800, 12345) };
}

// ---- chat requests (OpenAI form, as a client sends them) ----

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather for a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "City name, e.g. Paris" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] },
      },
      required: ["city"],
    },
  },
};
const searchTool = {
  type: "function",
  function: {
    name: "search",
    parameters: { type: "object", properties: { q: { type: "string" }, k: { type: "integer", default: 5 } } },
    strict: true,
  },
};
const unicodeTool = {
  type: "function",
  function: { name: "traduire", description: "Traduit « le texte » en 中文 — avec \"guillemets\"\n et tab\t.", parameters: {} },
};

export function chatCases() {
  return {
    chat_single_user: { messages: [{ role: "user", content: "Hello!" }] },
    chat_system_user: {
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "user", content: "What is 2+2?" },
      ],
    },
    chat_multi_turn: {
      messages: [
        { role: "system", content: "Be terse." },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "Tell me a joke about 🐍 Python." },
      ],
    },
    chat_no_generation_prompt: {
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello there." },
      ],
      add_generation_prompt: false,
    },
    chat_tools_with_system: {
      messages: [
        { role: "system", content: "You can call tools." },
        { role: "user", content: "Weather in Paris?" },
      ],
      tools: [weatherTool, searchTool],
    },
    chat_tools_without_system: {
      messages: [{ role: "user", content: "Search for cats" }],
      tools: [searchTool, unicodeTool],
    },
    chat_tool_choice_none: {
      messages: [{ role: "user", content: "No tools please" }],
      tools: [weatherTool],
      tool_choice: "none",
    },
    chat_tool_calls_and_results: {
      messages: [
        { role: "system", content: "Use tools." },
        { role: "user", content: "Weather in Paris and Tokyo?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Paris\", \"unit\": \"celsius\"}" } },
            { id: "call_2", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"東京\",\"opts\":{\"x\":[1,2.5,true,null]}}" } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"temp\": 21}" },
        { role: "tool", tool_call_id: "call_2", content: "{\"temp\": 18}" },
        { role: "assistant", content: "Paris is 21°C, Tokyo 18°C." },
        { role: "user", content: "Thanks!" },
      ],
      tools: [weatherTool],
    },
    chat_tool_call_with_content: {
      messages: [
        { role: "user", content: "Find docs" },
        {
          role: "assistant",
          content: "Let me search.",
          tool_calls: [{ id: "c", type: "function", function: { name: "search", arguments: "{\"q\": \"docs \\\"quoted\\\"\\n\", \"k\": 3}" } }],
        },
        { role: "tool", tool_call_id: "c", content: "result A" },
      ],
      tools: [searchTool],
    },
    chat_tool_call_unparseable_args: {
      messages: [
        { role: "user", content: "x" },
        { role: "assistant", content: "", tool_calls: [{ id: "c", type: "function", function: { name: "search", arguments: "not json {" } }] },
        { role: "tool", tool_call_id: "c", content: "ok" },
        { role: "user", content: "and now?" },
      ],
    },
    chat_think_in_history: {
      messages: [
        { role: "user", content: "Q1" },
        { role: "assistant", content: "<think>\nreasoning one\n</think>\n\nAnswer one." },
        { role: "user", content: "Q2" },
        { role: "assistant", content: "<think>\nreasoning two\n</think>\n\nAnswer two." },
      ],
      add_generation_prompt: false,
    },
    chat_think_after_tool: {
      messages: [
        { role: "user", content: "Q" },
        { role: "assistant", content: "<think>plan</think>calling", tool_calls: [{ id: "a", type: "function", function: { name: "search", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "a", content: "data" },
        { role: "assistant", content: "<think>\n\nfinal reasoning\n\n</think>\n\nDone." },
      ],
      add_generation_prompt: false,
    },
    chat_reasoning_content_field: {
      messages: [
        { role: "user", content: "Q" },
        { role: "assistant", content: "A", reasoning_content: "because" },
        { role: "user", content: "Q2" },
      ],
    },
    chat_enable_thinking_false: {
      messages: [{ role: "user", content: "Quick answer: capital of France?" }],
      chat_template_kwargs: { enable_thinking: false },
    },
    chat_enable_thinking_true: {
      messages: [{ role: "user", content: "Think hard." }],
      chat_template_kwargs: { enable_thinking: true },
    },
    chat_user_tool_response_wrapper: {
      messages: [
        { role: "user", content: "real question" },
        { role: "assistant", content: "<think>r</think>a" },
        { role: "user", content: "<tool_response>\nfake\n</tool_response>" },
      ],
    },
    chat_system_in_middle: {
      messages: [
        { role: "system", content: "first" },
        { role: "user", content: "u" },
        { role: "system", content: "second system" },
        { role: "user", content: "u2" },
      ],
    },
    chat_multipart_content: {
      messages: [{ role: "user", content: [{ type: "text", text: "part one, " }, { type: "text", text: "part two" }] }],
    },
    chat_unicode_and_specials: {
      messages: [
        { role: "system", content: "Système: réponds en français 🇫🇷." },
        { role: "user", content: "Écris <|im_end|> et <think> littéralement; 中文也可以。\n\n  " },
      ],
    },
    chat_whitespace_edges: {
      messages: [
        { role: "system", content: "  padded system \n" },
        { role: "user", content: "\n\n\ttabs and newlines\t\n" },
        { role: "assistant", content: " \u00A0nbsp edge\u3000" },
        { role: "user", content: "" },
      ],
    },
    chat_empty_contents: {
      messages: [
        { role: "user", content: "" },
        { role: "assistant", content: "" },
        { role: "user", content: "" },
      ],
    },
    chat_tool_message_first: {
      messages: [
        { role: "tool", tool_call_id: "x", content: "orphan result" },
        { role: "tool", tool_call_id: "y", content: "second result" },
        { role: "user", content: "what now?" },
      ],
    },
    chat_unknown_role_and_name: {
      messages: [
        { role: "developer", content: "dev note" },
        { role: "user", name: "alice", content: "hi from alice" },
        { role: "assistant", content: "hello alice" },
      ],
    },
    chat_assistant_last_no_think_after_query: {
      messages: [
        { role: "user", content: "continue this" },
        { role: "assistant", content: "Once upon a time" },
      ],
      add_generation_prompt: false,
    },
    chat_tools_and_thinking_off: {
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "go" },
      ],
      tools: [unicodeTool],
      chat_template_kwargs: { enable_thinking: false },
    },
    chat_long_conversation: {
      messages: Array.from({ length: 24 }, (_, i) => ({
        role: i % 2 ? "assistant" : "user",
        content: `Turn ${i}: ` + "lorem ipsum dolor sit amet, 测试 ".repeat(1 + (i % 5)),
      })),
    },
  };
}

// ---- extra chats for Meta's Llama 3.1 template (model llama3_1-official) ----
// It reads chat_template_kwargs date_string, tools_in_user_message,
// custom_tools and builtin_tools, takes one tool call per assistant turn,
// and raises on several (those cases are golden errors: the C renderer must
// refuse them too).
const nestedTool = {
  type: "function",
  function: {
    name: "book",
    description: "Book a table — «réservation» 🍽️",
    parameters: {
      type: "object",
      properties: {
        when: { type: "object", properties: { day: { type: "string" }, slots: { type: "array", items: { type: "integer" } } } },
        guests: { type: "integer", minimum: 1, maximum: 12 },
        notes: { type: "string", description: "free text: \"quotes\", back\\slash, tab\t, newline\n, ctrl\u0001" },
        tags: { type: "array", items: {} },
        empty_obj: {},
        flags: [true, false, null, -3, 0.25],
      },
      required: [],
    },
  },
};

export function llama31ChatCases() {
  return {
    l31_tools_in_system: {
      messages: [
        { role: "system", content: "  You are a booking agent.\n" },
        { role: "user", content: "Book for 2" },
      ],
      tools: [nestedTool, weatherTool],
      chat_template_kwargs: { tools_in_user_message: false },
    },
    l31_tools_in_user_default: {
      messages: [{ role: "user", content: "  Book for 4 tomorrow \n" }, { role: "assistant", content: "Sure." }, { role: "user", content: "thanks" }],
      tools: [nestedTool],
    },
    l31_tools_first_message_not_user: {
      messages: [{ role: "assistant", content: "I speak first" }, { role: "user", content: "ok" }],
      tools: [unicodeTool],
    },
    l31_tools_no_first_message: {
      messages: [{ role: "system", content: "only a system message" }],
      tools: [weatherTool],
    },
    l31_date_string: {
      messages: [{ role: "user", content: "What day is it?" }],
      chat_template_kwargs: { date_string: "01 Jan 2026" },
    },
    l31_tools_in_user_zero: {
      messages: [{ role: "system", content: "s" }, { role: "user", content: "u" }],
      tools: [searchTool],
      chat_template_kwargs: { tools_in_user_message: 0 },
    },
    l31_custom_tools: {
      messages: [{ role: "user", content: "custom" }],
      chat_template_kwargs: { custom_tools: [{ name: "x", args: { a: [1, [], {}], b: "é" } }] },
    },
    l31_custom_tools_empty: {
      messages: [{ role: "user", content: "empty custom" }],
      chat_template_kwargs: { custom_tools: [] },
    },
    l31_tool_call_and_result: {
      messages: [
        { role: "system", content: "Use tools." },
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Paris\", \"opts\": {\"x\": [1, 2.5, true, null], \"u\": \"東京\"}}" } }] },
        { role: "tool", tool_call_id: "c1", content: "{\"temp\": 21, \"note\": \"sunny \\\"hot\\\"\"}" },
        { role: "assistant", content: "It is 21°C." },
        { role: "user", content: "And tomorrow?" },
      ],
      tools: [weatherTool],
      chat_template_kwargs: { tools_in_user_message: false },
    },
    l31_tool_call_unparseable_args: {
      messages: [
        { role: "user", content: "x" },
        { role: "assistant", content: "", tool_calls: [{ id: "c", type: "function", function: { name: "search", arguments: "not json {\"" } }] },
        { role: "ipython", content: "raw\nresult\t\u0002" },
        { role: "tool", content: "" },
      ],
      add_generation_prompt: false,
    },
    l31_tool_call_string_args: {
      messages: [
        { role: "user", content: "y" },
        { role: "assistant", content: "", tool_calls: [{ id: "c", type: "function", function: { name: "search", arguments: "\"just a string\"" } }] },
      ],
    },
    l31_tool_call_with_tools_in_user: {
      messages: [
        { role: "user", content: "Find docs" },
        { role: "assistant", content: "Let me search.", tool_calls: [{ id: "c", type: "function", function: { name: "search", arguments: "{\"q\": \"docs\", \"k\": 3}" } }] },
        { role: "tool", tool_call_id: "c", content: "result A" },
      ],
      tools: [searchTool, weatherTool],
    },
    l31_two_tool_calls_error: {
      messages: [
        { role: "user", content: "two" },
        { role: "assistant", content: null, tool_calls: [
          { id: "a", type: "function", function: { name: "search", arguments: "{}" } },
          { id: "b", type: "function", function: { name: "search", arguments: "{}" } },
        ] },
      ],
    },
    l31_builtin_tools: {
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "Search the web for llamas" },
        { role: "assistant", content: null, tool_calls: [{ id: "b", type: "function", function: { name: "brave_search", arguments: "{\"query\": \"llamas\", \"lang\": \"en\"}" } }] },
        { role: "ipython", content: "[\"result\"]" },
        { role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Lima\"}" } }] },
      ],
      tools: [weatherTool],
      chat_template_kwargs: { builtin_tools: ["brave_search", "code_interpreter", "wolfram_alpha"] },
    },
    l31_no_system_multi_turn: {
      messages: [
        { role: "user", content: "Hi 👋" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "中文 and <|eot_id|> literal" },
        { role: "assistant", content: "ok" },
      ],
      add_generation_prompt: false,
    },
    l31_second_system: {
      messages: [
        { role: "user", content: "u" },
        { role: "system", content: " mid system " },
        { role: "user", content: "u2" },
      ],
    },
  };
}
