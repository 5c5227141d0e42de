package hub

import (
	"context"
	"errors"
	"fmt"
)

// Folder is the name of the single folder all channels share (§10.1).
const Folder = "Tandem"

// ID names one message in one binding: an IMAP UID (with its UIDVALIDITY) or
// a JMAP Email id. It is only meaningful to the Store that returned it. A
// message's identity across bindings and devices is [Hash] of its envelope.
type ID string

// Cursor is a binding's serialized position in the folder's history. The
// zero (nil) Cursor means "before everything": Changes(nil) reports every
// message in the folder as added. A Cursor is plain bytes: store it anywhere,
// and pass it back after a process restart. A Store rejects a cursor it cannot
// read with an error matching [ErrBadCursor].
//
// A cursor carries the identity of what it counts: the server, the account,
// the folder and its validity (IMAP UIDVALIDITY, the JMAP mailbox id). A
// cursor that does not match the store it is given to (saved on another
// account, another server, or before the folder was replaced) is a full
// resync from nothing: Changes reports [Changes.Reset] and every message
// in the folder as added, never filtered by what the cursor knew
// (docs/decisions/tandem-hub-cursor-identity.md).
type Cursor []byte

// Added is a message that entered the folder: appended, or moved into it.
type Added struct {
	ID      ID
	Channel string // the Tandem-Channel value, unfolded and trimmed (§10.4)
	// Size is the stored message's size in bytes as the server reports it
	// (IMAP RFC822.SIZE, JMAP size); 0 when the binding does not know it.
	// A reader uses it to bound what one fetch downloads and to refuse a
	// message over [MaxMessage] without downloading it (§10.6).
	Size int64
}

// Changes is everything that changed in the folder since a cursor.
type Changes struct {
	// Added lists messages new to the folder since the cursor, including
	// messages moved into it. Messages whose Tandem-Channel header is absent
	// are left out: they are not Tandem messages.
	Added []Added
	// Removed lists ids that were reported as added before the cursor (or
	// earlier) and are no longer in the folder: destroyed by anyone, or moved
	// out of it. An id is never in both Added and Removed, except on a
	// Reset (below).
	Removed []ID
	// Cursor is the position after these changes. Pass it to the next call.
	Cursor Cursor
	// Reset is set when the cursor given to Changes did not count this
	// folder (another server, account or folder, or the folder's validity
	// changed): every id reported before is void. Removed then lists every
	// id the old cursor knew and must be applied before Added, which lists
	// every message in the folder; an id may be in both (ids of two
	// accounts can be equal). A caller that keeps ids should drop them all
	// on Reset.
	Reset bool
}

// Body is one fetched message.
type Body struct {
	ID      ID
	Channel string // the Tandem-Channel value, unfolded and trimmed
	// Envelope is the decoded body (§10.4 steps 1-3); nil when Err is set.
	Envelope []byte
	// Err is set when this message yields no envelope. It matches
	// [ErrNotFound] (gone from the folder), [ErrNotEnvelope] (the body is not
	// an envelope: ignore the message, §10.4), [ErrUnknownVersion] (ignore
	// without error to the user, §15) or [ErrTooLarge].
	Err error
}

// Store is the abstract hub store of §10.1 (docs/decisions/tandem-hub-store.md). Implementations are safe for
// concurrent use by multiple goroutines, and every method honours its
// context's cancellation and deadline.
type Store interface {
	// EnsureFolder makes sure the single folder Tandem exists. Creating a
	// folder that already exists (another client won the race) is success.
	EnsureFolder(ctx context.Context) error

	// Append stores a new message carrying envelope on channel, built as
	// §10.4 says, and returns its id. A channel that is not a valid tag gives
	// [ErrBadChannel]; a message of 1 MiB or more gives [ErrTooLarge] (§10.6).
	// Append does not look for duplicates: the sync engine does (§10.2).
	Append(ctx context.Context, channel string, envelope []byte) (ID, error)

	// Changes reports everything that changed in the folder since the cursor.
	// On an error the caller's cursor stays valid: nothing is lost by
	// retrying with it.
	Changes(ctx context.Context, since Cursor) (Changes, error)

	// Fetch downloads and decodes the bodies of ids, one Body per id in the
	// order given. A per-message problem is reported in Body.Err; the error
	// result is for failures of the whole call.
	Fetch(ctx context.Context, ids []ID) ([]Body, error)

	// Destroy removes messages permanently. Ids that are already gone are
	// not an error.
	Destroy(ctx context.Context, ids []ID) error

	// Watch blocks while connected, calling onChange whenever the folder may
	// have changed; the caller then runs Changes. Watch calls onChange once
	// as soon as it is listening, so that a caller who runs Changes then
	// misses nothing that happened before. onChange is called from
	// Watch's goroutine, one call at a time, and should return quickly. Watch
	// returns ctx.Err() when ctx ends, or the error that broke the
	// connection; the caller decides whether to watch again. A connection
	// that goes silent ends Watch with an [ErrUnavailable] error within a
	// bound each binding documents (IMAP: IdleRefresh + ReplyTimeout; JMAP:
	// RequestTimeout, or two ping intervals of an event stream).
	Watch(ctx context.Context, onChange func()) error

	// Close releases the store's connections. Watch calls in progress end.
	Close() error
}

var (
	// ErrBadChannel means a channel tag is not 32 characters of the
	// lowercase base32 alphabet (tandem-gaps.md, §5.6).
	ErrBadChannel = errors.New("hub: invalid channel tag")
	// ErrTooLarge means a message is 1 MiB or more (§10.6).
	ErrTooLarge = errors.New("hub: message too large")
	// ErrNotEnvelope means a message body does not decode to an envelope;
	// such a message is ignored (§10.4).
	ErrNotEnvelope = errors.New("hub: body is not an envelope")
	// ErrUnknownVersion means a message's Tandem-Version header or envelope
	// version is not one this reader knows; the message is ignored without
	// error to the user (§15).
	ErrUnknownVersion = errors.New("hub: unknown Tandem version")
	// ErrNotFound means a message is not (or no longer) in the folder.
	ErrNotFound = errors.New("hub: no such message")
	// ErrBadCursor means a cursor was not written by this kind of store.
	ErrBadCursor = errors.New("hub: unreadable cursor")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("hub: store closed")
	// ErrAuth means the server refused the credential (an IMAP NO to LOGIN,
	// a JMAP 401 or 403): stop syncing and ask the user to reconnect (§13.3).
	ErrAuth = errors.New("hub: credential rejected")
	// ErrProtocol is matched by every [ProtocolError]: a server the
	// binding cannot work with. Retrying the same call is unlikely to help.
	ErrProtocol = errors.New("hub: bad server answer")
	// ErrUnavailable is matched by every [UnavailableError]: the network
	// or the server failed (refused, cut, silent past a deadline, a 5xx
	// answer), and by a server's answer that it failed for now (an IMAP NO
	// [SERVERBUG], [UNAVAILABLE], [INUSE] or [LIMIT]; a JMAP serverFail or
	// serverUnavailable), which the bindings have already tried again a
	// few times. Retrying later may succeed; nothing was lost.
	ErrUnavailable = errors.New("hub: server unavailable")
	// ErrNoFolder means the Tandem folder is missing and could not be
	// made, or Watch's folder was deleted under it (the caller watches
	// again, which makes the folder anew). Changes, Append and Fetch do
	// not return it for a folder another client deleted: both bindings
	// make the folder again and carry on (Changes reports Reset), so
	// devices converge on one folder.
	ErrNoFolder = errors.New("hub: no Tandem folder")
)

// UnavailableError is a network or server failure worth retrying later:
// the connection was refused, cut or went silent past a deadline, or the
// server answered that it is unavailable. Err is the underlying error (a
// net.Error, io.EOF, an HTTP status, ...).
type UnavailableError struct {
	Op  string // the operation, e.g. "changes", "watch"
	Err error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	s := fmt.Sprintf("hub: %s: server unavailable", e.Op)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrUnavailable].
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// ProtocolError is a server answer a binding cannot use: a malformed or
// truncated response, a missing capability, an unexpected status. A
// ProtocolError never changes the caller's cursor.
type ProtocolError struct {
	Op  string // the operation, e.g. "changes", "fetch"
	Msg string // what was wrong
	Err error  // an underlying error, if any
}

// Error implements error.
func (e *ProtocolError) Error() string {
	s := fmt.Sprintf("hub: %s: bad server answer: %s", e.Op, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ProtocolError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrProtocol].
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }
