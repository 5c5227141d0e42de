#!/usr/bin/env bash
# scripts/setup.d/35-loro.sh — the real loro-crdt 1.13.9 npm package for the
# Loro engine's golden cross-checks (datasync/engine/loro), run by the Node 24
# that 30-evolu.sh installs.
#
# Installs, idempotently, into "$FERRY_CACHE/loro" with `npm ci` from the
# package.json and package-lock.json committed under
# datasync/engine/loro/testdata/js (a stamp of the lock file skips an install
# that is up to date), then checks that the installed package's wasm is the
# one the engine embeds.
#
# Writes $FERRY_CACHE/env.d/loro.env:
#   FERRY_LORO_NODE   the Node 24 binary
#   FERRY_LORO_DIR    the install dir (node_modules/loro-crdt under it)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FERRY_CACHE=${FERRY_CACHE:-$ROOT/.cache}
SRC="$ROOT/datasync/engine/loro/testdata/js"
DIR="$FERRY_CACHE/loro"
EMBED="$ROOT/datasync/engine/loro/internal/lorowasm/loro_wasm_bg.wasm"
log() { echo "35-loro: $*" >&2; }

NODE24=$(sed -n 's/^FERRY_NODE24=//p' "$FERRY_CACHE/env.d/evolu.env" 2>/dev/null || true)
if [ -z "$NODE24" ] || [ ! -x "$NODE24" ]; then
  log "Node 24 not found: run scripts/setup.d/30-evolu.sh first"
  exit 1
fi
NODE_BIN=$(dirname "$NODE24")

want=$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ -f "$DIR/.ferry-stamp" ] && [ "$(cat "$DIR/.ferry-stamp")" = "$want" ] &&
  [ -d "$DIR/node_modules/loro-crdt" ]; then
  log "up to date"
else
  log "npm ci loro-crdt"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
  (cd "$DIR" && PATH="$NODE_BIN:$PATH" npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$DIR/.ferry-stamp"
fi

got=$(sha256sum "$DIR/node_modules/loro-crdt/nodejs/loro_wasm_bg.wasm" | cut -d' ' -f1)
if [ "$got" != "$(sha256sum "$EMBED" | cut -d' ' -f1)" ]; then
  log "installed loro-crdt wasm differs from the embedded one"
  rm -f "$DIR/.ferry-stamp"
  exit 1
fi
(cd "$DIR" && "$NODE24" -e 'const L = require("loro-crdt"); new L.LoroDoc();') || {
  log "loro-crdt does not load"
  rm -f "$DIR/.ferry-stamp"
  exit 1
}

mkdir -p "$FERRY_CACHE/env.d"
cat >"$FERRY_CACHE/env.d/loro.env" <<EOT
FERRY_LORO_NODE=$NODE24
FERRY_LORO_DIR=$DIR
EOT
log "ready: $FERRY_CACHE/env.d/loro.env"
