#!/usr/bin/env bash
# systemd_verify.sh UNIT...
#   `systemd-analyze verify --man=no` every unit built into build/systemd
#   (their ExecStart= point at the built binaries).
# systemd_verify.sh --install BUILDDIR
#   `meson install` BUILDDIR into a scratch DESTDIR root, then check the
#   install: the units (under <prefix>/lib/systemd/system) read
#   /etc/switchyard/switchyard.yaml, the example configuration is installed
#   and passes --check-config of both installed daemons, the Grafana
#   dashboard is installed, the mock engine is
#   under <libexecdir>/switchyard and not in <bindir>, every Documentation=
#   man page is installed, and `systemd-analyze verify --root=ROOT` (man
#   pages checked: no --man=no, MANPATH = the root's man directory) is clean.
# Fails on any warning or error systemd prints about our units.
set -euo pipefail
[ $# -gt 0 ] || { echo "no units given" >&2; exit 2; }
command -v systemd-analyze >/dev/null || { echo "systemd-analyze missing (package systemd)" >&2; exit 1; }

# verify_clean OUT UNIT...: any line naming one of our units is a failure
# (verify exits 0 on some warnings).
verify_clean() {
  local out=$1 u bad=0
  shift
  for u in "$@"; do
    if grep -F "$(basename "$u")" <<<"$out" >/dev/null; then bad=1; fi
  done
  echo "$out"
  if [ $bad -ne 0 ]; then echo "systemd-analyze verify reported problems" >&2; exit 1; fi
}

if [ "$1" != "--install" ]; then
  out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$@" 2>&1) || { echo "$out"; exit 1; }
  verify_clean "$out" "$@"
  echo "verified: $*"
  exit 0
fi

build=${2:?usage: $0 --install BUILDDIR}
command -v man >/dev/null || { echo "man missing (package man-db)" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --no-rebuild --quiet --destdir "$root" >"$root.log" 2>&1 ||
  { cat "$root.log"; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# Directories of the configured build (absolute, under the prefix).
dirs=$(meson introspect --buildoptions "$build" | /usr/bin/python3 -c '
import json, os, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
p = o["prefix"]
for k in ("bindir", "libexecdir", "mandir", "datadir"):
    print(k, os.path.join(p, o[k]))
print("prefix", p)
print("configdir", o["configdir"])')
get() { awk -v k="$1" '$1 == k {print $2}' <<<"$dirs"; }
prefix=$(get prefix); bindir=$(get bindir); libexecdir=$(get libexecdir)
mandir=$(get mandir); datadir=$(get datadir); configdir=$(get configdir)
unitdir=$prefix/lib/systemd/system

fail() { echo "FAIL: $*" >&2; exit 1; }

# The units read the configuration from /etc/switchyard (default configdir).
units=()
for u in switchyard-statebus.service switchyard-router.service switchyard-router.socket switchyard.target; do
  [ -f "$root$unitdir/$u" ] || fail "$unitdir/$u not installed"
  units+=("$root$unitdir/$u")
done
for u in switchyard-statebus.service switchyard-router.service; do
  grep -qx "ExecStart=$bindir/${u%.service} --config $configdir/switchyard.yaml" "$root$unitdir/$u" ||
    fail "$u: ExecStart= does not read $configdir/switchyard.yaml: $(grep ExecStart= "$root$unitdir/$u")"
done
[ "$configdir" = /etc/switchyard ] || echo "note: configdir is $configdir (default /etc/switchyard)"

# The example configuration, checked by both installed daemons.
example=$root$datadir/doc/switchyard/switchyard.yaml.example
[ -f "$example" ] || fail "example configuration not installed at $datadir/doc/switchyard"
"$root$bindir/switchyard-router" --config "$example" --check-config ||
  fail "the installed router refuses the example configuration"
"$root$bindir/switchyard-statebus" --config "$example" --check-config ||
  fail "the installed statebus refuses the example configuration"

/usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
  "$root$datadir/doc/switchyard/grafana/switchyard.json" || fail "Grafana dashboard not installed"

# The mock engine is a test tool: libexec, not bin.
[ -x "$root$libexecdir/switchyard/switchyard-mock-engine" ] ||
  fail "switchyard-mock-engine not under $libexecdir/switchyard"
[ ! -e "$root$bindir/switchyard-mock-engine" ] || fail "switchyard-mock-engine installed in $bindir"
"$root$libexecdir/switchyard/switchyard-mock-engine" --version >/dev/null

# Every man page a unit names is installed.
n=0
for page in $(grep -ho 'man:[^ ]*' "${units[@]}" | sort -u); do
  p=${page#man:}; name=${p%(*}; sec=${p#*(}; sec=${sec%)}
  [ -s "$root$mandir/man$sec/$name.$sec" ] || fail "$page named by a unit is not installed"
  n=$((n + 1))
done
[ "$n" -ge 2 ] || fail "the units name $n man pages"
for p in man8/switchyard-router.8 man8/switchyard-statebus.8 man1/syctl.1 man1/switchyard-mock-engine.1; do
  [ -s "$root$mandir/$p" ] || fail "$mandir/$p not installed"
done

# systemd-analyze on the installed tree, man pages included: the root holds
# the binaries ExecStart= names, MANPATH the pages Documentation= names. The
# root also gets what an OS provides and our units rely on: the host's
# system units (sysinit.target, network-online.target, ...) and kill(1) of
# ExecReload=.
mkdir -p "$root/usr/lib/systemd" "$root/usr/bin"
cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
[ -e "$root/bin" ] || ln -s usr/bin "$root/bin"
cp "$(readlink -f /bin/kill)" "$root/usr/bin/kill"
out=$(MANPATH=$root$mandir SYSTEMD_LOG_LEVEL=warning \
      systemd-analyze verify --root="$root" "${units[@]}" 2>&1) || { echo "$out"; exit 1; }
verify_clean "$out" "${units[@]}"
echo "systemd_verify --install: OK (${#units[@]} units under $unitdir, $n man pages, configdir $configdir)"
