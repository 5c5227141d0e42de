#!/usr/bin/env bash
# scripts/setup.d/40-postgres.sh — a real PostgreSQL for the Evolu relay's
# Postgres tests (evolu/relay, evolu/internal/sqlstore).
#
# Installs Debian's postgresql package when no server binaries are found,
# then runs its own cluster, idempotently:
#
#   $FERRY_CACHE/postgres/data   the cluster (initdb, trust auth on loopback)
#   $FERRY_CACHE/postgres/log    the server log
#
# (in /var/tmp/ferry-postgres instead when the postgres user cannot reach
# $FERRY_CACHE, e.g. a checkout under /root)
# listening on 127.0.0.1:$FERRY_POSTGRES_PORT (default 55432, not the default
# 5432) with its socket in /tmp/ferry-postgres. Re-running it keeps a running
# server, restarts a stopped one (a stale postmaster.pid after a crash is
# handled by pg_ctl), and re-creates a cluster whose data directory is
# damaged. The server runs as the postgres system user when we are root
# (PostgreSQL refuses to run as root).
#
# Writes $FERRY_CACHE/env.d/postgres.env:
#   FERRY_POSTGRES_DSN   postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#                        (tests create and drop their own databases in it)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FERRY_CACHE=${FERRY_CACHE:-$ROOT/.cache}
PORT=${FERRY_POSTGRES_PORT:-55432}
DIR="$FERRY_CACHE/postgres"
DATA="$DIR/data"
SOCK=/tmp/ferry-postgres
mkdir -p "$DIR" "$FERRY_CACHE/env.d"

log() { echo "40-postgres: $*" >&2; }

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

BIN=$(bindir)
if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
	if [ "$(id -u)" != 0 ]; then
		log "PostgreSQL is not installed and we are not root: apt-get install postgresql"
		exit 1
	fi
	log "installing postgresql from Debian"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q postgresql >/dev/null 2>&1 || {
		apt-get update -q >/dev/null
		apt-get install -y -q postgresql >/dev/null
	}
	BIN=$(bindir)
fi

# as_pg runs a command as the cluster's owner.
if [ "$(id -u)" = 0 ]; then
	OWNER=postgres
	as_pg() { runuser -u postgres -- "$@"; }
else
	OWNER=$(id -un)
	as_pg() { "$@"; }
fi

mkdir -p "$SOCK"
chown "$OWNER" "$DIR" "$SOCK"
if ! as_pg test -w "$DIR"; then
	# The server's user cannot reach $FERRY_CACHE (a parent directory such as
	# /root is private): keep the cluster where it can.
	DIR=/var/tmp/ferry-postgres
	DATA="$DIR/data"
	mkdir -p "$DIR"
	chown "$OWNER" "$DIR"
	log "$FERRY_CACHE is not reachable by $OWNER; the cluster lives in $DIR"
fi

running() { as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

ready() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -t 2; }

if ! running; then
	if [ ! -s "$DATA/PG_VERSION" ]; then
		log "initdb $DATA"
		rm -rf "$DATA"
		mkdir -p "$DATA"
		chown "$OWNER" "$DATA"
		as_pg "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --no-instructions >/dev/null
	fi
	log "starting PostgreSQL on 127.0.0.1:$PORT"
	touch "$DIR/log"
	chown "$OWNER" "$DIR/log"
	if ! as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DIR/log" -w -t 60 \
		-o "-p $PORT -c listen_addresses=127.0.0.1 -k $SOCK -c max_connections=200 -c shared_buffers=128MB" start >/dev/null; then
		log "start failed; last log lines:"
		tail -n 20 "$DIR/log" >&2 || true
		exit 1
	fi
fi

for _ in $(seq 1 60); do
	ready && break
	sleep 0.5
done
if ! ready; then
	log "PostgreSQL does not answer on 127.0.0.1:$PORT"
	exit 1
fi

DSN="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
"$BIN/psql" -q -X -d "$DSN" -c 'select 1' >/dev/null
printf 'FERRY_POSTGRES_DSN=%s\n' "$DSN" >"$FERRY_CACHE/env.d/postgres.env"
log "ready: $DSN"
