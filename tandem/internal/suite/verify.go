package suite

import (
	"crypto/sha512"
	"crypto/subtle"
	"sync"

	"filippo.io/edwards25519"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// VerifyStrict reports whether sig is a valid Ed25519 signature by publicKey
// over message under the strict rules of §5.5, which every signature check
// in Ferry uses so that all Tandem implementations accept exactly the same
// signatures. It returns false, never panics, when:
//
//   - publicKey is not 32 bytes or sig not 64 bytes;
//   - A (publicKey) or R (sig[0:32]) is not a canonical point encoding:
//     y ≥ p, or the sign bit set on a point whose x is 0;
//   - A does not decode to a curve point, or has small order ([8]A = 0);
//   - S (sig[32:64], little-endian) is not below the group order L;
//   - the cofactorless equation [S]B = R + [k]A fails, where
//     k = SHA-512(R || A || message) mod L.
//
// A small-order R is allowed (§5.5 constrains only A); with the cofactorless
// equation only the identity can satisfy it.
//
// crypto/ed25519.Verify accepts non-canonical and small-order public keys,
// so it must not be used on its own. Details: docs/decisions/tandem-suite-verify.md.
func VerifyStrict(publicKey, message, sig []byte) bool {
	minusA, ok := strictKey(publicKey)
	return ok && verifyWith(minusA, publicKey, message, sig)
}

// strictKey decodes publicKey under the rules of §5.5 (canonical, on the
// curve, not of small order) and returns -A, which verification uses.
func strictKey(publicKey []byte) (*edwards25519.Point, bool) {
	if len(publicKey) != 32 || !canonicalPoint(publicKey) {
		return nil, false
	}
	A, err := new(edwards25519.Point).SetBytes(publicKey)
	if err != nil || smallOrder(A) {
		return nil, false
	}
	return A.Negate(A), true
}

// verifyWith checks sig over message by the key publicKey, whose decoding
// -A strictKey accepted: R canonical, S below L, and the cofactorless
// equation.
func verifyWith(minusA *edwards25519.Point, publicKey, message, sig []byte) bool {
	if len(sig) != 64 || !canonicalPoint(sig[:32]) {
		return false
	}
	S, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(publicKey)
	h.Write(message)
	var digest [64]byte
	k, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false
	}
	// [S]B - [k]A must equal R. R is canonical, so comparing encodings
	// compares points.
	R := new(edwards25519.Point).VarTimeDoubleScalarBaseMult(k, minusA, S)
	return subtle.ConstantTimeCompare(R.Bytes(), sig[:32]) == 1
}

// Keys verifies signatures like VerifyStrict and remembers the public keys
// it decoded and accepted, so that the many signatures of one author (a
// first sync checks one per write) skip decoding and checking the key
// again: each signature still gets its own full strict verification. A
// remembered key is kept expanded (a precomputed table of its multiples,
// about 1.5 KiB), which makes the equation itself cheaper; see
// docs/decisions/tandem-suite-verify.md. It holds at most keysHeld keys (it
// forgets them all when full, so junk keys cost memory only up to that
// bound); a key it refused is not remembered. Safe for concurrent use; the
// zero value is ready.
type Keys struct {
	mu sync.Mutex
	m  map[[32]byte]*voi.ExpandedPublicKey // read-only once stored
}

// keysHeld bounds Keys: more authors than a collection has members.
const keysHeld = 1024

// expandedOptions make curve25519-voi check what §5.5 asks and nothing
// else: the cofactorless equation, R compared by its canonical encoding,
// small-order R allowed; A's rules are checked by strictKey before a key is
// expanded, and voi checks them again.
var expandedOptions = &voi.Options{Verify: &voi.VerifyOptions{AllowSmallOrderR: true, CofactorlessVerify: true}}

// VerifyStrict is the package's VerifyStrict, with k's remembered keys.
func (k *Keys) VerifyStrict(publicKey, message, sig []byte) bool {
	if len(publicKey) != 32 {
		return false
	}
	pk := [32]byte(publicKey)
	k.mu.Lock()
	key := k.m[pk]
	k.mu.Unlock()
	if key == nil {
		if _, ok := strictKey(publicKey); !ok {
			return false
		}
		var err error
		if key, err = voi.NewExpandedPublicKey(publicKey); err != nil {
			return false
		}
		k.mu.Lock()
		if k.m == nil || len(k.m) >= keysHeld {
			k.m = make(map[[32]byte]*voi.ExpandedPublicKey)
		}
		k.m[pk] = key
		k.mu.Unlock()
	}
	// R's encoding and S's range are checked here by the rules of §5.5
	// (the same code as VerifyStrict), then voi computes the equation.
	if len(sig) != 64 || !canonicalPoint(sig[:32]) || !canonicalScalar(sig[32:]) {
		return false
	}
	return voi.VerifyExpandedWithOptions(key, message, sig, expandedOptions)
}

// canonicalScalar reports whether the 32-byte little-endian s is below the
// group order L.
func canonicalScalar(s []byte) bool {
	_, err := edwards25519.NewScalar().SetCanonicalBytes(s)
	return err == nil
}

// canonicalPoint reports whether the 32-byte little-endian encoding b is in
// canonical form: its y (b with bit 255 cleared) is below p = 2^255 - 19, and
// the sign bit is clear when x must be 0 (y = 1 or y = p - 1). It checks the
// bytes only; whether b is on the curve is decided by decoding.
func canonicalPoint(b []byte) bool {
	// y ≥ p iff bytes 1..30 are 0xff, byte 31 (sans sign) is 0x7f and
	// byte 0 ≥ 0xed.
	high := b[31]&0x7f == 0x7f
	for i := 1; i < 31 && high; i++ {
		high = b[i] == 0xff
	}
	if high && b[0] >= 0xed {
		return false
	}
	if b[31]&0x80 == 0 {
		return true
	}
	// Sign bit set: x = 0 exactly when y = 1 or y = p - 1 (0xec ff.. 7f).
	if high && b[0] == 0xec {
		return false
	}
	if b[0] == 1 && b[31]&0x7f == 0 {
		zero := true
		for i := 1; i < 31 && zero; i++ {
			zero = b[i] == 0
		}
		if zero {
			return false
		}
	}
	return true
}

// smallOrder reports whether [8]p is the identity.
func smallOrder(p *edwards25519.Point) bool {
	q := new(edwards25519.Point).MultByCofactor(p)
	return q.Equal(edwards25519.NewIdentityPoint()) == 1
}
