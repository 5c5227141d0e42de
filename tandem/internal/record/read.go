package record

import (
	"bytes"
	"cmp"
	"iter"
	"maps"
	"slices"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Sibling is one kept assign write of a field. A field with more than one
// sibling is in conflict: concurrent assigns are all kept (§9.2), and the app
// shows or resolves the conflict by writing again.
type Sibling struct {
	Value   []byte // must not be modified
	Author  [32]byte
	Dot     suite.Dot
	Epoch   uint64
	WriteID [32]byte
}

// Records returns the IDs of every record the state holds, deleted ones
// included, in ascending byte order.
func (s *State) Records() iter.Seq[[16]byte] {
	ids := make([][16]byte, 0, len(s.records))
	for id := range s.records {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return slices.Values(ids)
}

// EachRecord returns the IDs of every record the state holds, deleted ones
// included, in no particular order and without sorting them: for a check
// that visits every record after every sync (healing, §12.2).
func (s *State) EachRecord() iter.Seq[[16]byte] {
	return maps.Keys(s.records)
}

// NumRecords returns the number of records, deleted ones included.
func (s *State) NumRecords() int { return len(s.records) }

// Deleted reports whether the record has a tombstone (§9.2, §12.3).
func (s *State) Deleted(record [16]byte) bool {
	r := s.records[record]
	return r != nil && r.deleted()
}

// Fields returns the names of the record's fields that hold a kept write, in
// ascending byte order; none for a deleted record.
func (s *State) Fields(record [16]byte) []string {
	r := s.records[record]
	if r == nil || r.deleted() {
		return nil
	}
	names := make([]string, 0, len(r.fields))
	for n := range r.fields {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// field returns a field of a record that is not deleted.
func (s *State) field(record [16]byte, name string) *field {
	if r := s.records[record]; r != nil && !r.deleted() {
		return r.fields[name]
	}
	return nil
}

// Values returns the field's register value: its kept assign writes, sorted
// by dot (HLC, then device) and then write ID. None, one, or several
// siblings in conflict.
func (s *State) Values(record [16]byte, name string) []Sibling {
	f := s.field(record, name)
	if f == nil {
		return nil
	}
	out := make([]Sibling, 0, len(f.assign.kept))
	for _, w := range f.assign.kept {
		out = append(out, Sibling{Value: w.body.Value, Author: w.body.Author, Dot: w.body.Dot, Epoch: w.epoch, WriteID: w.id})
	}
	slices.SortFunc(out, func(a, b Sibling) int {
		return cmp.Or(a.Dot.HLC.Compare(b.Dot.HLC), a.Dot.Device.Compare(b.Dot.Device),
			bytes.Compare(a.WriteID[:], b.WriteID[:]))
	})
	return out
}

// Members returns the elements present in the field's add-wins set (§9.2):
// those whose register keeps at least one add. Sorted by bytes.
func (s *State) Members(record [16]byte, name string) [][]byte {
	f := s.field(record, name)
	if f == nil {
		return nil
	}
	var out [][]byte
	for e, reg := range f.elems {
		if present(reg) {
			out = append(out, []byte(e))
		}
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// Contains reports whether element is present in the field's set.
func (s *State) Contains(record [16]byte, name string, element []byte) bool {
	f := s.field(record, name)
	return f != nil && f.elems != nil && f.elems[string(element)] != nil && present(f.elems[string(element)])
}

func present(reg *register) bool {
	for _, w := range reg.kept {
		if w.body.Op == suite.OpAdd {
			return true
		}
	}
	return false
}

// Writes returns the record's kept writes, sorted by write ID: what a device
// publishes as the record's state (§10.5, §10.7). For a deleted record these
// are its tombstones only.
func (s *State) Writes(record [16]byte) []*Write {
	r := s.records[record]
	if r == nil {
		return nil
	}
	var out []*Write
	if r.deleted() {
		for _, reg := range r.deletes {
			out = append(out, reg.kept...)
		}
	} else {
		out = r.appendFields(out)
	}
	sortByID(out)
	return out
}

// EpochRange returns bounds on the epochs of the writes s retains: every
// retained write's epoch is within [lo, hi]; ok is false when s has never
// held a write since it was made or last rebuilt by Drop. The bounds widen
// as writes enter and do not narrow when a superseded write leaves, so they
// may be wider than the writes' own; they are what lets a caller skip a
// pass over every write when all of them belong to one epoch.
func (s *State) EpochRange() (lo, hi uint64, ok bool) {
	return s.epochs.lo, s.epochs.hi, s.epochs.any
}

// KeptIDs returns the IDs of the writes Writes returns, in no particular
// order. The slice is the state's own: the caller must not change it, and
// it is valid until the next Add or Drop. It is kept between calls, and
// kept up to date by Add while a record only gains writes (a new record, a
// new field: what loading a device and a sync of new records do), so a
// check that visits every record after every sync (healing, §12.2) reads
// one array per record instead of following every write, even on the
// first sync after a device opened.
func (s *State) KeptIDs(record [16]byte) [][32]byte {
	r := s.records[record]
	if r == nil {
		return nil
	}
	if r.ids == nil {
		// Most fields keep one write: one allocation for most records.
		ids := make([][32]byte, 0, len(r.fields)+len(r.deletes))
		for w := range s.keptWrites(record) {
			ids = append(ids, w.id)
		}
		r.ids = ids
	}
	return r.ids
}

// keptWrites yields the writes Writes returns, in no particular order and
// without building a slice, for checks that visit every record (healing,
// §12.2).
func (s *State) keptWrites(record [16]byte) iter.Seq[*Write] {
	return func(yield func(*Write) bool) {
		r := s.records[record]
		if r == nil {
			return
		}
		if r.deleted() {
			for _, reg := range r.deletes {
				for _, w := range reg.kept {
					if !yield(w) {
						return
					}
				}
			}
			return
		}
		for _, f := range r.fields {
			for _, w := range f.assign.kept {
				if !yield(w) {
					return
				}
			}
			for _, e := range f.elems {
				for _, w := range e.kept {
					if !yield(w) {
						return
					}
				}
			}
		}
	}
}

func (r *rec) appendFields(out []*Write) []*Write {
	for _, f := range r.fields {
		out = append(out, f.assign.kept...)
		for _, e := range f.elems {
			out = append(out, e.kept...)
		}
	}
	return out
}

// Retained returns every write the state keeps for the record, sorted by
// write ID: Writes plus, for a deleted record, the field writes the
// tombstone hides (see rec).
func (s *State) Retained(record [16]byte) []*Write {
	r := s.records[record]
	if r == nil {
		return nil
	}
	var out []*Write
	for _, reg := range r.deletes {
		out = append(out, reg.kept...)
	}
	out = r.appendFields(out)
	sortByID(out)
	return out
}

// All returns every write the state retains, by record ID and then write
// ID: the kept writes of every record (Writes) and the field writes hidden
// under tombstones. It is what a device persists, so that a state rebuilt
// from it is the same state (MarshalBinary encodes the same writes).
func (s *State) All() iter.Seq[*Write] {
	return func(yield func(*Write) bool) {
		for id := range s.Records() {
			for _, w := range s.Retained(id) {
				if !yield(w) {
					return
				}
			}
		}
	}
}

func sortByID(ws []*Write) {
	slices.SortFunc(ws, func(a, b *Write) int { return bytes.Compare(a.id[:], b.id[:]) })
}
