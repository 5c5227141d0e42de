package datasync

import (
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

// Code says what kind of failure an *Error is.
type Code uint8

// The error codes. A Node returns them, and reports them through
// Options.Report for documents a link could not replicate.
const (
	CodeInternal     Code = iota // a bug, or damage no code foresees
	CodeState                    // the node's directory cannot be read or written
	CodeUnreachable              // the peer's address does not answer
	CodeHandshake                // the handshake failed: not a peer, or a key the other side refuses
	CodeNotAllowed               // the peer's key is not one the node accepts
	CodeCapabilities             // the peer does not speak this node's document encoding
	CodeCeiling                  // the peer named more documents than the space admits
	CodeTooLarge                 // a document or message over a size bound
	CodeUnreadable               // the peer sent bytes the engine cannot read
	CodeRefused                  // the replicas forked below a compaction; a snapshot was refused
	CodeQuarantined              // a blob that ended an earlier process is refused
	CodeEngine                   // the document engine failed
	CodeLinkClosed               // the link ended before the work was done
	CodeBusy                     // Serve already runs Options.MaxLinks links
)

var codeNames = [...]string{
	CodeInternal: "internal", CodeState: "state", CodeUnreachable: "unreachable",
	CodeHandshake: "handshake", CodeNotAllowed: "not_allowed", CodeCapabilities: "capabilities",
	CodeCeiling: "ceiling", CodeTooLarge: "too_large", CodeUnreadable: "unreadable",
	CodeRefused: "refused", CodeQuarantined: "quarantined", CodeEngine: "engine",
	CodeLinkClosed: "link_closed", CodeBusy: "busy",
}

// String is the code's name.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code_%d", int(c))
}

// MarshalText writes the code's name, for logs and JSON.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Error is every error package datasync returns or reports. Doc names the
// document concerned and Peer the peer (its public key in hex, or its
// address when the handshake did not get that far), when there is one; Err
// is the cause, for logs and errors.Is.
type Error struct {
	Code Code
	Doc  string
	Peer string
	Err  error
}

func (e *Error) Error() string {
	s := "datasync: " + e.Code.String()
	if e.Peer != "" {
		s += ": peer " + e.Peer
	}
	if e.Doc != "" {
		s += fmt.Sprintf(": document %q", e.Doc)
	}
	return fmt.Sprintf("%s: %v", s, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches an *Error with the same Code and no cause, so that
// errors.Is(err, &datasync.Error{Code: datasync.CodeHandshake}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Doc == "" && t.Peer == "" && t.Err == nil
}

// translate maps the sentinels of the packages under datasync to a code;
// it is the one place they are read.
func translate(err error, doc string) *Error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	code := CodeInternal
	for _, m := range []struct {
		sentinel error
		code     Code
	}{
		{transport.ErrUnknownPeer, CodeNotAllowed},
		{transport.ErrHandshake, CodeHandshake},
		{transport.ErrClosed, CodeLinkClosed},
		{transport.ErrTooLarge, CodeTooLarge},
		{frame.ErrGated, CodeCapabilities},
		{exchange.ErrCeiling, CodeCeiling},
		{exchange.ErrTooLarge, CodeTooLarge},
		{exchange.ErrOfferTooLarge, CodeTooLarge},
		{frame.ErrOverBudget, CodeTooLarge},
		{exchange.ErrUnreadable, CodeUnreadable},
		{exchange.ErrRefused, CodeRefused},
		{quarantine.ErrQuarantined, CodeQuarantined},
		{exchange.ErrEngine, CodeEngine},
		{engine.ErrStorage, CodeEngine},
	} {
		if errors.Is(err, m.sentinel) {
			code = m.code
			break
		}
	}
	return &Error{Code: code, Doc: doc, Err: err}
}
