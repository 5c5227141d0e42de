package record

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func rawDelete(t testing.TB, rec [16]byte, field string, d suite.Dot, ctx suite.VV) *Write {
	return rawWrite(t, suite.WriteBody{Record: rec, Field: field, Op: suite.OpDelete, Dot: d, Context: ctx, Base: vv()}, 0)
}

func writeIDs(ws []*Write) [][32]byte {
	ids := make([][32]byte, len(ws))
	for i, w := range ws {
		ids[i] = w.ID()
	}
	slices.SortFunc(ids, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// TestDeletesAreFieldWrites: §9.2, deletes are writes to a field like any
// other. A delete of field b whose context covers a delete of field a does
// not supersede it; one of field a does.
func TestDeletesAreFieldWrites(t *testing.T) {
	da := rawDelete(t, r1, "a", dot(1, 10, 0), vv())
	db := rawDelete(t, r1, "b", dot(2, 20, 0), vv(dot(1, 10, 0)))
	dc := rawDelete(t, r1, "a", dot(3, 30, 0), vv(dot(1, 10, 0)))
	if Supersedes(db, da) || Supersedes(da, db) {
		t.Fatal("a delete of field b supersedes a delete of field a")
	}
	if !Supersedes(dc, da) {
		t.Fatal("a delete of field a that saw one does not supersede it")
	}
	for _, order := range [][]*Write{{da, db}, {db, da}} {
		s := stateOf(order)
		if got, want := writeIDs(s.Writes(r1)), writeIDs([]*Write{da, db}); !slices.Equal(got, want) || !s.Deleted(r1) {
			t.Fatalf("kept %d deletes, want both", len(got))
		}
		if s.Superseded(da) || !s.Holds(da) {
			t.Fatal("the delete of field a is reported superseded")
		}
	}
	s := stateOf([]*Write{da, dc, db})
	if got, want := writeIDs(s.Writes(r1)), writeIDs([]*Write{db, dc}); !slices.Equal(got, want) || !s.Superseded(da) {
		t.Fatal("same-field deletes do not form a register")
	}
	// Build covers the new delete's own field only.
	p := newPeer(t, 0, 1, 0)
	p.s = stateOf([]*Write{da, db})
	x := p.do(Change{Record: r1, Field: "a", Op: suite.OpDelete})
	if !Supersedes(x, da) || Supersedes(x, db) {
		t.Fatal("Build of a field-a delete")
	}
}

// TestDeleteOfSelfNamedRecord: §7.3, a delete of a record whose own valid
// _name write shows it is named is invalid, whether or not the app
// declared the name, and whatever the arrival order: every order of the
// same writes gives the same state, with the record and all its fields.
func TestDeleteOfSelfNamedRecord(t *testing.T) {
	rec := suite.NamedRecordID("prefs")
	if testValidator().Named(rec) {
		t.Fatal("setup: prefs is declared")
	}
	owner := newPeer(t, 0, 1, 0)
	name := owner.do(assign(rec, "_name", "prefs"))
	theme := owner.do(assign(rec, "theme", "dark"))
	vandal := newPeer(t, 1, 2, 0) // has not seen the name
	tomb := vandal.do(del(rec))
	font := newPeer(t, 2, 3, 0).do(assign(rec, "font", "serif"))
	if _, _, err := owner.s.Build(owner.w, del(rec)); !errors.Is(err, ErrNamedDelete) {
		t.Fatalf("Build of a delete of a self-named record: %v", err)
	}
	if Supersedes(tomb, name) {
		t.Fatal("a delete supersedes the _name write that makes it invalid")
	}
	all := []*Write{name, theme, tomb, font}
	var want []byte
	permute(all, func(order []*Write) {
		p := newPeer(t, 3, 4, 0)
		p.recv(order...)
		switch {
		case p.s.Deleted(rec):
			t.Fatalf("order %v: a self-named record is deleted", order)
		case p.s.Holds(tomb) || !p.s.Superseded(tomb):
			t.Fatal("the invalid delete is kept")
		case len(values(p.s, rec, "theme")) != 1 || len(values(p.s, rec, "font")) != 1:
			t.Fatalf("fields lost: %v", p.s.Fields(rec))
		}
		got := encode(t, p.s)
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatal("arrival order changed the state")
		}
		back, err := DecodeState(got, testValidator())
		if err != nil || !bytes.Equal(encode(t, back), got) {
			t.Fatalf("round trip: %v", err)
		}
	})
	// Before the name arrives the record is deleted and shows nothing.
	p := newPeer(t, 3, 4, 0)
	p.recv(tomb, theme)
	if !p.s.Deleted(rec) || p.s.Fields(rec) != nil || p.s.Values(rec, "theme") != nil || len(p.s.Writes(rec)) != 1 {
		t.Fatal("a deleted record shows its fields")
	}
	// A device persists what the tombstone hides (All, AppendStored).
	back := NewState(testValidator())
	for w := range p.s.All() {
		x, err := back.v.Reload(AppendStored(nil, w), w.ID())
		if err != nil {
			t.Fatal(err)
		}
		back.Add(x)
	}
	if !bytes.Equal(encode(t, back), encode(t, p.s)) {
		t.Fatal("reloaded state differs")
	}
	back.Add(name)
	if back.Deleted(rec) || len(values(back, rec, "theme")) != 1 {
		t.Fatal("the persisted writes lost what the tombstone hides")
	}
}

func permute(ws []*Write, fn func([]*Write)) {
	var rec func(k int)
	rec = func(k int) {
		if k == len(ws) {
			fn(slices.Clone(ws))
			return
		}
		for i := k; i < len(ws); i++ {
			ws[k], ws[i] = ws[i], ws[k]
			rec(k + 1)
			ws[k], ws[i] = ws[i], ws[k]
		}
	}
	rec(0)
}
