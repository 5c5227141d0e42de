package record

import (
	"crypto/ed25519"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/suite/suitetest"
)

// signWithNonce is suitetest.SignWithNonce.
func signWithNonce(tb testing.TB, priv ed25519.PrivateKey, msg []byte, nonce byte) []byte {
	tb.Helper()
	return suitetest.SignWithNonce(priv, msg, nonce)
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
