#!/usr/bin/env python3
"""tests/tokenizer/jinja2_render.py — render a chat template with Python's
jinja2 set up as transformers' apply_chat_template does (what an SGLang
engine runs): ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks
and loop controls; `tojson` = json.dumps(ensure_ascii=False, indent,
separators, sort_keys); `raise_exception`. Used by goldens.mjs as the
second oracle for templates that @huggingface/jinja cannot render (e.g. the
`reject` filter of Meta's Llama 3.1 template) and to cross-check it.

stdin: {"template": str, "inputs": {...}}. stdout: the rendered text.
Exit 3 when the template raises, 4 when jinja2 is not installed.
"""
import json
import sys

try:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    sys.exit(4)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise ValueError(message)


def main():
    req = json.load(sys.stdin)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    try:
        out = env.from_string(req["template"]).render(**req["inputs"])
    except Exception as e:  # the template raised: the request is refused
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(3)
    sys.stdout.write(out)


main()
