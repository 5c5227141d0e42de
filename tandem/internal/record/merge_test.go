package record

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// oracle computes the writes a state retains (State.All) for a set of
// writes straight from §9.2, §7.3 and the gaps file, by brute force over
// every pair: a write is retained iff no write of its register naively
// supersedes it (deletes form one register per record and field), unless
// it is a delete of a record that has a _name write. Field writes of
// deleted records are retained (hidden). IDs are listed by record, then
// write ID, the order of State.All.
func oracle(ws []*Write) [][32]byte {
	uniq := map[[32]byte]*Write{}
	named := map[[16]byte]bool{}
	for _, w := range ws {
		uniq[w.id] = w
		if w.body.Field == nameField && w.body.Op == suite.OpAssign {
			named[w.body.Record] = true
		}
	}
	family := func(op suite.Op) int { // assign, set, delete
		switch op {
		case suite.OpAssign:
			return 0
		case suite.OpDelete:
			return 2
		}
		return 1
	}
	sameReg := func(a, b *Write) bool {
		if a.body.Record != b.body.Record || a.body.Field != b.body.Field || family(a.body.Op) != family(b.body.Op) {
			return false
		}
		return family(a.body.Op) != 1 || bytes.Equal(a.body.Element, b.body.Element)
	}
	var kept []*Write
	for _, x := range uniq {
		if x.body.Op == suite.OpDelete && named[x.body.Record] {
			continue
		}
		ok := true
		for _, w := range uniq {
			if sameReg(w, x) && naiveSupersedes(w, x) {
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, x)
		}
	}
	slices.SortFunc(kept, func(a, b *Write) int {
		if c := bytes.Compare(a.body.Record[:], b.body.Record[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	ids := make([][32]byte, len(kept))
	for i, w := range kept {
		ids[i] = w.id
	}
	return ids
}

func keptIDs(s *State) [][32]byte {
	var ids [][32]byte
	for w := range s.All() {
		ids = append(ids, w.id)
	}
	return ids
}

// namedRec is a record named by its own _name write, a name the test
// validator does not declare (§7.3).
var namedRec = suite.NamedRecordID("n1")

// randMixedWrite returns a write on one of 2 records or namedRec, 2 fields,
// 2 elements, with any op (deletes of either field, _name writes of
// namedRec), and random (possibly adversarial) vectors.
func randMixedWrite(tb testing.TB, r *rand.Rand) *Write {
	w := randWrite(tb, r, r.IntN(2) == 0)
	b := w.body
	b.Record = []([16]byte){recID(0), recID(1), namedRec}[r.IntN(3)]
	b.Field = []string{"a", "b"}[r.IntN(2)]
	b.Value = nil
	switch op := r.IntN(11); {
	case op < 4:
		b.Op, b.Value = suite.OpAssign, []byte{byte(r.IntN(4))}
	case op < 6:
		b.Op, b.Element = suite.OpAdd, []byte{byte(r.IntN(2))}
	case op < 8:
		b.Op, b.Element = suite.OpRemove, []byte{byte(r.IntN(2))}
	case op < 10:
		b.Op = suite.OpDelete
	case b.Record == namedRec:
		b.Op, b.Field, b.Value = suite.OpAssign, nameField, []byte("n1")
	default:
		b.Op = suite.OpDelete
	}
	return rawWrite(tb, b, w.epoch)
}

func stateOf(ws []*Write) *State {
	s := NewState(testValidator())
	for _, w := range ws {
		s.Add(w)
	}
	return s
}

func TestMergeIsSemilatticeJoin(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rounds := 2000
	if testing.Short() {
		rounds = 300
	}
	for range rounds {
		pool := make([]*Write, 24)
		for i := range pool {
			pool[i] = randMixedWrite(t, r)
		}
		pick := func() []*Write {
			var ws []*Write
			for _, w := range pool {
				if r.IntN(2) == 0 {
					ws = append(ws, w)
				}
			}
			return ws
		}
		a, b, c := stateOf(pick()), stateOf(pick()), stateOf(pick())
		merge := func(x, y *State) *State { m := x.Clone(); m.Merge(y); return m }
		ab, ba := merge(a, b), merge(b, a)
		if !bytes.Equal(encode(t, ab), encode(t, ba)) {
			t.Fatal("merge not commutative")
		}
		if !bytes.Equal(encode(t, merge(ab, c)), encode(t, merge(a, merge(b, c)))) {
			t.Fatal("merge not associative")
		}
		if !bytes.Equal(encode(t, merge(a, a)), encode(t, a)) {
			t.Fatal("merge not idempotent")
		}
		// The join of states is the state of the union, per the oracle.
		var union []*Write
		union = append(union, pool...)
		if got, want := keptIDs(stateOf(union)), oracle(union); !slices.Equal(got, want) {
			t.Fatalf("kept %d writes, oracle keeps %d", len(got), len(want))
		}
		if got, want := keptIDs(ab), oracle(append(keptWrites(a), keptWrites(b)...)); !slices.Equal(got, want) {
			t.Fatal("merge differs from the oracle on the union")
		}
		if a.Len() != len(keptIDs(a)) {
			t.Fatalf("Len %d, kept %d", a.Len(), len(keptIDs(a)))
		}
	}
}

func keptWrites(s *State) []*Write { return slices.Collect(s.All()) }

// TestSupersedesIsStrictPartialOrderAcrossRegisters checks the exported
// relation, tombstones included, and that State.Superseded and Dominates
// agree with it.
func TestSupersedesIsStrictPartialOrderAcrossRegisters(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 200 {
		pool := make([]*Write, 16)
		for i := range pool {
			pool[i] = randMixedWrite(t, r)
		}
		for _, a := range pool {
			if Supersedes(a, a) {
				t.Fatal("not irreflexive")
			}
			for _, b := range pool {
				if Supersedes(a, b) && b.body.Record != a.body.Record {
					t.Fatal("across records")
				}
				for _, c := range pool {
					if Supersedes(a, b) && Supersedes(b, c) && !Supersedes(a, c) {
						t.Fatal("not transitive")
					}
				}
			}
		}
		s := stateOf(pool)
		for _, x := range pool {
			want := false
			for w := range s.All() {
				if Supersedes(w, x) {
					want = true
				}
				// A _name write makes every delete of its record invalid
				// (§7.3): redundant, though not superseded.
				if w.body.Field == nameField && w.body.Record == x.body.Record && x.body.Op == suite.OpDelete {
					want = true
				}
			}
			if s.Holds(x) {
				want = false
			}
			if got := s.Superseded(x); got != want {
				t.Fatalf("State.Superseded = %v, pairwise %v", got, want)
			}
			if !s.Holds(x) && !s.Superseded(x) {
				t.Fatal("a write of the state's own input is neither held nor superseded")
			}
		}
		if !s.Dominates(pool) {
			t.Fatal("state does not dominate its own input")
		}
	}
}

func TestWriteSetAnswersByID(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	old := a.do(assign(r1, "title", "old"))
	b.recv(old)
	nw := b.do(assign(r1, "title", "new"))
	tomb := b.do(del(recID(2)))
	edit := a.do(assign(recID(2), "title", "x"))
	ws := WriteSet{}
	for _, w := range []*Write{old, nw, tomb, edit} {
		ws.Add(w)
	}
	switch {
	case !ws.Superseded(old.ID(), nw.ID()), ws.Superseded(nw.ID(), old.ID()):
		t.Fatal("register supersession by ID")
	case !ws.Superseded(edit.ID(), tomb.ID()), ws.Superseded(tomb.ID(), edit.ID()):
		t.Fatal("tombstone by ID")
	case ws.Superseded(old.ID(), [32]byte{1}), ws.Superseded(old.ID(), tomb.ID()):
		t.Fatal("unknown ID or other record")
	}
}
