package roster

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// history is a random sequence of owner operations: the rosters after each
// statement (rosters[i] ends in statements[i]).
type history struct {
	o          *owner
	rosters    []*Roster
	statements []*Statement
	epochStart map[[32]byte]bool
}

// randomHistory applies n random owner operations from a genesis; every
// returned statement was validated by Extend.
func randomHistory(t testing.TB, rng *rand.Rand, n int) *history {
	t.Helper()
	o := newOwner(1, rng.Uint64())
	g, err := Genesis(o.signer(), o.id.UKa, "owner")
	check(t, err)
	r, err := NewRoster(g.Statement)
	check(t, err)
	h := &history{o: o, rosters: []*Roster{r}, statements: []*Statement{g.Statement},
		epochStart: map[[32]byte]bool{g.Statement.ID(): true}}
	state := newMapState()
	users := byte(10)
	for i := 0; i < n; i++ {
		// Some data to carry over.
		rec := [16]byte{byte(rng.IntN(8))}
		state.keep(rec, suite.H([]byte{byte(i), byte(rng.IntN(256))}))
		others := []Member{}
		for _, m := range r.State().Members {
			if m.Role != RoleOwner {
				others = append(others, m)
			}
		}
		var ch *Change
		switch k := rng.IntN(10); {
		case k < 4 || len(others) == 0:
			users++
			role := RoleWriter
			if rng.IntN(2) == 0 {
				role = RoleReader
			}
			ch, err = AddMember(r, o.signer(), member(user(users), role, fmt.Sprintf("u%d", users)))
		case k < 6:
			m := others[rng.IntN(len(others))]
			role := RoleReader
			if m.Role == RoleReader {
				role = RoleWriter
			}
			ch, err = ChangeRole(r, o.signer(), m.UID, role, state)
		case k < 8:
			ch, err = RemoveMember(r, o.signer(), others[rng.IntN(len(others))].UID, state)
		default:
			ch, err = Rotate(r, o.signer(), state)
		}
		check(t, err)
		r = extend(t, r, ch)
		h.rosters = append(h.rosters, r)
		h.statements = append(h.statements, ch.Statement)
		if ch.StartsEpoch {
			h.epochStart[ch.Statement.ID()] = true
		}
	}
	return h
}

// summary is what replicas must agree on.
func summary(c *Chain) string {
	r, ok := c.Roster()
	if !ok {
		return c.Status().String()
	}
	s := r.State()
	invs := ""
	for _, st := range r.Statements() {
		if inv, ok := r.Inventory(st.ID()); ok {
			invs += fmt.Sprintf(" %x=%x", st.id[:4], inv.Hash())
		}
	}
	return fmt.Sprintf("%v head=%x epoch=%x n=%d members=%v deleted=%v inventories:%s", c.Status(), r.Head().ID(), r.Epoch(), s.N, s.Members, s.Deleted, invs)
}

func TestRandomOperationsValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		h := randomHistory(t, rng, 1+rng.IntN(30))
		last := h.rosters[len(h.rosters)-1]
		// Re-validate from scratch: every statement follows its parent.
		r, err := NewRoster(h.statements[0])
		check(t, err)
		for _, st := range h.statements[1:] {
			r, err = r.Extend(st)
			check(t, err)
		}
		if r.Head().ID() != last.Head().ID() || r.Epoch() != last.Epoch() {
			t.Fatal("replay differs")
		}
		// Epoch counter = number of epoch starts after the genesis.
		if got, want := last.State().Key.N, uint64(len(h.epochStart)-1); got != want {
			t.Fatalf("epoch counter %d, want %d", got, want)
		}
		// Source epochs: each statement's epoch is the last epoch start at or before it.
		var cur [32]byte
		for _, st := range h.statements {
			if h.epochStart[st.ID()] {
				cur = st.ID()
			}
			if got, _ := last.SourceEpoch(st.ID()); got != cur {
				t.Fatalf("source epoch of %x: %x, want %x", st.ID(), got, cur)
			}
		}
	}
}

// deliveries returns each statement once or twice with origins that a
// device could see: out of band, its epoch's channel, or, for an epoch
// start, first its own channel (a draft) and then the old channel.
func deliveries(rng *rand.Rand, h *history) []delivery {
	var ds []delivery
	for i, st := range h.statements {
		if h.epochStart[st.ID()] && i > 0 {
			if rng.IntN(2) == 0 {
				ds = append(ds, delivery{st, Origin{Channel: st.ID()}})
			}
			old, _ := h.rosters[i-1].SourceEpoch(h.statements[i-1].ID())
			ds = append(ds, delivery{st, Origin{Channel: old}})
			continue
		}
		ep, _ := h.rosters[i].SourceEpoch(st.ID())
		ds = append(ds, delivery{st, Origin{Channel: ep}})
		if rng.IntN(3) == 0 {
			ds = append(ds, delivery{st, Origin{}})
		}
	}
	rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	return ds
}

type delivery struct {
	st   *Statement
	from Origin
}

func TestReorderingGivesSameRoster(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 60; i++ {
		h := randomHistory(t, rng, 1+rng.IntN(25))
		want := summary(chainOf(t, h.rosters[len(h.rosters)-1]))
		last := h.rosters[len(h.rosters)-1]
		var frags []*Fragment
		for _, st := range last.Statements() {
			if inv, ok := last.Inventory(st.ID()); ok {
				fs, err := Split(st.ID(), inv.Bytes(), 1500)
				check(t, err)
				frags = append(frags, fs...)
			}
		}
		if got := strings.Count(want[strings.Index(want, "inventories:"):], "="); got != len(h.epochStart)-1 {
			t.Fatalf("%d inventories in the expected state, want %d", got, len(h.epochStart)-1)
		}
		for rep := 0; rep < 4; rep++ {
			c := NewChain(h.rosters[0].Collection(), Options{})
			ds := deliveries(rng, h)
			order := rng.Perm(len(ds) + len(frags))
			for _, k := range order {
				if k < len(ds) {
					check(t, c.Add(ds[k].st, ds[k].from))
				} else {
					check(t, c.AddFragment(frags[k-len(ds)]))
				}
			}
			if got := summary(c); got != want {
				t.Fatalf("history %d replica %d:\n got %s\nwant %s", i, rep, got, want)
			}
		}
	}
}

// TestSecondSuccessorKills inserts a second owner-signed successor (valid
// or not) after a random statement: every replica finds the collection dead
// once it has both, in any order, and not before.
func TestSecondSuccessorKills(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 60; i++ {
		h := randomHistory(t, rng, 2+rng.IntN(20))
		at := rng.IntN(len(h.statements) - 1) // statements[at] already has a successor
		var editValue func([]byte) []byte
		if rng.IntN(2) == 0 {
			editValue = func([]byte) []byte { return []byte(`{"junk":true}`) }
		}
		second := forge(t, h.rosters[at], h.o.id.SignKey, h.o.clk.next(), nil, editValue, nil)
		for rep := 0; rep < 3; rep++ {
			c := NewChain(h.rosters[0].Collection(), Options{})
			ds := deliveries(rng, h)
			pos := rng.IntN(len(ds) + 1)
			ds = slices.Insert(ds, pos, delivery{second, Origin{}})
			for k, d := range ds {
				check(t, c.Add(d.st, d.from))
				// The owner is known from the genesis: until it arrives
				// nothing can be judged, so nothing is dead yet.
				seenBoth := k >= pos && seenAll(ds[:k+1], h.statements[at+1]) && seenAll(ds[:k+1], h.statements[0])
				if dead := c.Status() == StatusDead; dead != seenBoth {
					t.Fatalf("history %d at %d: dead=%v after %d deliveries, seen both=%v", i, at, dead, k+1, seenBoth)
				}
			}
			conflict, _ := c.Dead()
			if conflict.Parent != h.statements[at].ID() {
				t.Fatalf("conflict at %x, want %x", conflict.Parent, h.statements[at].ID())
			}
		}
	}
}

// seenAll reports whether st was delivered and counts as a successor: it
// was delivered announced, or a statement built on it was (§11.6).
func seenAll(ds []delivery, st *Statement) bool {
	ids := map[[32]byte]*Statement{}
	for _, d := range ds {
		ids[d.st.ID()] = d.st
	}
	if ids[st.ID()] == nil {
		return false
	}
	for _, d := range ds {
		if d.from.Channel == d.st.ID() && d.st.Parent() != ([32]byte{}) {
			continue // a draft delivery
		}
		for x := d.st; x != nil; x = ids[x.Parent()] {
			if x.ID() == st.ID() {
				return true
			}
		}
	}
	return false
}

func TestOtherKeysDoNotCount(t *testing.T) {
	f := newFixture(t)
	c := chainOf(t, f.r0)
	mallory := user(66)
	st := forge(t, f.r0, mallory.SignKey, f.o.clk.next(), nil, nil, nil)
	wantIs(t, c.Add(st, Origin{}), ErrRejected, ErrAuthor)
	check(t, c.Add(f.rmChange.Statement, Origin{}))
	if c.Status() != StatusFollowing {
		t.Fatalf("status %v", c.Status())
	}
}

func TestDrafts(t *testing.T) {
	f := newFixture(t)
	draft := f.rmChange.Statement // removes M: an epoch start
	other, err := RemoveMember(f.r0, f.o.signer(), f.d.UID, f.state)
	check(t, err)

	c := chainOf(t, f.r0)
	check(t, c.Add(draft, Origin{Channel: draft.ID()})) // only in its own channel
	if r, _ := c.Roster(); r.Head().ID() != f.r0.Head().ID() || c.Status() != StatusFollowing {
		t.Fatal("a draft was followed")
	}
	check(t, c.Add(other.Statement, Origin{Channel: f.r0.Epoch()})) // announced
	if r, _ := c.Roster(); r.Head().ID() != other.Statement.ID() || c.Status() != StatusFollowing {
		t.Fatalf("announced change not followed: %v", c.Status())
	}
	// Once the draft is announced too, the owner signed two decisions.
	check(t, c.Add(draft, Origin{Channel: f.r0.Epoch()}))
	if c.Status() != StatusDead {
		t.Fatalf("status %v, want dead", c.Status())
	}

	// Announce (a verified grant) makes a draft a successor.
	c = chainOf(t, f.r0)
	check(t, c.Add(draft, Origin{Channel: draft.ID()}))
	c.Announce(draft.ID())
	if r, _ := c.Roster(); r.Head().ID() != draft.ID() {
		t.Fatal("Announce did not promote the draft")
	}

	// Announce may come first (a grant read before the statement).
	c = chainOf(t, f.r0)
	c.Announce(draft.ID())
	check(t, c.Add(draft, Origin{Channel: draft.ID()}))
	if r, _ := c.Roster(); r.Head().ID() != draft.ID() {
		t.Fatal("an earlier Announce was lost")
	}

	// A statement built on the draft, read in the new channel, announces it.
	c = chainOf(t, f.r0)
	check(t, c.Add(draft, Origin{Channel: draft.ID()}))
	next, err := AddMember(f.r1, f.o.signer(), member(user(50), RoleReader, "n"))
	check(t, err)
	check(t, c.Add(next.Statement, Origin{Channel: draft.ID()}))
	if r, _ := c.Roster(); r.Head().ID() != next.Statement.ID() {
		t.Fatal("a child did not announce its draft parent")
	}
}

func TestOutOfOrderHeld(t *testing.T) {
	h := randomHistory(t, rand.New(rand.NewPCG(7, 8)), 10)
	c := NewChain(h.rosters[0].Collection(), Options{})
	for i := len(h.statements) - 1; i >= 0; i-- { // newest first, genesis last
		check(t, c.Add(h.statements[i], Origin{}))
		if i > 0 && c.Status() != StatusWaiting {
			t.Fatalf("status %v before the genesis", c.Status())
		}
	}
	if got, want := c.Status(), StatusFollowing; got != want {
		t.Fatalf("status %v", got)
	}
	if r, _ := c.Roster(); r.Head().ID() != h.statements[len(h.statements)-1].ID() {
		t.Fatal("head")
	}
	for _, st := range h.statements { // the inventories can follow later
		if inv, ok := h.rosters[len(h.rosters)-1].Inventory(st.ID()); ok {
			check(t, c.SetInventory(st.ID(), inv.Bytes()))
		}
	}
	if got, want := summary(c), summary(chainOf(t, h.rosters[len(h.rosters)-1])); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}

	// Parents missing in the middle: the head waits at the gap.
	c = NewChain(h.rosters[0].Collection(), Options{})
	for i, st := range h.statements {
		if i != 4 {
			check(t, c.Add(st, Origin{}))
		}
	}
	if r, _ := c.Roster(); r.Head().ID() != h.statements[3].ID() {
		t.Fatal("head moved past a missing statement")
	}
	check(t, c.Add(h.statements[4], Origin{}))
	if r, _ := c.Roster(); r.Head().ID() != h.statements[len(h.statements)-1].ID() {
		t.Fatal("head did not catch up")
	}

	// Before the genesis, statements of other signers are dropped on its arrival.
	c = NewChain(h.rosters[0].Collection(), Options{})
	stranger := forge(t, h.rosters[2], user(99).SignKey, h.o.clk.next(), nil, nil, nil)
	check(t, c.Add(stranger, Origin{}))
	for _, st := range h.statements {
		check(t, c.Add(st, Origin{}))
	}
	if c.Status() != StatusFollowing || len(c.Statements()) != len(h.statements) {
		t.Fatalf("status %v, %d statements kept", c.Status(), len(c.Statements()))
	}
}

func TestHoldingLimits(t *testing.T) {
	h := randomHistory(t, rand.New(rand.NewPCG(9, 10)), 6)
	now := time.Date(2026, 11, 12, 0, 0, 0, 0, time.UTC)
	c := NewChain(h.rosters[0].Collection(), Options{Now: func() time.Time { return now }})
	check(t, c.Add(h.statements[0], Origin{}))
	check(t, c.Add(h.statements[1], Origin{}))
	check(t, c.Add(h.statements[3], Origin{})) // parent 2 missing: held
	check(t, c.Add(h.statements[5], Origin{})) // parent 4 missing: held
	now = now.Add(29 * 24 * time.Hour)
	if s, _ := c.Expire(); s != 0 {
		t.Fatalf("evicted %d statements before 30 days", s)
	}
	now = now.Add(2 * 24 * time.Hour)
	if s, _ := c.Expire(); s != 2 {
		t.Fatalf("evicted %d statements after 31 days, want 2", s)
	}
	if len(c.Statements()) != 2 {
		t.Fatal("connected statements were evicted")
	}

	// A shorter configured hold, and a bound on held statements.
	c = NewChain(h.rosters[0].Collection(), Options{Now: func() time.Time { return now },
		Limits: Limits{HoldFor: time.Hour, MaxHeldStatements: 2}})
	check(t, c.Add(h.statements[0], Origin{}))
	check(t, c.Add(h.statements[2], Origin{}))
	check(t, c.Add(h.statements[4], Origin{}))
	wantIs(t, c.Add(h.statements[6], Origin{}), ErrLimit) // a third orphan
	check(t, c.Add(h.statements[5], Origin{}))            // parent 4 is known: not an orphan
	now = now.Add(2 * time.Hour)
	if s, _ := c.Expire(); s != 3 {
		t.Fatalf("evicted %d, want 3", s)
	}
}

// TestDeadIsFinal: after death nothing moves the roster and writes stop.
func TestDeadIsFinal(t *testing.T) {
	f := newFixture(t)
	c := chainOf(t, f.r0)
	a := forge(t, f.r0, f.o.id.SignKey, f.o.clk.next(), nil, nil, nil)
	b := forge(t, f.r0, f.o.id.SignKey, f.o.clk.next(), nil, nil, nil)
	check(t, c.Add(a, Origin{}))
	check(t, c.Add(b, Origin{}))
	conflict, dead := c.Dead()
	if !dead || !(conflict.A.Equal(a) && conflict.B.Equal(b)) {
		t.Fatal("no conflict")
	}
	w, sig, _ := dataWrite(t, f.w, f.r0.Collection(), [16]byte{1}, f.r0.Head().ID(), suite.Dot{}, suite.OpAssign, "x")
	if _, err := c.CheckWrite(&w, sig, f.r0.Epoch()); !errors.Is(err, ErrDead) {
		t.Fatalf("write in a dead collection: %v", err)
	}
	// The evidence survives expiry.
	if s, _ := c.Expire(); s != 0 || !bytes.Equal(conflict.A.Sig(), a.Sig()) {
		t.Fatal("evidence evicted")
	}
}
