package datasync

import (
	"encoding/hex"
	"fmt"

	"golang.org/x/crypto/curve25519"

	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

// Key is a node's static key pair: peers know a node by its public half.
type Key struct{ k transport.Key }

// PublicKey is the public half of a Key, 32 bytes; its String form is hex.
type PublicKey [32]byte

// GenerateKey makes a new key pair.
func GenerateKey() (Key, error) {
	k, err := transport.GenerateKey()
	if err != nil {
		return Key{}, &Error{Code: CodeInternal, Err: err}
	}
	return Key{k}, nil
}

// KeyFromPrivate rebuilds a key pair from its 32-byte private half, as
// PrivateBytes returned it.
func KeyFromPrivate(private []byte) (Key, error) {
	if len(private) != curve25519.ScalarSize {
		return Key{}, &Error{Code: CodeState, Err: fmt.Errorf("a private key is %d bytes, not %d", curve25519.ScalarSize, len(private))}
	}
	pub, err := curve25519.X25519(private, curve25519.Basepoint)
	if err != nil {
		return Key{}, &Error{Code: CodeState, Err: err}
	}
	return Key{transport.Key{Private: append([]byte(nil), private...), Public: pub}}, nil
}

// PrivateBytes is the private half, for the app to keep where it keeps
// secrets.
func (k Key) PrivateBytes() []byte { return append([]byte(nil), k.k.Private...) }

// Public is the key's public half.
func (k Key) Public() PublicKey {
	var p PublicKey
	copy(p[:], k.k.Public)
	return p
}

// ParsePublicKey reads the hex form String writes.
func ParsePublicKey(s string) (PublicKey, error) {
	var p PublicKey
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(p) {
		return p, &Error{Code: CodeNotAllowed, Err: fmt.Errorf("%q is not a 32-byte hex public key", s)}
	}
	copy(p[:], b)
	return p, nil
}

// String is the key in hex.
func (p PublicKey) String() string { return hex.EncodeToString(p[:]) }
