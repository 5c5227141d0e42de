package record

import (
	"crypto/ed25519"
	"crypto/sha512"
	"testing"

	"filippo.io/edwards25519"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// signWithNonce signs msg with priv like Ed25519 but with the caller's
// nonce instead of the deterministic one: what a malicious signer can do to
// produce a second valid signature for the same write ID. Test-only; the
// package itself only signs through suite.SignWrite.
func signWithNonce(tb testing.TB, priv ed25519.PrivateKey, msg []byte, nonce byte) []byte {
	tb.Helper()
	h := sha512.Sum512(priv.Seed())
	a, err := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	if err != nil {
		tb.Fatal(err)
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

func TestOneWriteIDWithTwoSignaturesConverges(t *testing.T) {
	body := suite.WriteBody{Scope: testScope, Record: r1, Field: "title", Op: suite.OpAssign, Value: []byte("v"),
		Author: pubOf(key(9)), Dot: dot(9, 5, 0), Ref: [32]byte{1}, Context: suite.VV{}, Base: suite.VV{}}
	si, err := body.SigInput()
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := signWithNonce(t, key(9), si, 1), signWithNonce(t, key(9), si, 2)
	if !suite.VerifyStrict(body.Author[:], si, s1) || !suite.VerifyStrict(body.Author[:], si, s2) {
		t.Fatal("test signer produced an invalid signature")
	}
	a, b := NewState(testValidator()), NewState(testValidator())
	for _, sig := range [][]byte{s1, s2} {
		if _, _, err := a.Ingest(&body, sig, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, sig := range [][]byte{s2, s1, s2} {
		if _, _, err := b.Ingest(&body, sig, 1); err != nil {
			t.Fatal(err)
		}
	}
	sameState(t, a, b)
	if a.Len() != 1 {
		t.Fatalf("%d writes kept for one write ID", a.Len())
	}
}
