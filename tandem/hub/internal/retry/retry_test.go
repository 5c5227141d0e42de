package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var (
	errBlip = errors.New("blip")
	errHard = errors.New("hard")
)

func isBlip(err error) bool { return errors.Is(err, errBlip) }

var fast = Policy{Attempts: 4, First: time.Millisecond, Max: 2 * time.Millisecond}

func TestDoRetriesTransientUntilSuccess(t *testing.T) {
	calls := 0
	err := fast.Do(context.Background(), isBlip, func() error {
		calls++
		if calls < 3 {
			return errBlip
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Do = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestDoStopsOnOtherErrors(t *testing.T) {
	calls := 0
	err := fast.Do(context.Background(), isBlip, func() error { calls++; return errHard })
	if !errors.Is(err, errHard) || calls != 1 {
		t.Fatalf("Do = %v after %d calls, want errHard after 1", err, calls)
	}
}

func TestDoGivesUpAfterAttempts(t *testing.T) {
	calls := 0
	err := fast.Do(context.Background(), isBlip, func() error { calls++; return errBlip })
	if !errors.Is(err, errBlip) || calls != fast.Attempts {
		t.Fatalf("Do = %v after %d calls, want errBlip after %d", err, calls, fast.Attempts)
	}
}

// A deadline shorter than the next wait ends the retries at once, with the
// server's answer rather than a deadline error.
func TestDoHonoursDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	slow := Policy{Attempts: 10, First: 2 * time.Hour, Max: 2 * time.Hour}
	calls := 0
	err := slow.Do(ctx, isBlip, func() error { calls++; return errBlip })
	if !errors.Is(err, errBlip) || calls != 1 {
		t.Fatalf("Do = %v after %d calls, want errBlip after 1", err, calls)
	}
}

func TestDoStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	slow := Policy{Attempts: 10, First: time.Hour, Max: time.Hour}
	calls := 0
	done := make(chan error, 1)
	go func() { done <- slow.Do(ctx, isBlip, func() error { calls++; return errBlip }) }()
	cancel()
	if err := <-done; !errors.Is(err, errBlip) {
		t.Fatalf("Do = %v, want errBlip", err)
	}
}

func TestZeroPolicyRetries(t *testing.T) {
	if p := (Policy{}).orDefault(); p.Attempts < 2 || p.First <= 0 || p.Max < p.First {
		t.Fatalf("zero policy = %+v, want a few attempts with growing waits", p)
	}
}
