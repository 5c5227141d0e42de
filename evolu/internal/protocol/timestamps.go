package protocol

import (
	"errors"
	"fmt"
	"slices"
)

// TimestampsBuffer encodes timestamps incrementally like the TS
// createTimestampsBuffer: a count, delta-encoded millis, and run-length
// encoded counters and NodeIds. Timestamps must be added in non-decreasing
// millis order; an infinite bound only increments the count.
type TimestampsBuffer struct {
	count      uint64
	millis     []byte
	prevMillis uint64
	counters   rle
	nodeIDs    rle
}

// rle is the TS createRunLengthEncoder: each value is followed by its run
// length; a repeated value rewrites the last run in place.
type rle struct {
	buf     []byte
	prevLen int
	prev    uint64
	prevNID NodeID
	has     bool
	run     uint64
}

func (r *rle) addCounter(v uint16) {
	if r.has && r.prev == uint64(v) {
		r.run++
		r.buf = r.buf[:r.prevLen]
	} else {
		r.prev, r.has, r.run = uint64(v), true, 1
	}
	r.prevLen = len(r.buf)
	r.buf = AppendNonNegativeInt(r.buf, uint64(v))
	r.buf = AppendNonNegativeInt(r.buf, r.run)
}

func (r *rle) addNodeID(v NodeID) {
	if r.has && r.prevNID == v {
		r.run++
		r.buf = r.buf[:r.prevLen]
	} else {
		r.prevNID, r.has, r.run = v, true, 1
	}
	r.prevLen = len(r.buf)
	r.buf = append(r.buf, v[:]...)
	r.buf = AppendNonNegativeInt(r.buf, r.run)
}

var errMillisDecrease = errors.New("evolu: timestamps must be added in non-decreasing millis order")

// Add appends t. It fails when t.Millis is smaller than the previous one.
func (b *TimestampsBuffer) Add(t Timestamp) error {
	if t.Millis < b.prevMillis {
		return errMillisDecrease
	}
	b.count++
	b.millis = AppendNonNegativeInt(b.millis, t.Millis-b.prevMillis)
	b.prevMillis = t.Millis
	b.counters.addCounter(t.Counter)
	b.nodeIDs.addNodeID(t.NodeID)
	return nil
}

// clone returns a deep copy of b.
func (b *TimestampsBuffer) clone() TimestampsBuffer {
	c := *b
	c.millis = slices.Clone(b.millis)
	c.counters.buf = slices.Clone(b.counters.buf)
	c.nodeIDs.buf = slices.Clone(b.nodeIDs.buf)
	return c
}

// AddInfinite counts the infinite upper bound, which has no encoding.
func (b *TimestampsBuffer) AddInfinite() { b.count++ }

// Count is the number of timestamps and infinite bounds added.
func (b *TimestampsBuffer) Count() uint64 { return b.count }

// Len is the encoded length including the count.
func (b *TimestampsBuffer) Len() int {
	return nonNegativeIntLen(b.count) + len(b.millis) + len(b.counters.buf) + len(b.nodeIDs.buf)
}

// Append appends the encoding, count first.
func (b *TimestampsBuffer) Append(dst []byte) []byte {
	dst = AppendNonNegativeInt(dst, b.count)
	dst = append(dst, b.millis...)
	dst = append(dst, b.counters.buf...)
	return append(dst, b.nodeIDs.buf...)
}

// appendWithoutCount appends the encoding of range bounds, whose count the
// ranges count implies.
func (b *TimestampsBuffer) appendWithoutCount(dst []byte) []byte {
	dst = append(dst, b.millis...)
	dst = append(dst, b.counters.buf...)
	return append(dst, b.nodeIDs.buf...)
}

// decodeTimestamps reads n timestamps (the count already read).
func (d *decoder) timestamps(n uint64) ([]Timestamp, error) {
	// Each timestamp takes at least one millis byte: a larger count is a lie
	// that must not allocate.
	if n > uint64(d.remaining()) {
		return nil, errTruncated
	}
	ts := make([]Timestamp, n)
	var millis uint64
	for i := range ts {
		delta, err := d.nonNegativeInt()
		if err != nil {
			return nil, err
		}
		millis += delta
		if millis > MaxMillis {
			return nil, fmt.Errorf("millis %d exceeds the maximum", millis)
		}
		ts[i].Millis = millis
	}
	for i := uint64(0); i < n; {
		v, err := d.nonNegativeInt()
		if err != nil {
			return nil, err
		}
		if v > MaxCounter {
			return nil, fmt.Errorf("counter %d exceeds the maximum", v)
		}
		run, err := d.runLength(n - i)
		if err != nil {
			return nil, err
		}
		for ; run > 0; run-- {
			ts[i].Counter = uint16(v)
			i++
		}
	}
	for i := uint64(0); i < n; {
		p, err := d.bytes(8)
		if err != nil {
			return nil, err
		}
		run, err := d.runLength(n - i)
		if err != nil {
			return nil, err
		}
		var nid NodeID
		copy(nid[:], p)
		for ; run > 0; run-- {
			ts[i].NodeID = nid
			i++
		}
	}
	return ts, nil
}

func (d *decoder) runLength(remaining uint64) (uint64, error) {
	run, err := d.nonNegativeInt()
	if err != nil {
		return 0, err
	}
	if run == 0 {
		return 0, errors.New("invalid RLE encoding: runLength must be positive")
	}
	if run > remaining {
		return 0, fmt.Errorf("invalid RLE encoding: runLength %d exceeds remaining %d", run, remaining)
	}
	return run, nil
}
