#!/usr/bin/env bash
# scripts/setup.d/15-maddy.sh — build and start a loopback-only maddy 0.8.1
# (a mail server written in Go, with its own IMAP code: go-imap v1 and
# go-imap-sql) for the hub tests (tandem/hub/imaphub, maddy_test.go).
#
#   127.0.0.1:3143  IMAP, plaintext LOGIN allowed (test only), SQLite store
#
# maddy is built from the Go module proxy in a throwaway module under
# "$FERRY_CACHE/maddy/tool", never in Ferry's go.mod: `go get -tool` pins
# the version, the replace directives of maddy's own go.mod (its forks of
# go-imap, go-smtp and libdns-gandi, which a dependency's go.mod cannot
# impose) are copied in, and `go install` puts the binary in
# "$FERRY_CACHE/maddy/bin". A binary of the right version is reused.
#
# Idempotent: an instance started by an earlier run (found by its pid file)
# is stopped, the state directory "$FERRY_CACHE/maddy/run" is recreated
# empty, and a fresh instance starts with the test users below (password
# <user>pw; maddy makes each account at its first login). The variables the
# tests read go to "$FERRY_CACHE/env.d/maddy.env".
# Decision: docs/decisions/tandem-hub-imap-maddy.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export FERRY_CACHE=${FERRY_CACHE:-$PWD/.cache}

VERSION=v0.8.1
PORT=${FERRY_MADDY_PORT:-3143}   # another port: a second instance (tests of this script)
M=$FERRY_CACHE/maddy
BIN=$M/bin/maddy
R=$M/run-$PORT
USERS="alice bob carol mallory walter"

# ---- build --------------------------------------------------------------------
if ! { [ -x "$BIN" ] && "$BIN" version 2>/dev/null | grep -q "${VERSION#v}"; }; then
  echo "15-maddy.sh: building maddy $VERSION (module proxy)"
  rm -rf "$M/tool"; mkdir -p "$M/tool" "$M/bin"
  (
    cd "$M/tool"
    go mod init ferry-maddy-tool >/dev/null 2>&1
    go get -tool "github.com/foxcpp/maddy/cmd/maddy@$VERSION" >/dev/null
    modfile=$(go list -m -f '{{.GoMod}}' github.com/foxcpp/maddy)
    sed -nE 's/^replace +([^ ]+) *=> *([^ ]+) +([^ /]+).*/\1=\2@\3/p' "$modfile" |
      while read -r r; do go mod edit -replace "$r"; done
    go mod tidy >/dev/null 2>&1
    GOBIN=$M/bin go install github.com/foxcpp/maddy/cmd/maddy
  )
fi
"$BIN" version | grep -q "${VERSION#v}" || { echo "15-maddy.sh: $BIN is not maddy $VERSION" >&2; exit 1; }

# ---- stop an earlier instance ---------------------------------------------------
if [ -s "$R/maddy.pid" ]; then
  pid=$(cat "$R/maddy.pid")
  if kill -0 "$pid" 2>/dev/null && grep -q maddy "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
fi
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 1 100); do port_busy "$PORT" || break; sleep 0.1; done
if port_busy "$PORT"; then echo "15-maddy.sh: port $PORT is taken by another process" >&2; exit 1; fi

# ---- configuration ------------------------------------------------------------
rm -rf "$R"; mkdir -p "$R/state" "$R/runtime"
entries=""
creds=""
for u in $USERS; do
  # bcrypt cost 4: test passwords, checked at every login of a busy suite.
  h=$("$BIN" hash --bcrypt-cost 4 --password "${u}pw")
  entries+="        entry \"$u\" \"$h\""$'\n'
  creds="$creds${creds:+ }$u:${u}pw"
done
cat > "$R/maddy.conf" <<CONF
state_dir $R/state
runtime_dir $R/runtime
hostname localhost
log stderr

storage.imapsql local_mailboxes {
    driver sqlite3
    dsn imapsql.db
}

imap tcp://127.0.0.1:$PORT {
    tls off
    insecure_auth yes
    auth pass_table static {
$entries    }
    storage &local_mailboxes
}
CONF

# ---- start ------------------------------------------------------------------------
setsid "$BIN" --config "$R/maddy.conf" run >"$R/maddy.log" 2>&1 < /dev/null &
echo $! > "$R/maddy.pid"
for _ in $(seq 1 200); do
  if { exec 3<>"/dev/tcp/127.0.0.1/$PORT"; } 2>/dev/null; then
    if IFS= read -r -t 2 line <&3 && [[ $line == "* OK"* ]]; then exec 3>&-; break; fi
    exec 3>&-
  fi
  sleep 0.05
done
port_busy "$PORT" || { echo "15-maddy.sh: no IMAP greeting on 127.0.0.1:$PORT" >&2; cat "$R/maddy.log" >&2; exit 1; }

mkdir -p "$FERRY_CACHE/env.d"
cat > "$FERRY_CACHE/env.d/maddy.env" <<ENV
FERRY_MADDY_ADDR=127.0.0.1:$PORT
FERRY_MADDY_USERS="$creds"
FERRY_MADDY_PID=$R/maddy.pid
ENV
echo "maddy $VERSION: 127.0.0.1:$PORT, users: $USERS"
