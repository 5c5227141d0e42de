#!/usr/bin/env bash
# scripts/setup.d/05-staticcheck.sh — install staticcheck, pinned, into
# "$FERRY_CACHE/bin" (scripts/test runs it over the whole module).
#
# The version is a module version of honnef.co/go/tools; change it here
# only, and keep the tree clean under the new one in the same commit.
# Idempotent: an installed binary of the pinned version is kept. The path
# goes to "$FERRY_CACHE/env.d/staticcheck.env" as FERRY_STATICCHECK.
set -euo pipefail
cd "$(dirname "$0")/../.."
export FERRY_CACHE=${FERRY_CACHE:-$PWD/.cache}
VERSION=v0.8.2 # staticcheck 2026.2.2
bin="$FERRY_CACHE/bin"
mkdir -p "$bin" "$FERRY_CACHE/env.d"
if ! "$bin/staticcheck" -version 2>/dev/null | grep -q "(${VERSION#v})"; then
  # Outside the module, so its go.mod is not touched.
  (cd "$bin" && GOFLAGS= GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$VERSION")
fi
"$bin/staticcheck" -version
echo "FERRY_STATICCHECK=$bin/staticcheck" > "$FERRY_CACHE/env.d/staticcheck.env"
