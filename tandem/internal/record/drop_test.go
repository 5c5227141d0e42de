package record

import (
	"bytes"
	mrand "math/rand/v2"
	"testing"
)

// randomHistory builds a state from n random edits of two users on three
// devices over recs records: assigns, tag adds and removes, and a delete in
// one edit out of 5*delEvery. It returns the state and the writes it took;
// each, if not nil, sees the state after every edit.
func randomHistory(rng *mrand.Rand, n, recs, delEvery int, each func(*State)) (*State, []*Write) {
	now := int64(1000)
	s := NewState(testValidator())
	var all []*Write
	for i := range n {
		now += int64(rng.IntN(3))
		w := writer(rng.IntN(2), rng.IntN(3), 0, &now)
		r := recID(rng.IntN(recs))
		var c Change
		switch rng.IntN(5) {
		case 0:
			c = add(r, "tags", string(rune('a'+rng.IntN(3))))
		case 1:
			c = remove(r, "tags", string(rune('a'+rng.IntN(3))))
		case 2:
			if rng.IntN(delEvery) == 0 {
				c = del(r)
				break
			}
			fallthrough
		default:
			c = assign(r, "title", string(rune('A'+i%26)))
		}
		x, _, err := s.Build(w, c)
		if err != nil {
			continue // an edit of a deleted record
		}
		s.Add(x)
		all = append(all, x)
		if each != nil {
			each(s)
		}
	}
	return s, all
}

// Drop keeps exactly the state the remaining writes make: a state that
// dropped some writes encodes as one built from the others alone, and a
// write a dropped one had superseded does not come back by itself (the
// caller reads it again). Random histories of two users on three devices.
func TestDropIsTheStateOfTheRest(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(7, 22))
	for round := range 50 {
		s, all := randomHistory(rng, 30, 4, 4, nil)
		out := map[[32]byte]bool{}
		for _, w := range all {
			if rng.IntN(3) == 0 {
				out[w.ID()] = true
			}
		}
		kept := NewState(testValidator())
		for w := range s.All() {
			if !out[w.ID()] {
				kept.Add(w)
			}
		}
		gone := s.Drop(func(w *Write) bool { return out[w.ID()] })
		for i, w := range gone {
			if !out[w.ID()] {
				t.Fatalf("round %d: Drop took out a write it was not asked to", round)
			}
			if i > 0 {
				p := gone[i-1]
				c := bytes.Compare(p.body.Record[:], w.body.Record[:])
				if c > 0 || c == 0 && bytes.Compare(p.id[:], w.id[:]) >= 0 {
					t.Fatalf("round %d: dropped writes not in record and write ID order", round)
				}
			}
		}
		if !bytes.Equal(encode(t, s), encode(t, kept)) || s.Len() != kept.Len() {
			t.Fatalf("round %d: the state after Drop is not the state of the writes it kept", round)
		}
		for w := range s.All() {
			if out[w.ID()] {
				t.Fatalf("round %d: a dropped write is still held", round)
			}
		}
	}
}

// keptWrites yields exactly the writes Writes returns, for live and
// deleted records alike.
func TestKeptWritesAreWrites(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(9, 4))
	s, _ := randomHistory(rng, 200, 16, 8, nil)
	deleted := 0
	for rec := range s.Records() {
		if s.Deleted(rec) {
			deleted++
		}
		want := map[[32]byte]bool{}
		for _, w := range s.Writes(rec) {
			want[w.ID()] = true
		}
		n := 0
		for w := range s.keptWrites(rec) {
			if !want[w.ID()] {
				t.Fatalf("keptWrites yields a write Writes does not list")
			}
			n++
		}
		if n != len(want) {
			t.Fatalf("keptWrites yields %d writes, Writes lists %d", n, len(want))
		}
	}
	if deleted == 0 || deleted == s.NumRecords() {
		t.Fatalf("%d of %d records deleted: the test needs both kinds", deleted, s.NumRecords())
	}
	if len(s.Writes(recID(99))) != 0 {
		t.Fatal("an unknown record has writes")
	}
	for range s.keptWrites(recID(99)) {
		t.Fatal("keptWrites yields a write of an unknown record")
	}
}

// KeptIDs lists exactly the IDs of Writes, each once, however the record
// changed since it was last asked: edits, deletes, a "_name" write that
// voids deletes, a signature replaced, and Drop; whether the list was kept
// up to date as the record grew or built when asked.
func TestKeptIDsFollowEveryChange(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(5, 6))
	check := func(s *State) { checkKeptIDs(t, s) }
	checks := 0
	s, all := randomHistory(rng, 300, 6, 6, func(s *State) {
		if rng.IntN(3) == 0 {
			check(s)
			checks++
		}
	})
	if checks < 50 {
		t.Fatalf("only %d checks", checks)
	}
	for i := 0; i < len(all); i += 7 {
		out := all[i].ID()
		s.Drop(func(w *Write) bool { return w.ID() == out })
		check(s)
	}
	if s.KeptIDs(recID(99)) != nil {
		t.Fatal("an unknown record has IDs")
	}
}

// EpochRange bounds every retained write's epoch, through adds and Drop,
// and Drop narrows it to what stays.
func TestEpochRangeBoundsRetained(t *testing.T) {
	if _, _, ok := NewState(testValidator()).EpochRange(); ok {
		t.Fatal("an empty state has an epoch range")
	}
	rng := mrand.New(mrand.NewPCG(11, 12))
	now := int64(1000)
	s := NewState(testValidator())
	for i := range 120 {
		now += int64(rng.IntN(3))
		e := uint64(1 + rng.IntN(3))
		c := assign(recID(rng.IntN(6)), "title", string(rune('A'+i%26)))
		if x, _, err := s.Build(writer(rng.IntN(2), rng.IntN(3), e, &now), c); err == nil {
			s.Add(x)
		}
	}
	within := func() {
		lo, hi, ok := s.EpochRange()
		n := 0
		for w := range s.All() {
			n++
			if !ok || w.Epoch() < lo || w.Epoch() > hi {
				t.Fatalf("write of epoch %d outside the range [%d, %d] (ok %v)", w.Epoch(), lo, hi, ok)
			}
		}
		if n == 0 {
			t.Fatal("no writes retained")
		}
	}
	within()
	if lo, hi, _ := s.EpochRange(); lo == hi {
		t.Fatalf("one epoch only (%d): the test needs several", lo)
	}
	s.Drop(func(w *Write) bool { return w.Epoch() == 1 })
	within()
	if lo, _, _ := s.EpochRange(); lo < 2 {
		t.Fatalf("after dropping epoch 1 the range still starts at %d", lo)
	}
}

// checkKeptIDs fails unless KeptIDs lists exactly the IDs of Writes, each
// once, for every record of s.
func checkKeptIDs(t *testing.T, s *State) {
	t.Helper()
	for rec := range s.Records() {
		want := map[[32]byte]bool{}
		for _, w := range s.Writes(rec) {
			want[w.ID()] = true
		}
		got := s.KeptIDs(rec)
		if len(got) != len(want) {
			t.Fatalf("KeptIDs lists %d writes, Writes %d", len(got), len(want))
		}
		seen := map[[32]byte]bool{}
		for _, id := range got {
			if !want[id] {
				t.Fatal("KeptIDs lists a write Writes does not")
			}
			if seen[id] {
				t.Fatal("KeptIDs lists a write twice")
			}
			seen[id] = true
		}
	}
}
