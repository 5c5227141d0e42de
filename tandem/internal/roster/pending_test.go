package roster

import (
	"errors"
	"testing"
	"time"
)

// TestHeldWritesReleased: writes naming statements not yet known are held
// (not rejected), then released and accepted once the roster arrives; a
// missing inventory holds old writes until the fragments come.
func TestHeldWritesReleased(t *testing.T) {
	w := newWorld(t)
	now := time.Date(2026, 11, 12, 0, 0, 0, 0, time.UTC)
	p := NewPending[signedWrite](0, 0, func() time.Time { return now })
	c := NewChain(w.coll, Options{})
	sts := w.r1.Statements()
	check(t, c.Add(sts[0], Origin{}))

	for _, x := range []signedWrite{w.wA, w.wM, w.late} {
		_, err := c.CheckWrite(&x.body, x.sig, w.e1)
		var h *HoldError
		if !errors.As(err, &h) || !errors.Is(err, ErrHeld) || !errors.Is(err, ErrUnknownStatement) {
			t.Fatalf("want a hold, got %v", err)
		}
		if ok, err := p.HoldFor(err, x); !ok || err != nil {
			t.Fatal("not held")
		}
	}
	if got := p.ReleaseIf(c.Resolved); len(got) != 0 {
		t.Fatal("released before the statements arrived")
	}
	for _, st := range sts[1:] {
		check(t, c.Add(st, Origin{}))
	}
	// The statements are followed; now the epoch's inventory is missing.
	released := p.ReleaseIf(c.Resolved)
	if len(released) != 3 || p.Len() != 0 {
		t.Fatalf("released %d", len(released))
	}
	for _, x := range released {
		_, err := c.CheckWrite(&x.body, x.sig, w.e1)
		wantIs(t, err, ErrHeld, ErrNoInventory)
		check(t, second(p.HoldFor(err, x)))
	}
	frags, err := Split(w.e1, w.rmChange.Inventory.Bytes(), 0)
	check(t, err)
	check(t, c.AddFragment(frags[0]))
	accepted, rejected := 0, 0
	for _, x := range p.ReleaseIf(c.Resolved) {
		if _, err := c.CheckWrite(&x.body, x.sig, w.e1); err == nil {
			accepted++
		} else if errors.Is(err, ErrRejected) {
			rejected++
		}
	}
	if accepted != 2 || rejected != 1 {
		t.Fatalf("accepted %d, rejected %d", accepted, rejected)
	}

	// Limits: count and time.
	p = NewPending[signedWrite](1, time.Hour, func() time.Time { return now })
	check(t, p.Hold([32]byte{1}, w.wA))
	wantIs(t, p.Hold([32]byte{2}, w.wM), ErrLimit)
	now = now.Add(2 * time.Hour)
	if p.Expire() != 1 || p.Len() != 0 {
		t.Fatal("expiry")
	}
}
