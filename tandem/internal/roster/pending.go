package roster

import (
	"errors"
	"fmt"
	"time"
)

// HoldError is the error of a held write (§8.3): it wraps ErrHeld and the
// reason, and names the statement or epoch whose arrival may release it.
type HoldError struct {
	Need   [32]byte // the statement ID (or, for ErrNoInventory, the epoch ID) awaited
	Reason error    // ErrUnknownStatement, ErrNotEpoch or ErrNoInventory
	Detail string
}

func (e *HoldError) Error() string {
	return fmt.Sprintf("%v: %v: %x %s", ErrHeld, e.Reason, e.Need, e.Detail)
}

// Unwrap makes errors.Is match ErrHeld and the reason.
func (e *HoldError) Unwrap() []error { return []error{ErrHeld, e.Reason} }

func held(need [32]byte, reason error, detail string) error {
	return &HoldError{Need: need, Reason: reason, Detail: detail}
}

// Pending holds items (writes, typically) that wait for a dependency named
// by a HoldError, within a count limit and a holding time (§8.3, §9.4).
// It is not safe for concurrent use.
type Pending[T any] struct {
	max     int
	holdFor time.Duration
	now     func() time.Time
	byNeed  map[[32]byte][]pendingItem[T]
	count   int
}

type pendingItem[T any] struct {
	item   T
	reason error
	at     time.Time
}

// NewPending returns a Pending holding at most max items (Limits'
// MaxHeldStatements default if max ≤ 0) for holdFor (30 days if ≤ 0), on
// clock now (time.Now if nil).
func NewPending[T any](max int, holdFor time.Duration, now func() time.Time) *Pending[T] {
	l := Limits{MaxHeldStatements: max, HoldFor: holdFor}.withDefaults()
	if now == nil {
		now = time.Now
	}
	return &Pending[T]{max: l.MaxHeldStatements, holdFor: l.HoldFor, now: now, byNeed: map[[32]byte][]pendingItem[T]{}}
}

// Hold keeps item until Release(need). It fails with ErrLimit when full.
func (p *Pending[T]) Hold(need [32]byte, item T) error { return p.hold(need, nil, item) }

func (p *Pending[T]) hold(need [32]byte, reason error, item T) error {
	if p.count >= p.max {
		return fmt.Errorf("%w: %d items held", ErrLimit, p.count)
	}
	p.byNeed[need] = append(p.byNeed[need], pendingItem[T]{item, reason, p.now()})
	p.count++
	return nil
}

// HoldFor keeps item if err is a HoldError and reports whether it did;
// the error is ErrLimit when full.
func (p *Pending[T]) HoldFor(err error, item T) (bool, error) {
	var h *HoldError
	if !errors.As(err, &h) {
		return false, nil
	}
	return true, p.hold(h.Need, h.Reason, item)
}

// ReleaseIf removes and returns every item whose dependency ready reports
// resolved; pass Chain.Resolved to release what a chain can now judge.
func (p *Pending[T]) ReleaseIf(ready func(need [32]byte, reason error) bool) []T {
	var out []T
	for need, items := range p.byNeed {
		kept := items[:0]
		for _, it := range items {
			if ready(need, it.reason) {
				out = append(out, it.item)
				continue
			}
			kept = append(kept, it)
		}
		p.count -= len(items) - len(kept)
		if len(kept) == 0 {
			delete(p.byNeed, need)
		} else {
			p.byNeed[need] = kept
		}
	}
	return out
}

// Release removes and returns the items waiting for need, oldest first.
func (p *Pending[T]) Release(need [32]byte) []T {
	items := p.byNeed[need]
	delete(p.byNeed, need)
	p.count -= len(items)
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = it.item
	}
	return out
}

// Len is the number of items held.
func (p *Pending[T]) Len() int { return p.count }

// Expire drops items held longer than the holding time and returns how
// many. Eviction is local: the hub messages that carried them stay (§9.4).
func (p *Pending[T]) Expire() int {
	cutoff := p.now().Add(-p.holdFor)
	n := 0
	for need, items := range p.byNeed {
		kept := items[:0]
		for _, it := range items {
			if it.at.Before(cutoff) {
				n++
				continue
			}
			kept = append(kept, it)
		}
		if len(kept) == 0 {
			delete(p.byNeed, need)
		} else {
			p.byNeed[need] = kept
		}
	}
	p.count -= n
	return n
}
