#!/usr/bin/env bash
# scripts/setup.d/20-cyrus.sh — install and start a loopback-only Cyrus IMAP
# 3.6 with JMAP for the hub tests (tandem/hub/jmaphub).
#
#   IMAP  127.0.0.1:2143   (plaintext LOGIN/PLAIN, test only)
#   JMAP  http://127.0.0.1:8008/.well-known/jmap
#
# Idempotent: a Cyrus started by an earlier run (found by its pid file) is
# stopped, its state directory "<root>/mail/cyrus" is recreated empty,
# and a fresh instance is started with the test users below, each with an
# INBOX. The variables the tests read go to "$FERRY_CACHE/env.d/cyrus.env".
#
# Packages: cyrus-imapd Conflicts with dovecot-imapd (both Provide
# imap-server), which 10-dovecot.sh installs. So cyrus-common (master, tools),
# cyrus-caldav (httpd, which serves JMAP) and sasl2-bin come from apt, and
# cyrus-imapd (imapd, idled) is only unpacked with `apt-get download` +
# `dpkg -x` into "<root>/cyrus-imapd-root", never installed. The two
# scripts therefore work in either order.
#
# <root> is $FERRY_CACHE, or a directory under /var/tmp when the cyrus user
# could not traverse the checkout's parents (mail-state.bash): Cyrus reads
# its configuration and runs its binaries as that user.
set -euo pipefail
cd "$(dirname "$0")/../.."
export FERRY_CACHE=${FERRY_CACHE:-$PWD/.cache}
export DEBIAN_FRONTEND=noninteractive

. scripts/setup.d/mail-state.bash
MAILROOT=$(mail_root "$FERRY_CACHE")
USERS="alice bob carol dave erin frank grace heidi ivan judy ken quinn amber bruno chloe dmitri elena felix mallory oscar peggy victor walter trent uma xena yara hubtrent"   # spares for parallel test packages (mallory..yara, hubtrent: hub fault tests)
IMAP_PORT=${FERRY_CYRUS_IMAP_PORT:-2143}   # other ports: a second instance (tests of this script)
HTTP_PORT=${FERRY_CYRUS_HTTP_PORT:-8008}
C=$MAILROOT/mail/cyrus
CYRX=$MAILROOT/cyrus-imapd-root
APT=(apt-get -qq -o DPkg::Lock::Timeout=600)

# ---- packages ---------------------------------------------------------------
updated=no
apt_update_once() { [ "$updated" = yes ] || { "${APT[@]}" update; updated=yes; }; }
if ! dpkg -s cyrus-common cyrus-caldav sasl2-bin curl >/dev/null 2>&1; then
  "${APT[@]}" install -y --no-install-recommends cyrus-common cyrus-caldav sasl2-bin curl >/dev/null 2>&1 ||
    { apt_update_once; "${APT[@]}" install -y --no-install-recommends cyrus-common cyrus-caldav sasl2-bin curl >/dev/null; }
fi
if [ ! -x "$CYRX/usr/lib/cyrus/bin/imapd" ]; then
  dl=$(mktemp -d)
  (cd "$dl" && { apt-get -qq download cyrus-imapd 2>/dev/null || { apt_update_once; apt-get -qq download cyrus-imapd; }; }) ||
    (cd "$dl" && "${APT[@]}" update && apt-get -qq download cyrus-imapd)
  rm -rf "$CYRX"; mkdir -p "$CYRX"
  dpkg -x "$dl"/cyrus-imapd_*.deb "$CYRX"
  rm -rf "$dl"
fi
B=$CYRX/usr/lib/cyrus/bin
CB=/usr/lib/cyrus/bin

# ---- stop an earlier instance -----------------------------------------------
for pidfile in "$C/master.pid" "$FERRY_CACHE/mail/cyrus/master.pid"; do   # the root may have moved since
  [ -s "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null && grep -q cyrus "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
done
# Children of the old master may still hold the ports for a moment.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 1 100); do
  port_busy $IMAP_PORT || port_busy $HTTP_PORT || break
  sleep 0.1
done
if port_busy $IMAP_PORT || port_busy $HTTP_PORT; then
  echo "20-cyrus.sh: port $IMAP_PORT or $HTTP_PORT is taken by something this script did not start" >&2
  exit 1
fi

# ---- configuration ----------------------------------------------------------
mkdir -p "$MAILROOT/mail"; chmod 755 "$MAILROOT" "$MAILROOT/mail"   # the cyrus user must traverse them
rm -rf "$C"
mkdir -p "$C"/conf/{db,socket,log,sieve,proc,lock} "$C/spool" "$C/run/socket"
cat > "$C/imapd.conf" <<CONF
configdirectory: $C/conf
defaultpartition: default
partition-default: $C/spool
lmtpsocket: $C/run/socket/lmtp
idlesocket: $C/run/socket/idle
notifysocket: $C/run/socket/notify
servername: localhost
admins: admin
allowplaintext: yes
sasl_pwcheck_method: auxprop
sasl_auxprop_plugin: sasldb
sasl_sasldb_path: $C/sasldb2
sasl_mech_list: PLAIN LOGIN
httpmodules: jmap
httpallowcompress: no
conversations: yes
conversations_db: twoskip
altnamespace: yes
unixhierarchysep: yes
virtdomains: off
CONF
cat > "$C/cyrus.conf" <<CONF
START {
  recover cmd="$CB/ctl_cyrusdb -C $C/imapd.conf -r"
}
SERVICES {
  imap cmd="$B/imapd -C $C/imapd.conf" listen="127.0.0.1:$IMAP_PORT" prefork=0
  http cmd="$CB/httpd -C $C/imapd.conf" listen="127.0.0.1:$HTTP_PORT" prefork=0
}
EVENTS {
  checkpoint cmd="$CB/ctl_cyrusdb -C $C/imapd.conf -c" period=30
}
DAEMON {
  idled cmd="$B/idled -C $C/imapd.conf"
}
CONF
for u in admin $USERS; do echo "${u}pw" | saslpasswd2 -p -c -f "$C/sasldb2" -u localhost "$u"; done
chown -R cyrus:mail "$C"

# ---- start and wait ---------------------------------------------------------
"$CB/master" -d -C "$C/imapd.conf" -M "$C/cyrus.conf" -p "$C/master.pid"
greeting() {
  for _ in $(seq 1 200); do
    if { exec 3<>"/dev/tcp/127.0.0.1/$IMAP_PORT"; } 2>/dev/null; then
      if IFS= read -r -t 2 line <&3 && [[ $line == "* OK"* ]]; then exec 3>&-; return 0; fi
      exec 3>&-
    fi
    sleep 0.05
  done
  echo "20-cyrus.sh: no IMAP greeting on 127.0.0.1:$IMAP_PORT (log: $C/conf/log, syslog)" >&2
  return 1
}
greeting
# Cyrus's httpd does not create mailboxes: create each user's INBOX as admin.
for u in $USERS; do
  curl -sS --fail --user admin:adminpw "imap://127.0.0.1:$IMAP_PORT" -X "CREATE user/$u" >/dev/null
done
JMAP_URL="http://127.0.0.1:$HTTP_PORT/.well-known/jmap"
ok=no
for _ in $(seq 1 200); do
  if curl -s --fail -o /dev/null --user alice:alicepw "$JMAP_URL"; then ok=yes; break; fi
  sleep 0.05
done
[ "$ok" = yes ] || { echo "20-cyrus.sh: JMAP session at $JMAP_URL does not answer" >&2; exit 1; }

# ---- environment for the tests ----------------------------------------------
mkdir -p "$FERRY_CACHE/env.d"
creds=""
for u in $USERS; do creds="$creds${creds:+,}$u:${u}pw"; done
cat > "$FERRY_CACHE/env.d/cyrus.env" <<ENV
FERRY_CYRUS_JMAP_URL=$JMAP_URL
FERRY_CYRUS_IMAP_ADDR=127.0.0.1:$IMAP_PORT
FERRY_CYRUS_USERS=$creds
FERRY_CYRUS_USER=alice
FERRY_CYRUS_PASSWORD=alicepw
FERRY_CYRUS_ADMIN_USER=admin
FERRY_CYRUS_ADMIN_PASSWORD=adminpw
FERRY_CYRUS_MASTER_PID=$C/master.pid
ENV
echo "cyrus: master pid $(cat "$C/master.pid"), JMAP $JMAP_URL, IMAP 127.0.0.1:$IMAP_PORT"
