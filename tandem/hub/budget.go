package hub

import (
	"fmt"
	"sync"
	"time"
)

// Rate is N events per Per, with bursts of up to N.
type Rate struct {
	N   int
	Per time.Duration
}

// DefaultRates is the budget of a device (docs/hub-providers.md, "Rate
// budget"): 10 logins at once, then one a minute; 600 appended messages at
// once, then ten a minute. Enough for a first sync and normal use, far
// below what providers are known to tolerate, and slow enough in a loop (a
// reconnect storm, a publish retried forever) that no provider locks the
// account.
func DefaultRates() (logins, appends Rate) {
	return Rate{N: 10, Per: 10 * time.Minute}, Rate{N: 600, Per: time.Hour}
}

// NewDefaultRateBudget is NewRateBudget(DefaultRates()).
func NewDefaultRateBudget() *RateBudget { return NewRateBudget(DefaultRates()) }

// RateBudget bounds how fast a device logs in to its hub (an IMAP login,
// a JMAP session fetch) and appends messages, so that no loop can trip a
// provider's limits. It is a token bucket per kind; an event over budget
// is refused at once with a [BudgetError] (which matches
// [ErrUnavailable]: retry later), never queued. Share one RateBudget
// among all the Stores of a device, so that opening a new Store does not
// reset it. Safe for concurrent use.
type RateBudget struct {
	mu      sync.Mutex
	logins  bucket
	appends bucket
}

// NewRateBudget returns a budget of logins and appends. A Rate with N <= 0
// means no limit for that kind.
func NewRateBudget(logins, appends Rate) *RateBudget {
	now := time.Now()
	return &RateBudget{logins: newBucket(logins, now), appends: newBucket(appends, now)}
}

// Login takes one login from the budget.
func (b *RateBudget) Login() error { return b.take(&b.logins, 1, "login") }

// Append takes n appends from the budget, all or none.
func (b *RateBudget) Append(n int) error { return b.take(&b.appends, n, "append") }

func (b *RateBudget) take(k *bucket, n int, what string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if wait := k.take(n, time.Now()); wait > 0 {
		return &BudgetError{What: what, N: n, RetryAfter: wait}
	}
	return nil
}

// BudgetError is an event the [RateBudget] refused. It matches
// [ErrUnavailable].
type BudgetError struct {
	What       string // "login" or "append"
	N          int    // how many were asked for
	RetryAfter time.Duration
}

// Error implements error.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("hub: %s rate budget spent (%d asked): try again in %v", e.What, e.N, e.RetryAfter.Round(time.Second))
}

// Is reports whether target is [ErrUnavailable].
func (e *BudgetError) Is(target error) bool { return target == ErrUnavailable }

type bucket struct {
	rate   Rate
	tokens float64
	last   time.Time
}

func newBucket(r Rate, now time.Time) bucket { return bucket{rate: r, tokens: float64(r.N), last: now} }

// take removes n tokens, or returns how long until n are there.
func (k *bucket) take(n int, now time.Time) time.Duration {
	if k.rate.N <= 0 || k.rate.Per <= 0 {
		return 0
	}
	perToken := float64(k.rate.Per) / float64(k.rate.N)
	k.tokens = min(float64(k.rate.N), k.tokens+float64(now.Sub(k.last))/perToken)
	k.last = now
	if n > k.rate.N {
		return k.rate.Per // can never fit: the caller must ask for less
	}
	if k.tokens >= float64(n) {
		k.tokens -= float64(n)
		return 0
	}
	return time.Duration((float64(n) - k.tokens) * perToken)
}
