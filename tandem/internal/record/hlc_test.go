package record

import (
	"errors"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func TestClockFollowsWallTime(t *testing.T) {
	now := int64(5000)
	c := fixedClock(&now)
	want := []suite.HLC{{Millis: 5000}, {Millis: 5000, Counter: 1}, {Millis: 5000, Counter: 2}}
	for _, w := range want {
		if got, err := c.Next(); err != nil || got != w {
			t.Fatalf("Next = %v, %v; want %v", got, err, w)
		}
	}
	now = 6000
	if got, _ := c.Next(); got != (suite.HLC{Millis: 6000}) {
		t.Fatalf("after wall time advanced: %v", got)
	}
}

func TestClockIsStrictlyIncreasingWhenWallTimeGoesBack(t *testing.T) {
	now := int64(9000)
	c := fixedClock(&now)
	prev, _ := c.Next()
	for _, n := range []int64{8000, 9000, 1, -5, 9000, 9001, 0} {
		now = n
		got, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got.Compare(prev) <= 0 {
			t.Fatalf("HLC %v not above %v (wall %d)", got, prev, n)
		}
		if got.Millis > prev.Millis+1 && got.Millis != uint64(n) {
			t.Fatalf("HLC jumped: %v after %v", got, prev)
		}
		prev = got
	}
	if c.Last() != prev {
		t.Fatal("Last does not report the last HLC")
	}
}

func TestClockCounterOverflowAdvancesMillis(t *testing.T) {
	now := int64(100)
	c := NewClock(suite.HLC{Millis: 100, Counter: 0xfffe}, func() time.Time { return time.UnixMilli(now) })
	if got, _ := c.Next(); got != (suite.HLC{Millis: 100, Counter: 0xffff}) {
		t.Fatalf("got %v", got)
	}
	if got, _ := c.Next(); got != (suite.HLC{Millis: 101, Counter: 0}) {
		t.Fatalf("counter overflow: got %v, want 101.0", got)
	}
	if got, _ := c.Next(); got != (suite.HLC{Millis: 101, Counter: 1}) {
		t.Fatalf("after overflow: got %v", got)
	}
}

func TestClockRestartContinuesAfterLast(t *testing.T) {
	now := int64(10)
	c := NewClock(suite.HLC{Millis: 500, Counter: 7}, func() time.Time { return time.UnixMilli(now) })
	if got, _ := c.Next(); got != (suite.HLC{Millis: 500, Counter: 8}) {
		t.Fatalf("got %v", got)
	}
}

func TestClockExhausted(t *testing.T) {
	end := suite.HLC{Millis: suite.MaxHLCMillis, Counter: 0xffff}
	c := NewClock(end, func() time.Time { return time.UnixMilli(1 << 62) })
	if _, err := c.Next(); !errors.Is(err, ErrClock) {
		t.Fatalf("Next at the end of the range: %v", err)
	}
	if c.Last() != end {
		t.Fatal("failed Next changed the clock")
	}
	far := NewClock(suite.HLC{}, func() time.Time { return time.UnixMilli(1 << 62) })
	if got, err := far.Next(); err != nil || got.Millis != suite.MaxHLCMillis {
		t.Fatalf("wall time beyond 48 bits: %v, %v", got, err)
	}
}

// TestClockNeverAdoptsOtherDevices: receiving writes with HLCs far in the
// future does not move this device's clock (§9.1); the next write still
// supersedes them through its context.
func TestClockNeverAdoptsOtherDevices(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	b.now += 1_000_000_000 // b's clock is far ahead
	fut := b.do(assign(r1, "title", "future"))
	a.recv(fut)
	mine := a.do(assign(r1, "title", "mine"))
	if got := mine.Dot().HLC.Millis; got != uint64(a.now) {
		t.Fatalf("a's HLC %d follows b's clock, want wall time %d", got, a.now)
	}
	if !supersedes(mine, fut) {
		t.Fatal("a write with a smaller HLC did not supersede what it saw")
	}
}
