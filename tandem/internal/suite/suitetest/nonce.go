// Package suitetest holds what tests of several packages need to act as a
// hostile signer; nothing outside tests imports it.
package suitetest

import (
	"crypto/ed25519"
	"crypto/sha512"

	"filippo.io/edwards25519"
)

// SignWithNonce signs msg with priv like Ed25519 but with a nonce derived
// from the caller's byte instead of the deterministic one: what a malicious
// signer can do to produce more valid signatures for one write ID (§9.3
// keeps the smallest). Written by hand: no library signs with a chosen
// nonce, for good reason.
func SignWithNonce(priv ed25519.PrivateKey, msg []byte, nonce byte) []byte {
	h := sha512.Sum512(priv.Seed())
	a, err := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	if err != nil {
		panic(err) // 32 bytes always clamp
	}
	var wide [64]byte
	wide[0], wide[1] = nonce, 0x5a
	r, _ := new(edwards25519.Scalar).SetUniformBytes(wide[:])
	R := new(edwards25519.Point).ScalarBaseMult(r)
	kh := sha512.New()
	kh.Write(R.Bytes())
	kh.Write(priv.Public().(ed25519.PublicKey))
	kh.Write(msg)
	k, _ := new(edwards25519.Scalar).SetUniformBytes(kh.Sum(nil))
	S := new(edwards25519.Scalar).MultiplyAdd(k, a, r)
	return append(R.Bytes(), S.Bytes()...)
}
