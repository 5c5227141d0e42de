package roster

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func TestBuildInventory(t *testing.T) {
	rec := func(b byte) [16]byte { return [16]byte{b} }
	wid := func(b byte) [32]byte { return suite.H([]byte{b}) }
	st := newMapState()
	st.keep(rec(1), wid(1))
	st.keep(rec(1), wid(2)) // e.g. two siblings
	st.keep(rec(2), wid(3)) // a tombstone is a kept write like any other
	st.keep(rosterRecord, wid(4))
	st.known[wid(5)] = true // held once, since replaced

	prev, err := BuildInventory(nil, nil)
	check(t, err)
	if !bytes.Equal(prev.Bytes(), []byte{0, 0, 0, 0}) {
		t.Fatal("empty inventory is a zero count")
	}
	curBytes, err := suite.EncodeInventory([]suite.InventoryEntry{
		{Record: rec(1), Writes: [][32]byte{wid(1), wid(5)}}, // held / replaced: not carried as such
		{Record: rec(3), Writes: [][32]byte{wid(6)}},         // never seen: carried forward
	})
	check(t, err)
	cur, err := DecodeInventory([32]byte{}, curBytes)
	check(t, err)

	inv, err := BuildInventory(st, cur)
	check(t, err)
	want := map[[16]byte][][32]byte{rec(1): {wid(1), wid(2)}, rec(2): {wid(3)}, rec(3): {wid(6)}}
	got := inv.Entries()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, e := range got {
		if len(e.Writes) != len(want[e.Record]) {
			t.Fatalf("record %x: %d writes", e.Record, len(e.Writes))
		}
		for _, w := range want[e.Record] {
			if !inv.Lists(e.Record, w) {
				t.Fatalf("record %x lacks %x", e.Record, w)
			}
		}
	}
	if inv.Lists(rosterRecord, wid(4)) || inv.Lists(rec(1), wid(5)) || inv.Lists(rec(2), wid(1)) {
		t.Fatal("listed what it must not")
	}
	// Canonical: the bytes decode back to the same hash.
	again, err := DecodeInventory([32]byte{}, inv.Bytes())
	check(t, err)
	if again.Hash() != inv.Hash() {
		t.Fatal("not canonical")
	}
}

// TestCarryForwardAcrossEpochs: a listed write that a rotating device never
// saw stays listed in every later inventory until someone has seen it (§8.3).
func TestCarryForwardAcrossEpochs(t *testing.T) {
	w := newWorld(t)
	r := w.r1
	missing := w.wM.id // the next rotating device never got M's write
	st := newMapState()
	st.keep(w.rec1, w.wA.id)
	for i := 0; i < 3; i++ {
		ch, err := Rotate(r, w.o.signer(), st)
		check(t, err)
		if !ch.Inventory.Lists(w.rec2, missing) || !ch.Inventory.Lists(w.rec1, w.wA.id) {
			t.Fatalf("rotation %d dropped a write unseen", i)
		}
		r = extend(t, r, ch)
	}
	// Once seen and replaced, it goes.
	st.known[missing] = true
	ch, err := Rotate(r, w.o.signer(), st)
	check(t, err)
	if ch.Inventory.Lists(w.rec2, missing) {
		t.Fatal("a replaced write was carried")
	}
	// Without the current inventory a device cannot start the next epoch.
	bare, err := NewRoster(w.r1.Genesis())
	check(t, err)
	for _, s := range w.r1.Statements()[1:] {
		bare, err = bare.Extend(s)
		check(t, err)
	}
	if _, err := Rotate(bare, w.o.signer(), st); !errors.Is(err, ErrCarryForward) {
		t.Fatalf("rotate without the current inventory: %v", err)
	}
}

func bigInventory(t testing.TB, rng *rand.Rand, records int) []byte {
	st := newMapState()
	for i := 0; i < records; i++ {
		var rec [16]byte
		var w [32]byte
		for j := range rec {
			rec[j] = byte(rng.Uint32())
		}
		for k := 0; k < 1+rng.IntN(3); k++ {
			for j := range w {
				w[j] = byte(rng.Uint32())
			}
			st.keep(rec, w)
		}
	}
	inv, err := BuildInventory(st, nil)
	check(t, err)
	return inv.Bytes()
}

func TestSplitRespectsMessageLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	b := bigInventory(t, rng, 3000)
	for _, limit := range []int{2000, 8 << 10, 0, MessageHardLimit} {
		frags, err := Split([32]byte{1}, b, limit)
		check(t, err)
		if limit == 0 {
			limit = MessageLimit
		}
		var joined []byte
		for i, f := range frags {
			p, err := f.Encode()
			check(t, err)
			if MessageSize(len(p)) > limit {
				t.Fatalf("limit %d: fragment %d makes a %d-byte message", limit, i, MessageSize(len(p)))
			}
			back, err := DecodeFragment(p, 0)
			check(t, err)
			if back.Part != i || back.Parts != len(frags) || !bytes.Equal(back.Bytes, f.Bytes) || back.Epoch != f.Epoch {
				t.Fatal("fragment round trip")
			}
			joined = append(joined, f.Bytes...)
		}
		if !bytes.Equal(joined, b) {
			t.Fatal("fragments do not join to the inventory")
		}
		if limit == MessageHardLimit && len(frags) != 1 {
			t.Fatalf("%d-byte inventory in %d fragments at 1 MiB", len(b), len(frags))
		}
	}
	for _, limit := range []int{MessageHardLimit + 1, HeaderAllowance} {
		if _, err := Split([32]byte{}, b, limit); !errors.Is(err, ErrMessageLimit) {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}
}

// TestAssemblyWithJunk: fragments in any order, duplicated, with wrong
// versions of some parts and a complete junk assembly of another parts
// count, assemble only into the bytes the statement commits to.
func TestAssemblyWithJunk(t *testing.T) {
	w := newWorld(t)
	rng := rand.New(rand.NewPCG(13, 14))
	st := newMapState()
	for i := 0; i < 400; i++ {
		st.keep([16]byte{byte(i), byte(i >> 8)}, suite.H([]byte{byte(i), 1}))
	}
	rot, err := Rotate(w.r1, w.o.signer(), st)
	check(t, err)
	r2 := extend(t, w.r1, rot)
	e2 := rot.Statement.ID()
	good, err := Split(e2, rot.Inventory.Bytes(), 2000)
	check(t, err)
	if len(good) < 5 {
		t.Fatalf("only %d fragments", len(good))
	}
	var all []*Fragment
	for i, f := range good {
		all = append(all, f, f)   // duplicates
		if i%(len(good)/4) == 1 { // a few parts with a second, wrong version
			bad := *f
			bad.Bytes = append([]byte(nil), f.Bytes...)
			bad.Bytes[rng.IntN(len(bad.Bytes))] ^= 0x40
			all = append(all, &bad)
		}
	}
	// A complete, self-consistent junk version with another parts count.
	junk, err := Split(e2, bytes.Repeat([]byte{7}, len(rot.Inventory.Bytes())), 3000)
	check(t, err)
	all = append(all, junk...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	// Fragments may arrive before the statement: they are held.
	c := NewChain(w.coll, Options{})
	for i, f := range all {
		check(t, c.AddFragment(f))
		if i == len(all)/2 {
			for _, s := range r2.Statements() {
				check(t, c.Add(s, Origin{}))
			}
			for _, s := range w.r1.Statements() {
				if inv, ok := w.r1.Inventory(s.ID()); ok {
					check(t, c.SetInventory(s.ID(), inv.Bytes()))
				}
			}
		}
	}
	got, _ := c.Roster()
	inv, ok := got.Inventory(e2)
	if !ok {
		t.Fatal("no assembly")
	}
	if inv.Hash() != *rot.Statement.State().Snapshot || !bytes.Equal(inv.Bytes(), rot.Inventory.Bytes()) {
		t.Fatal("wrong assembly used")
	}
	if len(inv.Fragments()) != len(good) {
		t.Fatal("fragments kept for restoring")
	}
}

func TestFragmentLimits(t *testing.T) {
	w := newWorld(t)
	room := groupCost + 2*versionCost + 3 // one group, two 1-byte versions and a little
	c := NewChain(w.coll, Options{Limits: Limits{MaxVersions: 2, MaxFragmentBytes: room}})
	f := &Fragment{Epoch: w.e1, Part: 0, Parts: 2, Bytes: []byte{1}}
	check(t, c.AddFragment(f))
	check(t, c.AddFragment(f)) // identical: harmless
	check(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: 0, Parts: 2, Bytes: []byte{2}}))
	wantIs(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: 0, Parts: 2, Bytes: []byte{3}}), ErrLimit)
	wantIs(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: 1, Parts: 2, Bytes: make([]byte, 200)}), ErrLimit)
	wantIs(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: 2, Parts: 2, Bytes: []byte{1}}), ErrRejected, ErrFragment)
	if err := c.AddFragment(&Fragment{Epoch: w.e1, Part: 1, Parts: 2, Bytes: []byte{3}}); errors.Is(err, ErrRejected) {
		t.Fatalf("a limit is not a rejection: %v", err)
	}

	// A hash mismatch is rejected before use.
	c = chainOf(t, w.r0)
	for _, s := range w.r1.Statements() {
		check(t, c.Add(s, Origin{}))
	}
	other, err := suite.EncodeInventory(nil)
	check(t, err)
	wantIs(t, c.SetInventory(w.e1, other), ErrRejected, ErrInventoryHash)
	if r, _ := c.Roster(); func() bool { _, ok := r.Inventory(w.e1); return ok }() {
		t.Fatal("unverified inventory kept")
	}

	// The product of a group's version counts stays within the try
	// budget, so an exhaustive search always finishes.
	c = NewChain(w.coll, Options{Limits: Limits{MaxAssemblyTries: 4, MaxVersions: 4}})
	for p := 0; p < 2; p++ {
		for v := 0; v < 2; v++ {
			check(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: p, Parts: 3, Bytes: []byte{byte(v)}}))
		}
	}
	wantIs(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: 0, Parts: 3, Bytes: []byte{9}}), ErrLimit)
	check(t, c.AddFragment(&Fragment{Epoch: w.e1, Part: 2, Parts: 3, Bytes: []byte{9}})) // a first version: ×1
}

func TestDecodeFragmentRejects(t *testing.T) {
	e := encB64u(make([]byte, 32))
	ok := `{"inventory":{"epoch":"` + e + `","part":0,"parts":1,"bytes":"AAAA"}}`
	if _, err := DecodeFragment([]byte(ok), 0); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"mixed forms":      `{"rec":"AA","inventory":{"epoch":"` + e + `","part":0,"parts":1,"bytes":"AAAA"}}`,
		"part == parts":    `{"inventory":{"epoch":"` + e + `","part":1,"parts":1,"bytes":"AAAA"}}`,
		"zero parts":       `{"inventory":{"epoch":"` + e + `","part":0,"parts":0,"bytes":"AAAA"}}`,
		"too many parts":   `{"inventory":{"epoch":"` + e + `","part":0,"parts":100000,"bytes":"AAAA"}}`,
		"short epoch":      `{"inventory":{"epoch":"AAAA","part":0,"parts":1,"bytes":"AAAA"}}`,
		"empty bytes":      `{"inventory":{"epoch":"` + e + `","part":0,"parts":1,"bytes":""}}`,
		"newline in b64u":  `{"inventory":{"epoch":"` + e + `","part":0,"parts":1,"bytes":"AA\nAA"}}`,
		"padding":          `{"inventory":{"epoch":"` + e + `","part":0,"parts":1,"bytes":"AA=="}}`,
		"std alphabet":     `{"inventory":{"epoch":"` + e + `","part":0,"parts":1,"bytes":"A+/A"}}`,
		"duplicate part":   `{"inventory":{"epoch":"` + e + `","part":0,"part":0,"parts":1,"bytes":"AAAA"}}`,
		"negative part":    `{"inventory":{"epoch":"` + e + `","part":-1,"parts":1,"bytes":"AAAA"}}`,
		"fraction":         `{"inventory":{"epoch":"` + e + `","part":0.0,"parts":1,"bytes":"AAAA"}}`,
		"missing bytes":    `{"inventory":{"epoch":"` + e + `","part":0,"parts":1}}`,
		"null parts":       `{"inventory":{"epoch":"` + e + `","part":0,"parts":null,"bytes":"AAAA"}}`,
		"trailing":         ok + `x`,
		"not an inventory": `{"rec":"AA","writes":[]}`,
	}
	for name, p := range bad {
		if _, err := DecodeFragment([]byte(p), 0); !errors.Is(err, ErrFragment) || !errors.Is(err, ErrRejected) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
