package record

import (
	"bytes"
	"slices"
)

// Drop takes out of the state every retained write for which out returns
// true, and returns them, by record and write ID. The state is rebuilt
// from the writes that stay, so a write that one of the dropped writes had
// superseded is not brought back: the state holds only what it held. The
// caller finds such a write again where it was published (a device reads
// the record's messages again; tandem/client, refused.go). Dropping is how
// a device enforces that its state holds only writes the collection's
// group accepts (§10.7, §11.6).
func (s *State) Drop(out func(*Write) bool) []*Write {
	var gone []*Write
	s.eachRetained(func(w *Write) {
		if out(w) {
			gone = append(gone, w)
		}
	})
	if len(gone) == 0 {
		return nil // the common case (every open settles the state): nothing built
	}
	slices.SortFunc(gone, func(a, b *Write) int {
		if c := bytes.Compare(a.body.Record[:], b.body.Record[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	drop := make(map[*Write]bool, len(gone))
	for _, w := range gone {
		drop[w] = true
	}
	var stay []*Write
	s.eachRetained(func(w *Write) {
		if !drop[w] {
			stay = append(stay, w)
		}
	})
	s.records = make(map[[16]byte]*rec)
	s.writes, s.epochs = 0, epochRange{}
	for _, w := range stay {
		s.Add(w)
	}
	return gone
}

// eachRetained calls fn with every write the state retains (All's), in no
// particular order and without building anything.
func (s *State) eachRetained(fn func(*Write)) {
	for _, r := range s.records {
		for _, reg := range r.deletes {
			for _, w := range reg.kept {
				fn(w)
			}
		}
		for _, f := range r.fields {
			for _, w := range f.assign.kept {
				fn(w)
			}
			for _, e := range f.elems {
				for _, w := range e.kept {
					fn(w)
				}
			}
		}
	}
}
