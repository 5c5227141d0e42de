// Package hubtest is the conformance suite of the Tandem hub store (§10.1):
// one set of tests that every binding (memhub, imaphub on Dovecot, jmaphub
// on Cyrus) passes. A binding's test calls [Run] with a [Harness] that opens
// connections to one test account and can do, on the server side, what the
// suite cannot do through hub.Store: move a message out of the folder and
// back, and store raw bytes the way a server or another client might.
package hubtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Harness connects the suite to one binding and one test account.
type Harness struct {
	// Open connects a new Store (a new connection) to the account. The
	// suite closes every Store it opens.
	Open func(t *testing.T) hub.Store
	// Reset empties the account before each test: afterwards the Tandem
	// folder, if it exists, holds no message, and neither does the folder
	// MoveOut uses.
	Reset func(t *testing.T)
	// MoveOut moves message id out of the Tandem folder into another folder
	// of the account, and returns a function that moves it back in.
	MoveOut func(t *testing.T, id hub.ID) (moveBack func(t *testing.T))
	// Inject stores raw, a complete RFC 5322 message with CRLF line ends, in
	// the Tandem folder without going through Append, as a server that
	// re-encoded a body, or another client, might have stored it.
	Inject func(t *testing.T, raw []byte)
}

// tagEncoding is b32 of tandem-gaps.md: lowercase RFC 4648 base32, no padding.
var tagEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Channel returns a valid channel tag, the same for the same i.
func Channel(i int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "hubtest channel %d", i))
	return tagEncoding.EncodeToString(h[:20])
}

// Envelope returns a random well-formed envelope (§5.4) of n bytes in all
// (n at least hub.MinEnvelope): kind 1, random salt and "ciphertext".
func Envelope(n int) []byte {
	if n < hub.MinEnvelope {
		n = hub.MinEnvelope
	}
	env := make([]byte, n)
	rand.Read(env)
	copy(env, "TNDM\x01\x01")
	return env
}
