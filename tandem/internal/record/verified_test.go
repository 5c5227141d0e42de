package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// TestVerifiedRefusesZero: a Verified not produced by Verify carries no
// proof of a signature check and never becomes a Write.
func TestVerifiedRefusesZero(t *testing.T) {
	for name, x := range map[string]*Verified{"nil": nil, "zero": {}} {
		if x.Valid() {
			t.Fatalf("%s: Valid", name)
		}
		if w, err := x.InEpoch(0); w != nil || !errors.Is(err, ErrUnverified) {
			t.Fatalf("%s: InEpoch = %v, %v; want ErrUnverified", name, w, err)
		}
	}
}

// TestVerifyThenInEpochIsValidate: Verify followed by InEpoch gives the
// Write that Validate gives, and Verify keeps its own copy of the body.
func TestVerifyThenInEpochIsValidate(t *testing.T) {
	b := goodBody()
	b.Context = vv(dot(2, 1, 0))
	sig := signBody(t, b)
	want, err := testValidator().Validate(&b, sig, 4)
	if err != nil {
		t.Fatal(err)
	}
	x, err := testValidator().Verify(&b, sig)
	if err != nil || !x.Valid() {
		t.Fatalf("Verify: %v", err)
	}
	b.Value[0] ^= 1 // the caller reuses its slices
	sig[0] ^= 1
	got, err := x.InEpoch(4)
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := NewState(testValidator()), NewState(testValidator())
	s1.Add(want)
	s2.Add(got)
	if got.ID() != want.ID() || got.Epoch() != 4 || !bytes.Equal(got.Sig(), want.Sig()) ||
		!bytes.Equal(encode(t, s1), encode(t, s2)) {
		t.Fatal("Verify then InEpoch differs from Validate")
	}
	if gb := got.Body(); !bytes.Equal(gb.Value, []byte("v")) || x.ID() != want.ID() {
		t.Fatal("Verified aliases the caller's body")
	}
	var zero suite.WriteBody
	if _, err := testValidator().Verify(&zero, make([]byte, 64)); err == nil {
		t.Fatal("zero body verified")
	}
}
