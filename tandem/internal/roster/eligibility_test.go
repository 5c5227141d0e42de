package roster

import (
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

type signedWrite struct {
	body suite.WriteBody
	sig  []byte
	id   [32]byte
}

func sw(t testing.TB, id *suite.Identity, scope, rec [16]byte, ref [32]byte, dot suite.Dot, op suite.Op, v string) signedWrite {
	t.Helper()
	b, sig, wid := dataWrite(t, id, scope, rec, ref, dot, op, v)
	return signedWrite{b, sig, wid}
}

// world: epoch 0 with owner O, writers W and M, reader D, and writes by W
// and M; then M is removed (epoch 1, r1), whose inventory lists both.
type world struct {
	*fixture
	coll       [16]byte
	e0, e1     [32]byte
	wA, wM     signedWrite // listed epoch-0 writes by W and M
	late       signedWrite // M's backdated write, after the removal
	rec1, rec2 [16]byte
}

func newWorld(t testing.TB) *world {
	t.Helper()
	f := newFixture(t) // r0 has O, W, D, M
	w := &world{fixture: f, coll: f.r0.Collection(), e0: f.r0.Epoch(), rec1: [16]byte{1}, rec2: [16]byte{2}}
	ref := f.r0.Head().ID()
	w.wA = sw(t, f.w, w.coll, w.rec1, ref, suite.Dot{Device: suite.DeviceID{2}, HLC: suite.HLC{Millis: 100}}, suite.OpAssign, "milk")
	w.wM = sw(t, f.m, w.coll, w.rec2, ref, suite.Dot{Device: suite.DeviceID{4}, HLC: suite.HLC{Millis: 100}}, suite.OpAssign, "eggs")
	w.late = sw(t, f.m, w.coll, w.rec2, ref, suite.Dot{Device: suite.DeviceID{4}, HLC: suite.HLC{Millis: 50}}, suite.OpAssign, "vandal")
	st := newMapState()
	st.keep(w.rec1, w.wA.id)
	st.keep(w.rec2, w.wM.id)
	ch, err := RemoveMember(f.r0, f.o.signer(), f.m.UID, st)
	check(t, err)
	f.rmChange = ch
	f.r1 = extend(t, f.r0, ch)
	w.e1 = ch.Statement.ID()
	return w
}

func (w *world) check(t testing.TB, c *Chain, x signedWrite, channel [32]byte) error {
	t.Helper()
	id, err := c.CheckWrite(&x.body, x.sig, channel)
	if err == nil && id != x.id {
		t.Fatal("write ID")
	}
	checkVerifiedAgrees(t, c, x, channel, err)
	return err
}

func TestEligibility(t *testing.T) {
	w := newWorld(t)
	c := chainOf(t, w.r1)

	// Both listed writes enter epoch 1 with their original signatures,
	// whoever wrote them; they were also eligible in epoch 0 directly.
	for _, x := range []signedWrite{w.wA, w.wM} {
		check(t, w.check(t, c, x, w.e1))
		check(t, w.check(t, c, x, w.e0))
	}
	// The removed member's backdated write names a statement that listed
	// them, but it is neither of epoch 1 nor in its inventory.
	wantIs(t, w.check(t, c, w.late, w.e1), ErrRejected, ErrNotEligible)
	// Naming the statement that removed them does not help.
	now := sw(t, w.m, w.coll, w.rec2, w.e1, suite.Dot{Device: suite.DeviceID{4}, HLC: suite.HLC{Millis: 200}}, suite.OpAssign, "x")
	wantIs(t, w.check(t, c, now, w.e1), ErrRejected, ErrNotMember)

	// A new write of epoch 1 is eligible there and not in epoch 0.
	fresh := sw(t, w.w, w.coll, w.rec1, w.e1, suite.Dot{Device: suite.DeviceID{2}, HLC: suite.HLC{Millis: 300}}, suite.OpAssign, "oat milk")
	check(t, w.check(t, c, fresh, w.e1))
	wantIs(t, w.check(t, c, fresh, w.e0), ErrRejected, ErrNotEligible)

	// Roles and reserved records.
	dot := suite.Dot{Device: suite.DeviceID{3}, HLC: suite.HLC{Millis: 1}}
	wantIs(t, w.check(t, c, sw(t, w.d, w.coll, w.rec1, w.e1, dot, suite.OpAssign, "r"), w.e1), ErrRejected, ErrReader)
	wantIs(t, w.check(t, c, sw(t, w.w, w.coll, metaRecord, w.e1, dot, suite.OpAssign, "name"), w.e1), ErrRejected, ErrMetaNotOwner)
	check(t, w.check(t, c, sw(t, w.o.id, w.coll, metaRecord, w.e1, dot, suite.OpAssign, "name"), w.e1))
	wantIs(t, w.check(t, c, sw(t, w.o.id, w.coll, metaRecord, w.e1, dot, suite.OpDelete, ""), w.e1), ErrRejected, ErrNamedDelete)
	wantIs(t, w.check(t, c, sw(t, user(70), w.coll, w.rec1, w.e1, dot, suite.OpAssign, "s"), w.e1), ErrRejected, ErrNotMember)
	wantIs(t, w.check(t, c, sw(t, w.w, [16]byte{7}, w.rec1, w.e1, dot, suite.OpAssign, "s"), w.e1), ErrRejected, ErrScope)
	wantIs(t, w.check(t, c, sw(t, w.o.id, w.coll, rosterRecord, w.e1, dot, suite.OpAssign, "s"), w.e1), ErrRejected, ErrRecord)
	bad := fresh
	bad.sig = append([]byte(nil), fresh.sig...)
	bad.sig[0] ^= 1
	wantIs(t, w.check(t, c, bad, w.e1), ErrRejected, ErrSignature)

	// Nothing is written under a deletion.
	del, err := Delete(w.r1, w.o.signer())
	check(t, err)
	cd := chainOf(t, extend(t, w.r1, del))
	wantIs(t, w.check(t, cd, sw(t, w.w, w.coll, w.rec1, del.Statement.ID(), dot, suite.OpAssign, "late"), w.e1), ErrRejected, ErrAfterDeleted)
	check(t, w.check(t, cd, fresh, w.e1)) // what was written before stays valid

	// Unknown statements and channels hold; they do not reject.
	wantIs(t, w.check(t, c, sw(t, w.w, w.coll, w.rec1, [32]byte{0xAB}, dot, suite.OpAssign, "s"), w.e1), ErrHeld, ErrUnknownStatement)
	wantIs(t, w.check(t, c, fresh, [32]byte{0xCD}), ErrHeld, ErrNotEpoch)
	// A channel that is a statement but not an epoch start is not an epoch.
	wantIs(t, w.check(t, c, w.wA, w.r0.Head().ID()), ErrRejected, ErrNotEpoch)
}

// TestSourceEpochWalksBack: a write naming a later same-epoch statement
// belongs to the epoch that statement's commitment started (§8.3).
func TestSourceEpochWalksBack(t *testing.T) {
	w := newWorld(t)
	add, err := AddMember(w.r1, w.o.signer(), member(user(60), RoleWriter, "new"))
	check(t, err)
	r := extend(t, w.r1, add)
	if ep, _ := r.SourceEpoch(add.Statement.ID()); ep != w.e1 {
		t.Fatal("source epoch")
	}
	c := chainOf(t, r)
	x := sw(t, user(60), w.coll, w.rec1, add.Statement.ID(), suite.Dot{Device: suite.DeviceID{60}}, suite.OpAssign, "hi")
	check(t, w.check(t, c, x, w.e1))
	wantIs(t, w.check(t, c, x, w.e0), ErrRejected, ErrNotEligible)
}

// TestKeyOrCounterAloneIsNotEnough: statements that carry epoch 1's
// commitment and counter, but are not epoch 1 or in the followed roster,
// never make a write eligible, and neither does a listed write ID under
// another record.
func TestKeyOrCounterAloneIsNotEnough(t *testing.T) {
	w := newWorld(t)
	dot := suite.Dot{Device: suite.DeviceID{2}, HLC: suite.HLC{Millis: 900}}

	// An owner-signed but invalid successor of epoch 1's start, with the
	// same key commitment and counter (n skips ahead).
	c := chainOf(t, w.r1)
	invalid := forge(t, w.r1, w.o.id.SignKey, w.o.clk.next(), func(s *State) { s.N += 3 }, nil, nil)
	check(t, c.Add(invalid, Origin{}))
	if k := invalid.State().Key; k.N != w.r1.State().Key.N || k.Commit != w.r1.State().Key.Commit || c.Status() != StatusStalled {
		t.Fatal("setup")
	}
	wantIs(t, w.check(t, c, sw(t, w.w, w.coll, w.rec1, invalid.ID(), dot, suite.OpAssign, "x"), w.e1), ErrRejected, ErrNotFollowed)

	// A draft epoch start with the same counter, overtaken by epoch 1.
	c = chainOf(t, w.r1)
	draft, err := RemoveMember(w.r0, w.o.signer(), w.d.UID, newMapState())
	check(t, err)
	check(t, c.Add(draft.Statement, Origin{Channel: draft.Statement.ID()}))
	if draft.Statement.State().Key.N != w.r1.State().Key.N || c.Status() != StatusFollowing {
		t.Fatal("setup")
	}
	wantIs(t, w.check(t, c, sw(t, w.w, w.coll, w.rec1, draft.Statement.ID(), dot, suite.OpAssign, "x"), w.e1), ErrRejected, ErrNotFollowed)

	// Epoch 2 whose inventory lists wA's write ID under another record,
	// and another write under wA's record.
	st := newMapState()
	st.keep([16]byte{9}, w.wA.id)
	st.keep(w.rec1, w.wM.id)
	for _, e := range w.rmChange.Inventory.Entries() { // everything of epoch 1 was seen
		for _, id := range e.Writes {
			st.known[id] = true
		}
	}
	rot, err := Rotate(w.r1, w.o.signer(), st)
	check(t, err)
	r2 := extend(t, w.r1, rot)
	c = chainOf(t, r2)
	wantIs(t, w.check(t, c, w.wA, rot.Statement.ID()), ErrRejected, ErrNotEligible)
	wantIs(t, w.check(t, c, w.wM, rot.Statement.ID()), ErrRejected, ErrNotEligible)
	check(t, w.check(t, c, w.wA, w.e1)) // still fine where it is listed
}

// TestMissingInventoryHolds: without epoch 1's inventory, old writes are
// held; once fragments matching the commitment arrive, they are judged.
func TestMissingInventoryHolds(t *testing.T) {
	w := newWorld(t)
	c := NewChain(w.coll, Options{})
	for _, st := range w.r1.Statements() {
		check(t, c.Add(st, Origin{}))
	}
	wantIs(t, w.check(t, c, w.wA, w.e1), ErrHeld, ErrNoInventory)
	wantIs(t, w.check(t, c, w.late, w.e1), ErrHeld, ErrNoInventory)
	frags, err := Split(w.e1, w.rmChange.Inventory.Bytes(), 0)
	check(t, err)
	for _, f := range frags {
		check(t, c.AddFragment(f))
	}
	check(t, w.check(t, c, w.wA, w.e1))
	wantIs(t, w.check(t, c, w.late, w.e1), ErrRejected, ErrNotEligible)
}

// TestZeroRefRejected: only a genesis has no ref (§7.1, §9.1). A data write
// whose ref is zero names no statement that could ever arrive, so it is
// rejected, not held, in every channel and before the genesis too.
func TestZeroRefRejected(t *testing.T) {
	w := newWorld(t)
	x := sw(t, w.w, w.coll, w.rec1, [32]byte{}, suite.Dot{Device: suite.DeviceID{2}, HLC: suite.HLC{Millis: 400}}, suite.OpAssign, "milk")
	c := chainOf(t, w.r1)
	for _, ch := range [][32]byte{w.e0, w.e1} {
		wantIs(t, w.check(t, c, x, ch), ErrRejected, ErrRef)
	}
	// Before the genesis is known everything else is held; this is not.
	wantIs(t, w.check(t, NewChain(w.coll, Options{}), x, w.e0), ErrRejected, ErrRef)
}
