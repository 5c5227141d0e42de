package roster

import (
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// checkVerifiedAgrees runs x through the path that verifies once
// (record.Validator.Verify, then CheckVerified) and fails unless its
// verdict is CheckWrite's verdict want: the same error, or, when the
// record layer refuses the write first, a rejection by CheckWrite too. An
// accepted write must come back with its write ID and with e(x), the key
// counter of the statement it names.
func checkVerifiedAgrees(t testing.TB, c *Chain, x signedWrite, channel [32]byte, want error) {
	t.Helper()
	v, err := record.NewValidator(record.Rules{Scope: c.collection}).Verify(&x.body, x.sig)
	if err != nil {
		if !errors.Is(want, ErrRejected) {
			t.Fatalf("record.Verify refused (%v) a write CheckWrite did not reject (%v)", err, want)
		}
		return
	}
	w, err := c.CheckVerified(v, channel)
	switch {
	case (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()):
		t.Fatalf("CheckVerified: %v; CheckWrite: %v", err, want)
	case err != nil && w != nil:
		t.Fatal("CheckVerified returned a write with an error")
	case err != nil:
		return
	}
	n, _ := c.roster.Counter(x.body.Ref)
	if w.ID() != x.id || w.Epoch() != n {
		t.Fatalf("write ID %x epoch %d, want %x %d", w.ID(), w.Epoch(), x.id, n)
	}
}

// TestCheckVerifiedRefusesUnverified: CheckVerified takes only what
// record.Validator.Verify produced; nil and the zero value, which carry no
// verification, are rejected and never become a Write.
func TestCheckVerifiedRefusesUnverified(t *testing.T) {
	w := newWorld(t)
	c := chainOf(t, w.r1)
	for name, x := range map[string]*record.Verified{"nil": nil, "zero": {}} {
		got, err := c.CheckVerified(x, w.e1)
		if got != nil || !errors.Is(err, ErrRejected) || !errors.Is(err, record.ErrUnverified) {
			t.Fatalf("%s: CheckVerified = %v, %v; want rejection with ErrUnverified", name, got, err)
		}
	}
	// The same write, verified, is accepted: the refusal above is about
	// the missing proof, not the write.
	v, err := record.NewValidator(record.Rules{Scope: w.coll}).Verify(&w.wA.body, w.wA.sig)
	check(t, err)
	got, err := c.CheckVerified(v, w.e1)
	check(t, err)
	if got.ID() != w.wA.id {
		t.Fatal("write ID")
	}
}

// TestCheckVerifiedDead: a verified write is refused in a dead collection,
// as CheckWrite refuses it.
func TestCheckVerifiedDead(t *testing.T) {
	f := newFixture(t)
	c := chainOf(t, f.r0)
	check(t, c.Add(forge(t, f.r0, f.o.id.SignKey, f.o.clk.next(), nil, nil, nil), Origin{}))
	check(t, c.Add(forge(t, f.r0, f.o.id.SignKey, f.o.clk.next(), nil, nil, nil), Origin{}))
	body, sig, _ := dataWrite(t, f.w, f.r0.Collection(), [16]byte{1}, f.r0.Head().ID(), suite.Dot{}, suite.OpAssign, "x")
	v, err := record.NewValidator(record.Rules{Scope: f.r0.Collection()}).Verify(&body, sig)
	check(t, err)
	if got, err := c.CheckVerified(v, f.r0.Epoch()); got != nil || !errors.Is(err, ErrDead) {
		t.Fatalf("write in a dead collection: %v, %v", got, err)
	}
}
