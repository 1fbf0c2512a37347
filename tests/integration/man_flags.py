#!/usr/bin/env python3
"""man_flags.py BINARY PAGE.scd [BINARY PAGE.scd ...]

Every long flag a binary prints with --help (and --version, which every
binary takes) appears as a flag in its man page source (docs/man/*.scd),
written `*--flag*`, so the pages cannot drift from the binaries. Also
checks that --help exits 0 and prints at least a few flags, and that the
page's NAME section names the binary.
"""
import os
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def check(binary, page):
    name = os.path.basename(binary)
    r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return [f"{name} --help exited {r.returncode}: {r.stderr.strip()}"]
    flags = set(FLAG.findall(r.stdout + r.stderr)) | {"--version", "--help"}
    if len(flags) < 5:
        return [f"{name} --help printed only {sorted(flags)}"]
    with open(page, encoding="utf-8") as f:
        src = f.read()
    # flags as the page writes them: bold, possibly with an argument after
    # a space inside or outside the asterisks
    documented = set(re.findall(r"\*(--[a-z][a-z0-9-]*)", src))
    errors = [f"{page}: {flag} (printed by {name} --help) is not documented"
              for flag in sorted(flags - documented)]
    if not re.search(r"^# NAME\n\n" + re.escape(name) + r" - ", src, re.M):
        errors.append(f"{page}: NAME section does not name {name}")
    print(f"{name}: {len(flags)} flags from --help, all in {os.path.basename(page)}"
          if not errors else f"{name}: {len(errors)} problem(s)")
    return errors


def main():
    args = sys.argv[1:]
    if len(args) < 2 or len(args) % 2:
        sys.exit("usage: man_flags.py BINARY PAGE.scd [BINARY PAGE.scd ...]")
    errors = []
    for i in range(0, len(args), 2):
        errors += check(args[i], args[i + 1])
    for e in errors:
        print("FAIL:", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
