package record

import (
	"fmt"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Clock is one device's hybrid logical clock (§9.1). Its values are strictly
// increasing. It never adopts another device's clock values: causality is
// carried by context and base, so nothing a peer sends moves this clock.
//
// A Clock is safe for concurrent use. The device persists Last() and passes
// it to NewClock after a restart, so HLCs keep increasing across restarts.
type Clock struct {
	now  func() time.Time
	mu   sync.Mutex
	last suite.HLC
}

// NewClock returns a clock that continues after last (the zero HLC for a new
// device) and reads wall time from now (time.Now when nil). Tests inject
// their own now.
func NewClock(last suite.HLC, now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now, last: last}
}

// Last returns the most recent HLC the clock issued (or was started with).
func (c *Clock) Last() suite.HLC {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Next issues the HLC for a new write (§9.1): (max(now, last.millis),
// counter), the counter restarting at 0 when millis advanced and incremented
// when it did not; if the counter would pass 65,535, millis advances by one
// and the counter restarts at 0. Wall times before 1970 count as 0 and wall
// times beyond 48 bits as 2^48-1. It fails with ErrClock only when millis
// would have to pass 2^48-1.
func (c *Clock) Next() (suite.HLC, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now().UnixMilli()
	var ms uint64
	switch {
	case now < 0:
		ms = 0
	case uint64(now) > suite.MaxHLCMillis:
		ms = suite.MaxHLCMillis
	default:
		ms = uint64(now)
	}
	next := nextHLC(c.last, ms)
	if next.Compare(c.last) <= 0 || next.Millis > suite.MaxHLCMillis {
		return suite.HLC{}, fmt.Errorf("%w: last %d.%d", ErrClock, c.last.Millis, c.last.Counter)
	}
	c.last = next
	return next, nil
}

// nextHLC is the pure step of §9.1. A result not above last (only possible
// at the end of the millis range) is rejected by the caller.
func nextHLC(last suite.HLC, now uint64) suite.HLC {
	if now > last.Millis {
		return suite.HLC{Millis: now}
	}
	if last.Counter == 0xffff {
		return suite.HLC{Millis: last.Millis + 1}
	}
	return suite.HLC{Millis: last.Millis, Counter: last.Counter + 1}
}
