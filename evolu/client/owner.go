// Package client is an Evolu client: owner keys from a secret (SLIP-21 as
// in Owner.ts), EncryptedDbChange encoding and decryption (XChaCha20-Poly1305
// from golang.org/x/crypto, PADMÉ padding), a SQLite client store that keeps
// the synced messages and the rows they make, and a sync loop over
// WebSocket (github.com/coder/websocket) that runs
// applyProtocolMessageAsClient against a relay.
//
// The value codec, the JSON-to-MessagePack encoding and the JavaScript
// number formatting it needs are written by hand to match @evolu/common byte
// for byte; no Go library reproduces those.
package client

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/evolu/internal/bip39"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Owner holds the keys of an Evolu owner (Owner.ts Owner), derived from
// its Secret by OwnerFromSecret. Its keys are reached through accessors
// only, so an Owner is always one a secret made.
type Owner struct {
	id            OwnerID
	encryptionKey [32]byte
	writeKey      WriteKey
}

// ID is the owner's id, the part of the keys a relay sees in clear.
func (o Owner) ID() OwnerID { return o.id }

// WriteKey is the key a relay checks before it stores the owner's changes.
func (o Owner) WriteKey() WriteKey { return o.writeKey }

// Secret is a 32-byte OwnerSecret.
type Secret [32]byte

// ParseSecret parses an OwnerSecret: 64 hex digits, or Evolu's mnemonic
// of it (24 BIP-39 English words, as ownerSecretToMnemonic makes).
func ParseSecret(s string) (Secret, error) {
	var sec Secret
	if strings.Contains(strings.TrimSpace(s), " ") {
		m, err := bip39.FromMnemonic(s)
		if err != nil {
			return sec, fmt.Errorf("evolu: owner secret: %w", err)
		}
		return Secret(m), nil
	}
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != 32 {
		return sec, errors.New("evolu: owner secret must be 64 hex digits or Evolu's 24-word mnemonic")
	}
	copy(sec[:], b)
	return sec, nil
}

// Mnemonic is Evolu's form of the secret (ownerSecretToMnemonic): 24
// BIP-39 English words.
func (s Secret) Mnemonic() string { return bip39.ToMnemonic(s) }

// String is the secret in hex.
func (s Secret) String() string { return hex.EncodeToString(s[:]) }

// OwnerFromSecret derives an owner as createAppOwner does: SLIP-21 nodes
// Evolu/OwnerIdBytes (first 16 bytes), Evolu/OwnerEncryptionKey, and
// Evolu/OwnerWriteKey (first 16 bytes).
func OwnerFromSecret(secret Secret) Owner {
	id, enc, wk := protocol.OwnerKeys(secret)
	return Owner{id: id, encryptionKey: enc, writeKey: wk}
}
