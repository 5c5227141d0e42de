#!/usr/bin/env bash
# scripts/setup.d/50-chromium.sh — a real headless browser for the ferry app
# tests (cmd/ferry/internal/webapp), which drive it with chromedp.
#
# Installs Debian's chromium package when no Chromium is found (apt-get, as
# root), and checks that it starts headless.
#
# Writes $FERRY_CACHE/env.d/chromium.env:
#   CHROMIUM   the browser binary
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FERRY_CACHE=${FERRY_CACHE:-$ROOT/.cache}
mkdir -p "$FERRY_CACHE/env.d"

log() { echo "50-chromium: $*" >&2; }

find_chromium() {
  for b in "${CHROMIUM:-}" chromium chromium-browser google-chrome-stable google-chrome; do
    [ -n "$b" ] || continue
    if command -v "$b" >/dev/null 2>&1; then
      command -v "$b"
      return 0
    fi
  done
  return 1
}

BIN=$(find_chromium || true)
if [ -z "$BIN" ]; then
  if [ "$(id -u)" != 0 ]; then
    log "Chromium is not installed and we are not root: apt-get install chromium"
    exit 1
  fi
  log "installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  BIN=$(find_chromium)
fi

# It must start headless here (a missing library shows now, not in a test).
PROFILE=$(mktemp -d)
trap 'rm -rf "$PROFILE"' EXIT
if ! timeout 60 "$BIN" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$PROFILE" --dump-dom about:blank >/dev/null 2>"$PROFILE/err"; then
  log "$BIN does not start headless:"
  tail -n 20 "$PROFILE/err" >&2
  exit 1
fi

log "$("$BIN" --version 2>/dev/null || echo "$BIN")"
cat >"$FERRY_CACHE/env.d/chromium.env" <<ENV
CHROMIUM=$BIN
ENV
