// Package imaphub is the IMAP binding of the Tandem hub store (§10.3),
// tested against a real Dovecot.
//
// Operations, as §10.3 gives them:
//
//   - Login: LOGIN, or AUTHENTICATE PLAIN where the server disables LOGIN,
//     over implicit TLS (port 993) or STARTTLS (port 143), Config.Security;
//     plaintext only to a loopback test server.
//   - EnsureFolder: NAMESPACE for the personal prefix, LIST "" <prefix>Tandem,
//     CREATE if missing; NO [ALREADYEXISTS] is success.
//   - Append: APPEND <prefix>Tandem (\Seen) {literal} with the §10.4 message;
//     the id comes from UIDPLUS's APPENDUID.
//   - Changes: SELECT, then removals by QRESYNC's VANISHED (EARLIER) when
//     the server has QRESYNC (ENABLE QRESYNC right after login) and the
//     cursor has a mod-sequence, else by comparing UID SEARCH ALL with the
//     cursor's UID set; then new messages by UID FETCH <last+1>:* (UID
//     BODY.PEEK[HEADER.FIELDS (Tandem-Channel …)]), ignoring a returned UID
//     below the range. A UIDVALIDITY change is a full resync. The same
//     command also asks for the header fields Fetch needs (Tandem-Version,
//     Content-Type, Content-Transfer-Encoding), which the Store keeps.
//   - Fetch: UID FETCH (BODY.PEEK[HEADER.FIELDS (…)] BODY.PEEK[TEXT]), then
//     the three reading steps of §10.4 (package hub); for a message whose
//     header fields Changes has kept, UID FETCH (BODY.PEEK[TEXT]) alone
//     (docs/decisions/tandem-hub-imap-header-cache.md).
//   - Destroy: UID STORE +FLAGS.SILENT (\Deleted), then UID EXPUNGE.
//   - Watch: IDLE on its own connection; every 4 minutes DONE, SELECT again
//     (a deleted folder ends Watch with hub.ErrNoFolder), IDLE again.
//
// Every wait for the server has a deadline (Config.ReplyTimeout); a failed
// or silent connection is a *hub.UnavailableError, an unusable answer a
// *hub.ProtocolError (docs/decisions/tandem-hub-errors.md,
// docs/decisions/tandem-hub-imap-watch-deadlines.md). A NO whose code
// says the server failed for now (SERVERBUG, UNAVAILABLE, INUSE, LIMIT)
// matches hub.ErrUnavailable, never a missing folder or a refused login,
// and the call is tried again with backoff within its context
// (docs/decisions/tandem-hub-transient.md). Logins and appends are taken
// from a hub.RateBudget (docs/hub-providers.md).
//
// A command connection is kept between calls. When the server has closed
// it meanwhile (idle logout, restart), an idempotent operation (EnsureFolder,
// Changes, Fetch, Destroy), or an Append whose message was not yet sent,
// runs once more on a fresh connection; anything else is returned.
//
// Ids are "<UIDVALIDITY>.<UID>". The cursor carries the identity of what it
// counts (server, user, folder, MAILBOXID, UIDVALIDITY), HIGHESTMODSEQ, the
// last UID seen and the set of UIDs reported as added, so a cursor alone
// (after a restart, on another connection) is enough to compute changes,
// and a cursor of another account or folder is a full resync from nothing
// (docs/decisions/tandem-hub-cursor-identity.md).
//
// # Why a small IMAP client of its own
//
// github.com/emersion/go-imap/v2 (the obvious library) has no QRESYNC in its
// client: it cannot send SELECT … (QRESYNC (…)) nor report VANISHED
// (EARLIER), and it has no way to send a raw command on a connection it
// manages. Running go-imap for most commands plus a second, raw connection
// for QRESYNC would double the connections and still need a response parser
// for the raw one. The binding needs only ten commands, so this package
// speaks them itself (wire.go is the response reader, conn.go the command
// loop), which also gives it control of what a hostile or broken server can
// do: lines and literals are bounded, a message literal over the limit is
// read past and reported for that message alone, and any malformed or
// truncated answer is a *hub.ProtocolError that breaks only the connection
// (re-dialled on the next call), never the caller's cursor. See
// docs/decisions/tandem-hub-imap-client.md.
package imaphub
