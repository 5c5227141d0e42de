package protocol

import (
	"context"
	"errors"
	"fmt"
)

// SyncOptions are the callbacks of Sync.
type SyncOptions struct {
	// OnMessage is called for every stored message added to the output.
	OnMessage func(EncryptedMessage)
	// OnChangeTooLarge is called for every stored change skipped because it
	// cannot fit an empty message after a pending Skip range.
	OnChangeTooLarge func(*ChangeTooLargeError)
}

// ErrSync wraps every storage failure during reconciliation; the relay
// answers it with ProtocolSyncError.
var ErrSync = errors.New("evolu: sync failed")

type syncer struct {
	ctx   context.Context
	st    Storage
	owner OwnerID
	out   *MessageBuffer
	opts  SyncOptions

	size              int
	prevUpperBound    UpperBound
	hasPrev           bool
	skip              bool
	nonSkipRangeAdded bool
	added             []EncryptedMessage // added to out, not yet reported
	// safe checks the total size before every range, so the message never
	// outgrows its limit; see Sync.
	safe bool
}

// remainingCost bounds what addRemaining adds: a Fingerprint range with
// the infinite bound (count growth, type, 12 bytes).
const remainingCost = 14

// fits reports, in safe mode, whether extra more bytes of ranges leave room
// for the remaining range.
func (s *syncer) fits(extra int) bool {
	return !s.safe || s.out.Size()+extra+remainingCost <= s.out.TotalMaxSize()
}

// report passes the added messages to OnMessage.
func (s *syncer) report() {
	if s.opts.OnMessage != nil {
		for _, m := range s.added {
			s.opts.OnMessage(m)
		}
	}
	s.added = nil
}

// Sync answers the peer's ranges into out (§Synchronization, RBSR): equal
// fingerprints and satisfied timestamp lists are skipped (adjacent skips are
// merged), differing fingerprints are split into 16 balanced buckets or
// listed as timestamps under 32 items, and the peer's timestamp lists are
// answered with our missing messages and our own list. When a limit is
// reached the rest is summarized by one Fingerprint range with the infinite
// bound, so a later round continues. It reports whether out gained anything.
func Sync(ctx context.Context, st Storage, owner OwnerID, ranges []Range, out *MessageBuffer, opts SyncOptions) (bool, error) {
	initial := out.clone()
	s := &syncer{ctx: ctx, st: st, owner: owner, out: out, opts: opts}
	changed, err := s.run(ranges)
	if !errors.Is(err, ErrTooBig) {
		return changed, err
	}
	// The answer outgrew the message where TS would throw: answer again,
	// checking the total size before every range
	// (docs/decisions/evolu-range-overflow.md).
	*out = initial.clone()
	s = &syncer{ctx: ctx, st: st, owner: owner, out: out, opts: opts, safe: true}
	return s.run(ranges)
}

func (s *syncer) run(ranges []Range) (bool, error) {
	ctx, st, owner, out := s.ctx, s.st, s.owner, s.out
	initial := out.Size()
	size, err := st.Size(ctx, owner)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrSync, err)
	}
	s.size = size
	prevIndex := 0
	for _, r := range ranges {
		upper, err := st.FindLowerBound(ctx, owner, prevIndex, size, r.UpperBound)
		if err != nil {
			return false, fmt.Errorf("%w: %w", ErrSync, err)
		}
		if upper < prevIndex {
			// Decreasing bounds are rejected by Decode; a Storage must not
			// produce them either.
			return false, fmt.Errorf("%w: lower bound %d before %d", ErrSync, upper, prevIndex)
		}
		done, newUpper, err := s.syncRange(r, prevIndex, upper)
		if err != nil {
			return false, err
		}
		if done {
			s.report()
			return true, nil
		}
		prevIndex = newUpper
		s.prevUpperBound, s.hasPrev = r.UpperBound, true
	}
	s.report()
	return out.Size() > initial, nil
}

// syncRange handles one range; done means the output is full and complete.
func (s *syncer) syncRange(r Range, lower, upper int) (done bool, newUpper int, err error) {
	switch r.Type {
	case RangeSkip:
		return false, upper, s.skipRange(r.UpperBound)
	case RangeFingerprint:
		ours, err := s.st.Fingerprint(s.ctx, s.owner, lower, upper)
		if err != nil {
			return false, 0, fmt.Errorf("%w: %w", ErrSync, err)
		}
		if ours == r.Fingerprint {
			return false, upper, s.skipRange(r.UpperBound)
		}
		if !s.out.CanSplitRange() || !s.fits(marginSplitRange+skipCost) {
			return true, 0, s.addRemaining(upper)
		}
		if err := s.coalesceSkips(); err != nil {
			return false, 0, err
		}
		if err := s.splitRange(lower, upper, r.UpperBound); err != nil {
			return false, 0, err
		}
		return false, upper, nil
	case RangeTimestamps:
		return s.timestampsRange(r, lower, upper)
	}
	return false, 0, fmt.Errorf("%w: invalid range type %d", ErrSync, r.Type)
}

func (s *syncer) skipRange(ub UpperBound) error {
	// The last range, if any non-skip was added, must be infinite.
	if s.nonSkipRangeAdded && ub.Infinite {
		return s.wrapAdd(s.out.AddSkip(InfiniteUpperBound)) // 2 bytes: within the remaining-range margin
	}
	s.skip = true
	return nil
}

func (s *syncer) coalesceSkips() error {
	s.nonSkipRangeAdded = true
	if !s.skip {
		return nil
	}
	s.skip = false
	if !s.hasPrev {
		return fmt.Errorf("%w: skip without a previous bound", ErrSync)
	}
	return s.wrapAdd(s.out.AddSkip(s.prevUpperBound))
}

// addRemaining summarizes [begin, size) by one infinite Fingerprint range.
func (s *syncer) addRemaining(begin int) error {
	fp, err := s.st.Fingerprint(s.ctx, s.owner, begin, s.size)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	return s.wrapAdd(s.out.AddFingerprint(InfiniteUpperBound, fp))
}

func (s *syncer) wrapAdd(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	return nil
}

func (s *syncer) timestampsRange(r Range, lower, upper int) (bool, int, error) {
	endBound := r.UpperBound
	need := make(map[TimestampBytes]struct{}, len(r.Timestamps))
	for _, t := range r.Timestamps {
		need[t] = struct{}{}
	}
	var ours TimestampsBuffer
	exceeded := false
	var iterErr error
	err := s.st.Iterate(s.ctx, s.owner, lower, upper, func(t TimestampBytes, index int) bool {
		var msg *EncryptedMessage
		if _, ok := need[t]; ok {
			delete(need, t)
		} else {
			change, err := s.st.ReadChange(s.ctx, s.owner, t)
			if err != nil {
				iterErr = err
				return false
			}
			msg = &EncryptedMessage{Timestamp: t.Timestamp(), Change: change}
		}
		if !s.out.CanAddTimestampsRangeAndMessage(&ours, msg) || !s.fits(s.timestampsCost(&ours, msg)) {
			if msg != nil && s.changeTooLarge(len(msg.Change)) {
				if s.opts.OnChangeTooLarge != nil {
					s.opts.OnChangeTooLarge(&ChangeTooLargeError{OwnerID: s.owner, Timestamp: msg.Timestamp, Size: len(msg.Change)})
				}
				return true
			}
			exceeded = true
			endBound = BoundAt(t)
			upper = index
			return false
		}
		if err := ours.Add(t.Timestamp()); err != nil {
			iterErr = err
			return false
		}
		if msg != nil {
			if err := s.out.AddMessage(*msg); err != nil {
				iterErr = err
				return false
			}
			s.added = append(s.added, *msg)
		}
		return true
	})
	if err == nil {
		err = iterErr
	}
	if err != nil {
		return false, 0, fmt.Errorf("%w: %w", ErrSync, err)
	}
	addRange := func() error {
		if err := s.coalesceSkips(); err != nil {
			return err
		}
		return s.wrapAdd(s.out.AddTimestamps(endBound, &ours))
	}
	if exceeded {
		if err := addRange(); err != nil {
			return false, 0, err
		}
		return true, 0, s.addRemaining(upper)
	}
	if len(need) > 0 {
		if !s.fits(s.timestampsCost(&ours, nil)) {
			return true, 0, s.addRemaining(lower)
		}
		return false, upper, addRange()
	}
	return false, upper, s.skipRange(r.UpperBound)
}

// skipCost bounds a Skip range with a finite bound that coalesceSkips may
// add first: a type and a timestamp.
const skipCost = 1 + marginTimestamp

// timestampsCost bounds what a Timestamps range holding ts (after a pending
// Skip) and m add.
func (s *syncer) timestampsCost(ts *TimestampsBuffer, m *EncryptedMessage) int {
	c := ts.Len() + marginTimestampRange + skipCost
	if m != nil {
		c += marginAddMessage + len(m.Change)
	}
	return c
}

// changeTooLarge reports whether a change of n bytes cannot fit an empty
// message of this kind after a pending Skip range: the header, an empty
// messages section, a Skip range with a finite bound, and a Timestamps range
// with one timestamp, all with the buffer's safe margins. Such a change can
// never be sent, so sync skips it (docs/decisions/evolu-change-too-large.md).
func (s *syncer) changeTooLarge(n int) bool {
	const (
		emptyMessages   = 1
		skipRangeBytes  = 1 + marginTimestamp + 1 + marginRemainingRange
		timestampsRange = 1 + marginTimestamp + marginTimestampRange
	)
	fixed := s.out.HeaderSize() + emptyMessages + skipRangeBytes + timestampsRange + marginAddMessage
	return fixed+n > s.out.TotalMaxSize()
}

func (s *syncer) splitRange(lower, upper int, ub UpperBound) error {
	if err := splitRange(s.ctx, s.st, s.owner, lower, upper, ub, s.out); err != nil {
		return fmt.Errorf("%w: %w", ErrSync, err)
	}
	return nil
}

// splitRange adds the ranges describing [lower, upper): one Timestamps range
// under 32 items, else 16 balanced Fingerprint ranges.
func splitRange(ctx context.Context, st Storage, owner OwnerID, lower, upper int, ub UpperBound, out *MessageBuffer) error {
	buckets, ok := balancedBuckets(upper - lower)
	if !ok {
		var tb TimestampsBuffer
		var addErr error
		err := st.Iterate(ctx, owner, lower, upper, func(t TimestampBytes, _ int) bool {
			addErr = tb.Add(t.Timestamp())
			return addErr == nil
		})
		if err == nil {
			err = addErr
		}
		if err != nil {
			return err
		}
		return out.AddTimestamps(ub, &tb)
	}
	if lower > 0 {
		shifted := make([]int, 0, len(buckets)+1)
		shifted = append(shifted, lower)
		for _, b := range buckets {
			shifted = append(shifted, b+lower)
		}
		buckets = shifted
	}
	rs, err := st.FingerprintRanges(ctx, owner, buckets, ub)
	if err != nil {
		return err
	}
	if lower > 0 {
		rs = rs[1:]
	}
	for _, r := range rs {
		if err := out.AddRange(r); err != nil {
			return err
		}
	}
	return nil
}
