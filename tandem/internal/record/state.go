package record

import (
	"bytes"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// register holds the kept writes of one register: the writes no other seen
// write of the register supersedes (§9.2). Because supersession is a strict
// partial order, a write superseded by any seen write is superseded by a kept
// one, so the kept set alone decides every later arrival.
type register struct {
	kept []*Write
}

// has reports whether the write with this ID is kept.
func (r *register) has(id [32]byte) bool {
	for _, k := range r.kept {
		if k.id == id {
			return true
		}
	}
	return false
}

// covered reports whether a kept write supersedes x.
func (r *register) covered(x *Write) bool {
	for _, k := range r.kept {
		if supersedes(k, x) {
			return true
		}
	}
	return false
}

// add keeps x unless it is already kept or superseded, dropping the kept
// writes x supersedes. It reports whether the kept set changed.
//
// One write ID can arrive with several valid signatures: Ed25519 is
// deterministic only for honest signers, and a signer may pick any nonce.
// The state keeps the smallest signature bytes, so replicas that saw the
// same signatures encode identically whatever the order.
func (r *register) add(x *Write) bool {
	for i, k := range r.kept {
		if k.id == x.id {
			if bytes.Compare(x.sig, k.sig) < 0 {
				r.kept[i] = x
				return true
			}
			return false
		}
		if supersedes(k, x) {
			return false
		}
	}
	n := 0
	for _, k := range r.kept {
		if !supersedes(x, k) {
			r.kept[n] = k
			n++
		}
	}
	clear(r.kept[n:])
	r.kept = append(r.kept[:n], x)
	return true
}

// field is one field of a record: its assign register and, for set ops, one
// register per element (§9.2: "per element, the add and remove writes form a
// register of their own"). A field that both assign and set writes use keeps
// both; see docs/decisions/tandem-record-registers.md.
type field struct {
	assign register
	elems  map[string]*register
}

// rec is one record's state. Once any delete is kept, the record is a
// tombstone: only its delete register remains and every other write of the
// record is dropped on arrival (§9.2, §12.3; see
// docs/decisions/tandem-record-tombstone.md).
type rec struct {
	deletes register
	fields  map[string]*field
}

func (r *rec) deleted() bool { return len(r.deletes.kept) > 0 }

// State is the merged state of one scope (a collection or a home): for every
// record, the valid writes no other valid write supersedes (§9.3). Merging is
// set union followed by dropping superseded writes, so the state is a join
// semilattice: the order, duplicates and replays of arrivals never matter.
//
// A State is not safe for concurrent use.
type State struct {
	v       *Validator
	records map[[16]byte]*rec
	writes  int
}

// NewState returns an empty state whose writes are checked by v.
func NewState(v *Validator) *State {
	return &State{v: v, records: make(map[[16]byte]*rec)}
}

// Validator returns the validator the state checks writes with.
func (s *State) Validator() *Validator { return s.v }

// Ingest validates a received write (Validator.Validate) and adds it. It
// returns the write and whether the state changed. A rejected write returns
// an error and changes nothing.
func (s *State) Ingest(body *suite.WriteBody, sig []byte, epoch uint64) (*Write, bool, error) {
	w, err := s.v.Validate(body, sig, epoch)
	if err != nil {
		return nil, false, err
	}
	return w, s.Add(w), nil
}

// Add merges one validated write into the state (§9.3) and reports whether
// the state changed: false for a duplicate, for a write that a kept write
// supersedes, and for a non-delete write to a deleted record. It refuses
// (false, no change) a Write that no constructor of this package made (a
// literal or zero value) and a write of another scope than the state's.
func (s *State) Add(w *Write) bool {
	if w == nil || !w.ok || w.body.Scope != s.v.rules.Scope {
		return false
	}
	r := s.records[w.body.Record]
	if r == nil {
		r = &rec{}
		s.records[w.body.Record] = r
	}
	if w.body.Op == suite.OpDelete {
		before := len(r.deletes.kept)
		if !r.deletes.add(w) {
			return false
		}
		s.writes += len(r.deletes.kept) - before
		if r.fields != nil {
			for _, f := range r.fields {
				s.writes -= len(f.assign.kept)
				for _, e := range f.elems {
					s.writes -= len(e.kept)
				}
			}
			r.fields = nil // the tombstone drops the record's content for good
		}
		return true
	}
	if r.deleted() {
		return false
	}
	if r.fields == nil {
		r.fields = make(map[string]*field)
	}
	f := r.fields[w.body.Field]
	if f == nil {
		f = &field{}
		r.fields[w.body.Field] = f
	}
	reg := &f.assign
	if w.body.Op != suite.OpAssign {
		if f.elems == nil {
			f.elems = make(map[string]*register)
		}
		reg = f.elems[string(w.body.Element)]
		if reg == nil {
			reg = &register{}
			f.elems[string(w.body.Element)] = reg
		}
	}
	before := len(reg.kept)
	if !reg.add(w) {
		return false
	}
	s.writes += len(reg.kept) - before
	return true
}

// Merge adds every kept write of o to s (§9.3). Both states must hold writes
// of the same scope, checked by validators with the same rules.
func (s *State) Merge(o *State) {
	for _, r := range o.records {
		for _, w := range r.deletes.kept {
			s.Add(w)
		}
		for _, f := range r.fields {
			for _, w := range f.assign.kept {
				s.Add(w)
			}
			for _, e := range f.elems {
				for _, w := range e.kept {
					s.Add(w)
				}
			}
		}
	}
}

// Clone returns an independent copy of s sharing its immutable writes.
func (s *State) Clone() *State {
	c := NewState(s.v)
	c.Merge(s)
	return c
}

// Len returns the number of kept writes.
func (s *State) Len() int { return s.writes }

// register returns the register w belongs to, or nil if none exists yet.
func (s *State) registerOf(w *Write) *register {
	r := s.records[w.body.Record]
	if r == nil {
		return nil
	}
	if w.body.Op == suite.OpDelete {
		return &r.deletes
	}
	f := r.fields[w.body.Field]
	if f == nil {
		return nil
	}
	if w.body.Op == suite.OpAssign {
		return &f.assign
	}
	return f.elems[string(w.body.Element)]
}

// Superseded reports whether s makes w redundant without holding it: a kept
// write of w's register supersedes w, or w edits a record that s holds as
// deleted. A write s keeps is not superseded.
func (s *State) Superseded(w *Write) bool {
	if r := s.records[w.body.Record]; r != nil && r.deleted() && w.body.Op != suite.OpDelete {
		return true
	}
	reg := s.registerOf(w)
	return reg != nil && !reg.has(w.id) && reg.covered(w)
}

// Holds reports whether s keeps w.
func (s *State) Holds(w *Write) bool {
	reg := s.registerOf(w)
	return reg != nil && reg.has(w.id)
}

// Dominates reports whether every write in ws is held by s or superseded by
// a write s holds: the test of §10.7 for a hub message whose writes are ws
// against a message holding s.
func (s *State) Dominates(ws []*Write) bool {
	for _, w := range ws {
		if !s.Holds(w) && !s.Superseded(w) {
			return false
		}
	}
	return true
}
