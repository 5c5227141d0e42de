package client

import (
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Sentinel errors. Functions wrap them with %w and detail; test with
// errors.Is.
var (
	// ErrPayload: a kind-1 plaintext is not a valid §10.5 payload.
	ErrPayload = errors.New("tandem/client: malformed payload")
	// ErrRejected: a hub message was rejected; *RejectError says which and
	// why. Nothing of it entered the device's state.
	ErrRejected = errors.New("tandem/client: message rejected")
	// ErrNotHome: a home write is not signed with the user's own key, or a
	// membership key entry does not parse (§6.2).
	ErrNotHome = errors.New("tandem/client: invalid home write")
	// ErrKeyCommit: an epoch key from home does not match the commitment in
	// the statement that starts the epoch (§5.7).
	ErrKeyCommit = errors.New("tandem/client: epoch key does not match its commitment")
	// ErrUnknownCollection: the device does not follow this collection.
	ErrUnknownCollection = errors.New("tandem/client: unknown collection")
	// ErrNotWritable: the collection cannot be written now: its roster is not
	// known yet, it is dead, stalled or deleted, or the user is not its owner
	// or a writer (§8.3, §9.4).
	ErrNotWritable = errors.New("tandem/client: collection not writable")
	// ErrTooLarge: a write's message would not fit the message limit (§10.6).
	ErrTooLarge = errors.New("tandem/client: write too large for one message")
	// ErrHeldFull: the limit on messages held for a missing dependency was
	// reached; the message stays on the hub and is read again later.
	ErrHeldFull = errors.New("tandem/client: too many held messages")
)

// RejectError is a hub message the device rejected: it could not be opened,
// did not parse, or carried a write or statement that is invalid or not
// allowed. A rejection is final (whether a write is valid never changes,
// §9.3) and changes no state.
type RejectError struct {
	ID      hub.ID   // the message's id in this hub
	Channel string   // its channel tag
	Hash    [32]byte // H(envelope), its identity across hubs (§10.4)
	Err     error    // why
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("tandem/client: message %s (channel %s): %v", e.ID, e.Channel, e.Err)
}

// Unwrap makes errors.Is match ErrRejected and the reason.
func (e *RejectError) Unwrap() []error { return []error{ErrRejected, e.Err} }
