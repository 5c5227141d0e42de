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
// writes x supersedes. It reports whether the kept set changed, and whether
// it changed only by gaining x: nothing dropped or replaced, so the kept IDs
// grew by x's alone (what lets State keep rec.ids up to date).
//
// One write ID can arrive with several valid signatures: Ed25519 is
// deterministic only for honest signers, and a signer may pick any nonce.
// The state keeps the smallest signature bytes, so replicas that saw the
// same signatures encode identically whatever the order.
func (r *register) add(x *Write) (changed, grew bool) {
	for i, k := range r.kept {
		if k.id == x.id {
			if bytes.Compare(x.sig, k.sig) < 0 {
				r.kept[i] = x
				return true, false
			}
			return false, false
		}
		if supersedes(k, x) {
			return false, false
		}
	}
	n := 0
	for _, k := range r.kept {
		if !supersedes(x, k) {
			r.kept[n] = k
			n++
		}
	}
	grew = n == len(r.kept)
	clear(r.kept[n:])
	r.kept = append(r.kept[:n], x)
	return true, grew
}

// field is one field of a record: its assign register and, for set ops, one
// register per element (§9.2: "per element, the add and remove writes form a
// register of their own"). A field that both assign and set writes use keeps
// both; see docs/decisions/tandem-record-registers.md.
type field struct {
	assign register
	elems  map[string]*register
}

// rec is one record's state. Deletes are writes to a field like any other
// (§9.2): one register per field name. Once any delete is kept, the record
// is a tombstone: it shows and publishes only its deletes (§9.2, §12.3).
// Its field writes are still merged, hidden, because a valid "_name" write
// arriving later would prove the record named, and a delete of a named
// record invalid (§7.3); the record then shows exactly what a device that
// saw the name first shows. A named record keeps no delete. See
// docs/decisions/tandem-record-tombstone.md.
type rec struct {
	deletes map[string]*register // field → its delete register
	fields  map[string]*field
	// ids is KeptIDs's answer: kept up to date while the record's kept
	// writes only grow (a new record, a new field: what a sync or a reopen
	// mostly does), made nil by any other change and then built again when
	// asked (State.add).
	ids [][32]byte
}

func (r *rec) deleted() bool { return len(r.deletes) > 0 }

// named reports whether the record holds a valid "_name" write, which
// proves that its ID is NamedRecordID of that name (§7.3): the validator
// admits "_name" only as an assign whose value hashes to the record ID.
func (r *rec) named() bool {
	f := r.fields[nameField]
	return f != nil && len(f.assign.kept) > 0
}

// nameField is the field a named record carries its name in (§7.3).
const nameField = "_name"

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
	epochs  epochRange // bounds on the retained writes' epochs (EpochRange)
}

// epochRange is a lower and an upper bound on epochs; zero is empty.
type epochRange struct {
	lo, hi uint64
	any    bool
}

func (e *epochRange) widen(epoch uint64) {
	if !e.any {
		*e = epochRange{epoch, epoch, true}
		return
	}
	e.lo, e.hi = min(e.lo, epoch), max(e.hi, epoch)
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
// the writes the state retains changed (All): false for a duplicate, for a
// write that a kept write of its register supersedes, and for a delete of
// a record the state knows is named by its own "_name" write (§7.3: such a
// delete is invalid). A write to a deleted record is retained but not shown
// (see rec). It refuses (false, no change) a Write that no constructor of
// this package made (a literal or zero value) and a write of another scope
// than the state's.
func (s *State) Add(w *Write) bool {
	if !s.add(w) {
		return false
	}
	s.epochs.widen(w.epoch)
	return true
}

func (s *State) add(w *Write) bool {
	if w == nil || !w.ok || w.body.Scope != s.v.rules.Scope {
		return false
	}
	r := s.records[w.body.Record]
	if r == nil {
		r = &rec{ids: make([][32]byte, 0, 1)}
		s.records[w.body.Record] = r
	}
	changed, grew := s.addToRec(r, w)
	if !changed {
		return false
	}
	if grew && r.ids != nil && !r.deleted() {
		r.ids = append(r.ids, w.id)
	} else {
		r.ids = nil // every change of a record's writes comes through here
	}
	return true
}

// addToRec adds w to the register of r it belongs to, with register.add's
// answers. Deletes are refused once r is named (§7.3).
func (s *State) addToRec(r *rec, w *Write) (changed, grew bool) {
	if w.body.Op == suite.OpDelete {
		if r.named() {
			return false, false
		}
		if r.deletes == nil {
			r.deletes = make(map[string]*register)
		}
		// A first delete hides every field write: never a mere growth.
		changed, _ = s.addTo(r.deletes, w.body.Field, w)
		return changed, false
	}
	if r.fields == nil {
		r.fields = make(map[string]*field)
	}
	f := r.fields[w.body.Field]
	if f == nil {
		f = &field{}
		r.fields[w.body.Field] = f
	}
	if w.body.Op != suite.OpAssign {
		if f.elems == nil {
			f.elems = make(map[string]*register)
		}
		return s.addTo(f.elems, string(w.body.Element), w)
	}
	before := len(f.assign.kept)
	changed, grew = f.assign.add(w)
	if !changed {
		return false, false
	}
	s.writes += len(f.assign.kept) - before
	if w.body.Field == nameField && r.deleted() {
		s.dropDeletes(r) // they were invalid all along (§7.3)
		return true, false
	}
	return true, grew
}

// addTo adds w to the register regs[key], made if missing.
func (s *State) addTo(regs map[string]*register, key string, w *Write) (changed, grew bool) {
	reg := regs[key]
	if reg == nil {
		reg = &register{}
		regs[key] = reg
	}
	before := len(reg.kept)
	changed, grew = reg.add(w)
	if changed {
		s.writes += len(reg.kept) - before
	}
	return changed, grew
}

func (s *State) dropDeletes(r *rec) {
	for _, reg := range r.deletes {
		s.writes -= len(reg.kept)
	}
	r.deletes = nil
}

// Merge adds every write o retains to s (§9.3). Both states must hold
// writes of the same scope, checked by validators with the same rules.
func (s *State) Merge(o *State) {
	for w := range o.All() {
		s.Add(w)
	}
}

// Clone returns an independent copy of s sharing its immutable writes.
func (s *State) Clone() *State {
	c := NewState(s.v)
	c.Merge(s)
	return c
}

// Len returns the number of writes the state retains (All).
func (s *State) Len() int { return s.writes }

// registerOf returns the register w belongs to, or nil if none exists yet.
func (s *State) registerOf(w *Write) *register {
	r := s.records[w.body.Record]
	if r == nil {
		return nil
	}
	if w.body.Op == suite.OpDelete {
		return r.deletes[w.body.Field]
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
// write of w's register supersedes w, w edits a record that s holds as
// deleted (and is not its "_name" write), or w deletes a record that s
// knows is named (§7.3: the delete is invalid). A write s holds is not
// superseded.
func (s *State) Superseded(w *Write) bool {
	r := s.records[w.body.Record]
	if r == nil {
		return false
	}
	isDel := w.body.Op == suite.OpDelete
	switch {
	case isDel && r.named():
		return true
	case !isDel && r.deleted() && w.body.Field != nameField:
		return true
	}
	reg := s.registerOf(w)
	return reg != nil && !reg.has(w.id) && reg.covered(w)
}

// Holds reports whether s keeps w and shows it: w is among Writes of its
// record. A write retained under a tombstone is not held.
func (s *State) Holds(w *Write) bool {
	if r := s.records[w.body.Record]; r != nil && r.deleted() && w.body.Op != suite.OpDelete {
		return false
	}
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
