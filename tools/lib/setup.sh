# tools/lib/setup.sh — shared set-up for tests/run and tools/demo (sourced).
#
# Installs the Debian packages switchyard needs (only those missing), then
# configures and builds into build/ (and, when asked, the ASan/UBSan build into
# build-asan/). Idempotent: a second run installs nothing and rebuilds only
# what changed. Needs root (or sudo) only when a package is missing.

SY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Build tools, libraries (DESIGN.md §6), and what tests and the demo run
# (scdoc: the man pages; man-db: systemd-analyze verify checks them; nodejs: the openai npm client test; it needs npm, which NodeSource's nodejs
# ships and Debian packages separately as `npm`).
SY_DEB_PACKAGES=(
  build-essential meson ninja-build pkg-config
  libh2o-evloop-dev libssl-dev libzmq3-dev libmsgpack-dev liburcu-dev
  check libyajl-dev libjansson-dev libyaml-dev libxxhash-dev
  libcurl4-openssl-dev libonig-dev libutf8proc-dev libsystemd-dev
  systemd scdoc man-db python3 python3-msgpack python3-zmq python3-jinja2 python3-h2 nodejs curl jq procps util-linux
)

sy_log() { printf '[setup] %s\n' "$*" >&2; }

sy_install_packages() {
  local missing=() p
  for p in "${SY_DEB_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    sy_log "Debian packages: all present"
    return 0
  fi
  sy_log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q || sy_log "apt-get update failed; trying the cached lists"
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# sy_build DIR [meson setup args...] — configure once, then (re)build.
sy_build() {
  local dir=$1
  shift
  if [ ! -f "$SY_ROOT/$dir/build.ninja" ]; then
    sy_log "configuring $dir $*"
    meson setup "$SY_ROOT/$dir" "$SY_ROOT" "$@" >/dev/null
  fi
  sy_log "building $dir"
  meson compile -C "$SY_ROOT/$dir"
}

sy_setup() {
  sy_install_packages
  sy_build build
}

sy_setup_asan() {
  sy_build build-asan -Db_sanitize=address,undefined -Dbench=false -Dbuildtype=debug
}
