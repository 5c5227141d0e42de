package engine

import (
	"encoding/binary"
	"slices"
)

// reg is one key's register: the value of the write that wins it, or a
// tombstone when that write was a deletion. Writes resolve last-writer-wins
// on (Lamport, Actor), which every replica computes identically.
type reg struct {
	Key     string
	Value   []byte
	Deleted bool
	Lamport uint64
	Dot     dot
}

// beats reports whether r wins over s on every replica.
func (r reg) beats(s reg) bool {
	if r.Lamport != s.Lamport {
		return r.Lamport > s.Lamport
	}
	return r.Dot.Actor > s.Dot.Actor
}

// Bounds on decoded registers; anything larger is Unreadable.
const (
	maxKeyLen   = 1024
	maxValueLen = 1 << 24
)

// Byte layout of a register:
//
//	uvarint len, key | byte 0 (value) or 1 (tombstone) | [uvarint len, value]
//	uvarint lamport | uvarint len, actor | uvarint counter
func appendReg(b []byte, r reg) []byte {
	b = appendStr(b, r.Key)
	if r.Deleted {
		b = append(b, 1)
	} else {
		b = append(b, 0)
		b = appendStr(b, string(r.Value))
	}
	b = binary.AppendUvarint(b, r.Lamport)
	b = appendStr(b, r.Dot.Actor)
	return binary.AppendUvarint(b, r.Dot.Counter)
}

func (r *reader) reg() reg {
	var g reg
	g.Key = r.str(maxKeyLen)
	switch r.byte() {
	case 0:
		g.Value = r.bytes(maxValueLen)
	case 1:
		g.Deleted = true
	default:
		r.fail()
	}
	g.Lamport = r.clock()
	g.Dot.Actor = r.str(maxActorLen)
	g.Dot.Counter = r.clock()
	if g.Dot.Actor == "" || g.Dot.Counter == 0 || g.Lamport == 0 {
		r.fail()
	}
	return g
}

func (r *reader) regs(within vv) []reg {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	out := make([]reg, 0, n)
	seen := map[string]bool{}
	for i := uint64(0); i < n && r.err == nil; i++ {
		g := r.reg()
		if seen[g.Key] || !within.covers(g.Dot) {
			r.fail()
		}
		seen[g.Key] = true
		out = append(out, g)
	}
	return out
}

func appendRegs(b []byte, regs []reg) []byte {
	slices.SortFunc(regs, func(x, y reg) int {
		switch {
		case x.Key < y.Key:
			return -1
		case x.Key > y.Key:
			return 1
		}
		return 0
	})
	b = binary.AppendUvarint(b, uint64(len(regs)))
	for _, g := range regs {
		b = appendReg(b, g)
	}
	return b
}

// delta is a change: the winning registers a peer at From lacks, and To,
// the counts the receiver holds once it is merged. From and To name only
// the actors the delta advances.
//
// Byte layout: 'd' 1 | vv From | vv To | uvarint n | n registers.
type delta struct {
	From, To vv
	Regs     []reg
}

func (d delta) encode() []byte {
	b := []byte{'d', 1}
	b = appendVV(b, d.From)
	b = appendVV(b, d.To)
	return appendRegs(b, d.Regs)
}

func appendVV(b []byte, v vv) []byte {
	e := v.encode()
	if len(e) == 0 {
		return binary.AppendUvarint(b, 0)
	}
	return append(b, e...)
}

func decodeDelta(b []byte) (delta, error) {
	r := &reader{b: b}
	if r.byte() != 'd' || r.byte() != 1 {
		return delta{}, errCorrupt
	}
	var d delta
	d.From = r.vv()
	d.To = r.vv()
	d.Regs = r.regs(d.To)
	r.end()
	if r.err != nil {
		return delta{}, r.err
	}
	for _, g := range d.Regs {
		if d.From.covers(g.Dot) {
			return delta{}, errCorrupt
		}
	}
	return d, nil
}

// snapshot is a whole document: every register, tombstones included, and
// the compaction frontier (Base, BaseLamport, the keys whose tombstones
// compaction dropped).
//
// Byte layout: 's' 1 | vv VV | vv Base | uvarint BaseLamport |
// uvarint n, n keys (uvarint len, key) | uvarint m | m registers.
type snapshot struct {
	VV, Base    vv
	BaseLamport uint64
	Trimmed     []string
	Regs        []reg
}

func (s snapshot) encode() []byte {
	b := []byte{'s', 1}
	b = appendVV(b, s.VV)
	b = appendVV(b, s.Base)
	b = binary.AppendUvarint(b, s.BaseLamport)
	slices.Sort(s.Trimmed)
	b = binary.AppendUvarint(b, uint64(len(s.Trimmed)))
	for _, k := range s.Trimmed {
		b = appendStr(b, k)
	}
	return appendRegs(b, s.Regs)
}

func decodeSnapshot(b []byte) (snapshot, error) {
	r := &reader{b: b}
	if r.byte() != 's' || r.byte() != 1 {
		return snapshot{}, errCorrupt
	}
	var s snapshot
	s.VV = r.vv()
	s.Base = r.vv()
	s.BaseLamport = r.clock()
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		s.Trimmed = append(s.Trimmed, r.str(maxKeyLen))
	}
	s.Regs = r.regs(s.VV)
	r.end()
	if r.err != nil {
		return snapshot{}, r.err
	}
	if !s.Base.le(s.VV) {
		return snapshot{}, errCorrupt
	}
	return s, nil
}
