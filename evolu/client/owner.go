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
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/evolu/internal/bip39"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Owner holds the keys of an Evolu owner (Owner.ts Owner).
type Owner struct {
	ID            protocol.OwnerID
	EncryptionKey [32]byte
	WriteKey      protocol.WriteKey
}

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
	var o Owner
	id := slip21(secret[:], "Evolu", "OwnerIdBytes")
	copy(o.ID[:], id[:16])
	o.EncryptionKey = slip21(secret[:], "Evolu", "OwnerEncryptionKey")
	wk := slip21(secret[:], "Evolu", "OwnerWriteKey")
	copy(o.WriteKey[:], wk[:16])
	return o
}

// slip21 derives the symmetric key at path from seed (SLIP-0021): the
// master node is HMAC-SHA512("Symmetric key seed", seed); each child is
// HMAC-SHA512(parent[0:32], 0x00 || label); the key is the node's last 32
// bytes.
func slip21(seed []byte, path ...string) [32]byte {
	node := hmacSHA512([]byte("Symmetric key seed"), seed)
	for _, label := range path {
		node = hmacSHA512(node[:32], append([]byte{0}, label...))
	}
	var k [32]byte
	copy(k[:], node[32:])
	return k
}

func hmacSHA512(key, msg []byte) []byte {
	m := hmac.New(sha512.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
