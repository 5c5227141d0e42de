#!/usr/bin/env bash
# scripts/setup.d/10-dovecot.sh — install and start a loopback-only Dovecot
# 2.3 for the hub tests (tandem/hub/imaphub).
#
#   127.0.0.1:1143  IMAP with CONDSTORE/QRESYNC (Dovecot's default capabilities),
#                   and STARTTLS with a self-signed certificate for localhost and
#                   127.0.0.1 made here (plaintext LOGIN stays allowed: test only)
#   127.0.0.1:1993  the same instance with implicit TLS (same certificate)
#   127.0.0.1:1144  the same mail store, served by a second Dovecot instance
#                   whose imap_capability leaves out CONDSTORE and QRESYNC (so
#                   the UID SEARCH ALL path of §10.3 runs against a real
#                   server) and whose personal namespace has the prefix
#                   "INBOX." with separator "." (as Courier-style hosts do):
#                   its INBOX.Tandem is the other instance's Tandem; it also
#                   leaves out MOVE and UNSELECT, which §10.3 does not require
#
# Idempotent: instances started by an earlier run (found by their pid files)
# are stopped, the state directory "<root>/mail/dovecot" is recreated empty,
# and fresh instances start with the test users below. <root> is
# $FERRY_CACHE, or a directory under /var/tmp when the mail user could not
# traverse the checkout's parents (mail-state.bash). The variables the tests
# read go to "$FERRY_CACHE/env.d/dovecot.env".
#
# Packages: dovecot-imapd Conflicts with cyrus-imapd (both Provide
# imap-server). This script installs only dovecot-imapd; 20-cyrus.sh never
# installs cyrus-imapd (it unpacks it privately), so the order doesn't matter.
set -euo pipefail
cd "$(dirname "$0")/../.."
export FERRY_CACHE=${FERRY_CACHE:-$PWD/.cache}
export DEBIAN_FRONTEND=noninteractive

. scripts/setup.d/mail-state.bash
MAILROOT=$(mail_root "$FERRY_CACHE")
USERS="alice bob carol dave erin frank grace heidi ivan judy ken quinn amber bruno chloe dmitri elena felix mallory oscar peggy victor walter trent uma xena yara hubtrent"   # password: <user>pw; spares for parallel test packages (mallory..yara, hubtrent: hub fault tests)
D=$MAILROOT/mail/dovecot
P1=${FERRY_DOVECOT_PORT:-1143} P2=${FERRY_DOVECOT_PLAIN_PORT:-1144} PT=${FERRY_DOVECOT_TLS_PORT:-1993}   # other ports: a second set of instances (tests of this script)
MAILUSER=tandemhub
APT=(apt-get -qq -o DPkg::Lock::Timeout=600)

# ---- packages ---------------------------------------------------------------
# openssl makes the test certificate.
if ! dpkg -s dovecot-imapd openssl >/dev/null 2>&1; then
  "${APT[@]}" install -y --no-install-recommends dovecot-imapd openssl >/dev/null 2>&1 ||
    { "${APT[@]}" update; "${APT[@]}" install -y --no-install-recommends dovecot-imapd openssl >/dev/null; }
fi
# The package's own instance (started by its postinst where an init system
# runs) would hold port 143; ours don't use it, and we leave it alone.

# ---- stop earlier instances -------------------------------------------------
stop_instance() { # pidfile
  [ -s "$1" ] || return 0
  local pid; pid=$(cat "$1")
  if kill -0 "$pid" 2>/dev/null && grep -q dovecot "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
}
for old in "$D" "$FERRY_CACHE/mail/dovecot"; do   # the root may have moved since
  stop_instance "$old/qresync/run/master.pid"
  stop_instance "$old/plain/run/master.pid"
done
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in $P1 $P2 $PT; do
  for _ in $(seq 1 100); do port_busy "$port" || break; sleep 0.1; done
  if port_busy "$port"; then echo "10-dovecot.sh: port $port is taken by another process" >&2; exit 1; fi
done

# ---- configuration ----------------------------------------------------------
id -u "$MAILUSER" >/dev/null 2>&1 ||
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$MAILUSER"
rm -rf "$D"; mkdir -p "$D/mail"; chmod 755 "$MAILROOT" "$MAILROOT/mail" "$D"
chown "$MAILUSER:$MAILUSER" "$D/mail"

# A self-signed certificate for STARTTLS and implicit TLS (the tests trust
# it explicitly; a client with the system roots must refuse it).
mkdir -p "$D/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
  -keyout "$D/tls/key.pem" -out "$D/tls/cert.pem" 2>/dev/null
chmod 600 "$D/tls/key.pem"; chmod 644 "$D/tls/cert.pem"
: > "$D/passwd"
for u in $USERS; do echo "$u:{PLAIN}${u}pw" >> "$D/passwd"; done

write_conf() { # name port namespace-prefix separator extra-settings [imaps-port]
  local dir=$D/$1 ssl=no
  [ -n "${6:-}" ] && ssl=yes
  mkdir -p "$dir"
  cat > "$dir/dovecot.conf" <<CONF
base_dir = $dir/run
state_dir = $dir/state
log_path = $dir/dovecot.log
instance_name = ferry-dovecot-$1
protocols = imap
listen = 127.0.0.1
ssl = $ssl
${6:+ssl_cert = <$D/tls/cert.pem}
${6:+ssl_key = <$D/tls/key.pem}
disable_plaintext_auth = no
auth_mechanisms = plain login
first_valid_uid = 1
mail_location = maildir:$D/mail/%u/Maildir
mail_fsync = never
mail_max_userip_connections = 200
namespace inbox {
  inbox = yes
  prefix = $3
  separator = $4
}
passdb {
  driver = passwd-file
  args = $D/passwd
}
userdb {
  driver = static
  args = uid=$MAILUSER gid=$MAILUSER home=$D/mail/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = $2
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = ${6:-0}
  }
}
${5:-}
CONF
}
write_conf qresync "$P1" "" / "" "$PT"
write_conf plain "$P2" INBOX. . "protocol imap {
  imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT SORT=DISPLAY THREAD=REFERENCES THREAD=REFS THREAD=ORDEREDSUBJECT MULTIAPPEND URL-PARTIAL CATENATE CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED I18NLEVEL=1 ESEARCH ESORT SEARCHRES WITHIN CONTEXT=SEARCH LIST-STATUS BINARY SNIPPET=FUZZY PREVIEW=FUZZY PREVIEW STATUS=SIZE SAVEDATE LITERAL+ NOTIFY SPECIAL-USE
}"

# ---- start ------------------------------------------------------------------
dovecot -c "$D/qresync/dovecot.conf"   # daemonizes; pid in run/master.pid
dovecot -c "$D/plain/dovecot.conf"

wait_greeting() { # port
  for _ in $(seq 1 100); do
    if exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null; then
      if IFS= read -r -t 2 line <&3 && [[ $line == "* OK"* ]]; then exec 3>&-; return 0; fi
      exec 3>&-
    fi
    sleep 0.05
  done
  echo "10-dovecot.sh: no IMAP greeting on 127.0.0.1:$1" >&2
  return 1
}
wait_greeting "$P1"
wait_greeting "$P2"
for _ in $(seq 1 100); do port_busy "$PT" && break; sleep 0.05; done
port_busy "$PT" || { echo "10-dovecot.sh: nothing listens on 127.0.0.1:$PT (implicit TLS)" >&2; exit 1; }

creds=""
for u in $USERS; do creds="$creds${creds:+ }$u:${u}pw"; done
mkdir -p "$FERRY_CACHE/env.d"
cat > "$FERRY_CACHE/env.d/dovecot.env" <<ENV
FERRY_DOVECOT_ADDR=127.0.0.1:$P1
FERRY_DOVECOT_PLAIN_ADDR=127.0.0.1:$P2
FERRY_DOVECOT_TLS_ADDR=127.0.0.1:$PT
FERRY_DOVECOT_CA=$D/tls/cert.pem
FERRY_DOVECOT_USERS="$creds"
ENV
echo "dovecot: 127.0.0.1:$P1 (QRESYNC, STARTTLS), 127.0.0.1:$PT (implicit TLS), 127.0.0.1:$P2 (no QRESYNC, prefix INBOX.), users: $USERS"
