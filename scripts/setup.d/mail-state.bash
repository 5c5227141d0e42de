# scripts/setup.d/mail-state.bash — sourced by 10-dovecot.sh and
# 20-cyrus.sh (not run on its own: scripts/test runs only *.sh): where the
# mail servers keep their state.
#
# Dovecot's mail processes run as the user tandemhub and Cyrus's as cyrus;
# both must traverse every directory above their state (and, for Cyrus, its
# unpacked binaries). A checkout under a directory those users cannot
# search (a mode-0700 home or temporary directory) would make the servers
# fail at start ("no IMAP greeting"). So the state lives under
# $FERRY_CACHE when every directory above it lets others search it, and
# otherwise under /var/tmp/ferry-mail-<hash of $FERRY_CACHE>, one per
# checkout. FERRY_MAIL_ROOT, when set, overrides the choice.
#
#   mail_root CACHE   prints the root: CACHE, or the /var/tmp directory
#   searchable DIR    succeeds when DIR and every directory above it that
#                     exists let others search (mode o+x)

searchable() {
  local d
  d=$(realpath -m "$1")
  while :; do
    if [ -e "$d" ]; then
      local mode
      mode=$(stat -c %a "$d")
      (( (8#$mode & 1) != 0 )) || return 1
    fi
    [ "$d" = / ] && return 0
    d=$(dirname "$d")
  done
}

mail_root() {
  local cache
  cache=$(realpath -m "$1")
  if [ -n "${FERRY_MAIL_ROOT:-}" ]; then
    echo "$FERRY_MAIL_ROOT"
  elif searchable "$(dirname "$cache")"; then
    echo "$cache"
  else
    echo "/var/tmp/ferry-mail-$(printf %s "$cache" | sha256sum | cut -c1-12)"
  fi
}

# The script run directly prints the root for the cache directory given
# (tests use it): bash mail-state.bash CACHE
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  mail_root "${1:?usage: mail-state.bash CACHE}"
fi
