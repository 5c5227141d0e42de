package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// vv is a version vector: for each actor, the count of its changes held.
// Every count is contiguous: holding n means holding changes 1..n.
type vv map[string]uint64

// dot names one change: the actor's n-th.
type dot struct {
	Actor   string
	Counter uint64
}

func (v vv) covers(d dot) bool { return v[d.Actor] >= d.Counter }

// le reports whether v ≤ w pointwise.
func (v vv) le(w vv) bool {
	for a, n := range v {
		if w[a] < n {
			return false
		}
	}
	return true
}

func (v vv) merge(w vv) {
	for a, n := range w {
		if n > v[a] {
			v[a] = n
		}
	}
}

func (v vv) clone() vv {
	c := make(vv, len(v))
	for a, n := range v {
		c[a] = n
	}
	return c
}

// Byte layout of a version (the base64 value of a docs entry):
//
//	empty                         the empty version
//	uvarint n, then n times:      actors sorted bytewise, no duplicates
//	  uvarint len, actor bytes    1..64 bytes
//	  uvarint count               > 0
func (v vv) encode() []byte {
	var b []byte
	actors := make([]string, 0, len(v))
	for a, n := range v {
		if n > 0 {
			actors = append(actors, a)
		}
	}
	if len(actors) == 0 {
		return []byte{}
	}
	slices.Sort(actors)
	b = binary.AppendUvarint(b, uint64(len(actors)))
	for _, a := range actors {
		b = appendStr(b, a)
		b = binary.AppendUvarint(b, v[a])
	}
	return b
}

var errCorrupt = errors.New("datasync/engine: corrupt encoding")

const maxActorLen = 64

func (r *reader) vv() vv {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := make(vv, n)
	prev := ""
	for i := uint64(0); i < n && r.err == nil; i++ {
		a := r.str(maxActorLen)
		c := r.clock()
		if a == "" || c == 0 || (i > 0 && a <= prev) {
			r.fail()
		}
		v[a] = c
		prev = a
	}
	return v
}

func decodeVV(b []byte) (vv, error) {
	if len(b) == 0 {
		return vv{}, nil
	}
	r := &reader{b: b}
	v := r.vv()
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

// reader decodes the engine's byte layouts; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() { r.failWith(errCorrupt) }

func (r *reader) failWith(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// clock reads a counter or Lamport clock, refusing one past MaxClock.
func (r *reader) clock() uint64 {
	n := r.uvarint()
	if n > MaxClock {
		r.failWith(ErrClockRange)
		return 0
	}
	return n
}

func (r *reader) uvarint() uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bytes(max int) []byte {
	n := r.uvarint()
	if n > uint64(max) || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	out := slices.Clone(r.b[:n])
	r.b = r.b[n:]
	return out
}

func (r *reader) str(max int) string { return string(r.bytes(max)) }

func (r *reader) end() {
	if len(r.b) != 0 {
		r.fail()
	}
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// MaxClock is the largest change counter and Lamport clock the engine
// holds, reads or writes (2^53−1, exact in every JSON reader). A peer's
// change or snapshot carrying a larger one is Unreadable (ErrClockRange),
// refused before anything is stored; a local edit that would pass it fails
// with ErrClockRange and changes nothing. See
// docs/decisions/datasync-kv-clock.md.
const MaxClock = 1<<53 - 1

// ErrClockRange means a counter or Lamport clock is past [MaxClock].
var ErrClockRange = fmt.Errorf("%w: clock past %d", errCorrupt, uint64(MaxClock))
