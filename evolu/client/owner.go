// Package client is an Evolu client for an app: a device's local store of
// an owner's rows, and its sync with an Evolu relay (protocol v1,
// byte-compatible with @evolu/common).
//
//	secret, _ := client.ParseSecret(words)        // 24 words or 64 hex digits
//	owner := client.OwnerFromSecret(secret)
//	st, _ := client.OpenStore(ctx, "device.db")
//	st.Put(ctx, owner, client.DbChange{Table: "todo", ID: id, Values: cols})
//	rep, err := client.Sync(ctx, "wss://relay.example", owner, st, client.SyncOptions{})
//	rows, _ := st.Rows(ctx, owner.ID(), "todo")
//
// Run keeps a device subscribed (pushing its changes, applying the relay's
// broadcasts, reconnecting with back-off). A relay's refusal is a
// *RelayError with a RelayCode.
//
// Owner keys come from the secret by SLIP-21 as in Owner.ts; changes are
// encrypted with XChaCha20-Poly1305 (golang.org/x/crypto) and PADMÉ
// padding. The value codec, the JSON-to-MessagePack encoding and the
// JavaScript number formatting are written by hand to match @evolu/common
// byte for byte; no Go library reproduces those.
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
