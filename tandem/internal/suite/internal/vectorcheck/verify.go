package vectorcheck

import (
	"bytes"
	"crypto/sha512"

	"filippo.io/edwards25519"
)

// verifyStrict is §5.5's verifier, written from the spec text: reject S not
// below L, reject non-canonical encodings of A and R, reject small-order A,
// check the cofactorless [S]B = R + [k]A with k = SHA-512(R || A || M) mod L.
func verifyStrict(pub, msg, sig []byte) bool {
	if len(pub) != 32 || len(sig) != 64 {
		return false
	}
	s, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false // S ≥ L
	}
	a, ok := canonicalPoint(pub)
	if !ok {
		return false
	}
	r, ok := canonicalPoint(sig[:32])
	if !ok {
		return false
	}
	if new(edwards25519.Point).MultByCofactor(a).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return false // small-order A
	}
	d := sha512.New()
	d.Write(sig[:32])
	d.Write(pub)
	d.Write(msg)
	k, err := edwards25519.NewScalar().SetUniformBytes(d.Sum(nil))
	if err != nil {
		return false
	}
	lhs := new(edwards25519.Point).ScalarBaseMult(s)
	rhs := new(edwards25519.Point).Add(r, new(edwards25519.Point).ScalarMult(k, a))
	return lhs.Equal(rhs) == 1
}

// canonicalPoint decodes a point and accepts it only if re-encoding gives
// the same bytes (SetBytes alone accepts y ≥ p and a set sign bit on x = 0).
func canonicalPoint(b []byte) (*edwards25519.Point, bool) {
	p, err := new(edwards25519.Point).SetBytes(b)
	if err != nil {
		return nil, false
	}
	if !bytes.Equal(p.Bytes(), b) {
		return nil, false
	}
	return p, true
}
