// Package retry runs a hub call again, with backoff, when the server
// answered that it failed for now (IMAP NO [SERVERBUG], [UNAVAILABLE],
// [INUSE], [LIMIT]; JMAP serverFail, serverUnavailable, HTTP 5xx or 429).
// Both hub bindings use it (docs/decisions/tandem-hub-transient.md).
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy bounds the retries of one call. The zero Policy is what the
// bindings use: 6 calls, waits of about 0.1, 0.2, 0.4, 0.8 and 1.6 s (3.1 s
// in all, each shortened by up to a quarter at random).
type Policy struct {
	Attempts int           // calls in all, the first one included
	First    time.Duration // the wait before the second call; it doubles
	Max      time.Duration // the longest single wait
}

func (p Policy) orDefault() Policy {
	if p.Attempts <= 0 {
		return Policy{Attempts: 6, First: 100 * time.Millisecond, Max: 2 * time.Second}
	}
	return p
}

// Do calls f until it succeeds, fails with an error transient does not
// accept, the attempts are spent, or ctx would end before the next wait is
// over. It returns f's last error: a retried call that still fails returns
// the server's transient answer, never the context's error, unless f itself
// returned that.
func (p Policy) Do(ctx context.Context, transient func(error) bool, f func() error) error {
	p = p.orDefault()
	wait := p.First
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt >= p.Attempts || !transient(err) || ctx.Err() != nil {
			return err
		}
		d := jitter(wait)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return err // no time left for another try: report what the server said
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, p.Max)
	}
}

// jitter spreads d over [0.75d, d], so that clients a server failure hit at
// once do not all come back at once.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}
