package hub

import (
	"errors"
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	k := newBucket(Rate{N: 3, Per: 3 * time.Minute}, t0)
	for i := range 3 {
		if w := k.take(1, t0); w != 0 {
			t.Fatalf("take %d: wait %v", i, w)
		}
	}
	if w := k.take(1, t0); w != time.Minute {
		t.Fatalf("over budget: wait %v, want 1m", w)
	}
	if w := k.take(1, t0.Add(time.Minute)); w != 0 {
		t.Fatalf("after a minute: wait %v", w)
	}
	if w := k.take(2, t0.Add(time.Minute)); w != 2*time.Minute {
		t.Fatalf("two more: wait %v, want 2m", w)
	}
	if w := k.take(4, t0.Add(time.Hour)); w == 0 {
		t.Fatal("more than the burst was granted")
	}
	if w := (&bucket{}).take(1000, t0); w != 0 {
		t.Fatal("an unlimited bucket refused")
	}
}

func TestRateBudgetError(t *testing.T) {
	b := NewRateBudget(Rate{N: 1, Per: time.Hour}, Rate{})
	if err := b.Login(); err != nil {
		t.Fatal(err)
	}
	err := b.Login()
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrUnavailable) || be.RetryAfter <= 0 {
		t.Fatalf("second login: %v", err)
	}
	if err := b.Append(1 << 20); err != nil {
		t.Fatalf("unlimited appends: %v", err)
	}
}
