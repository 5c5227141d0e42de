// Package jmaphub is the JMAP binding of the Tandem hub store (§10.2,
// RFC 8620 and RFC 8621). [Store] implements hub.Store on one JMAP account.
//
// Operation by operation (§10.2):
//
//   - ensureFolder: Mailbox/query name "Tandem" + Mailbox/get; the mailbox
//     named exactly Tandem with no parent, else the one directly under the
//     inbox; else Mailbox/set create at top level, and on any refusal query
//     again (sibling names are unique, RFC 8621 §2).
//   - append: Email/set create in the Tandem mailbox with $seen, the
//     Tandem-Version and Tandem-Channel header fields and the §10.4 body as a
//     text/plain body value; Append batches to maxObjectsInSet
//     and maxSizeRequest.
//   - changes: Email/changes while hasMoreChanges, then Email/get of the
//     created and updated ids (mailboxIds and the channel header): a move is
//     an update. Full resync (Email/query inMailbox, anchor-paged) on a nil
//     cursor, cannotCalculateChanges or invalidArguments. The cursor holds
//     the Email state and the ids already reported (see cursor.go).
//   - fetch: Email/get with fetchTextBodyValues; on isEncodingProblem (or a
//     truncated value) the raw message is downloaded by blobId and read as an
//     IMAP reader reads it (hub.ParseMessage).
//   - destroy: Email/set destroy, batched.
//   - watch: EventSource (types=Email, closeafter=no, ping=60), reconnecting
//     after two silent ping intervals; a server without push (Cyrus 3.6 on
//     Debian answers 204) is polled with Email/changes.
//
// The binding uses net/http and encoding/json: JMAP is JSON over HTTP, and
// no maintained Go JMAP client covers EventSource and the error cases this
// binding must handle. Written by hand: the JMAP request/response envelope,
// RFC 6570 level-1 URL templates, and a small text/event-stream parser.
//
// Every server answer the binding cannot use (invalid JSON, a body that is
// not a JMAP Response, a missing or unexpected method response, a
// malformed event) is a *hub.ProtocolError; a method error is a
// *MethodError (serverFail and serverUnavailable also match
// hub.ErrUnavailable); an HTTP failure an *HTTPError (5xx and 429 also
// match hub.ErrUnavailable). Those answers that the server failed for now
// are tried again with backoff within the call's context
// (docs/decisions/tandem-hub-transient.md). A transport failure, a body cut short or a request
// past Config.RequestTimeout is a *hub.UnavailableError. None of them
// changes a caller's cursor, which is only ever returned, never kept. A
// cursor names its server, account and mailbox; another's is a full
// resync from nothing (docs/decisions/tandem-hub-cursor-identity.md).
//
// Decisions: docs/decisions/tandem-hub-jmap-*.md.
package jmaphub
