package record

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The behaviours §9.2, §9.3 and §11.6 name, each with real signatures:
// writes are built by Build, signed by suite.SignWrite, and travel between
// peers through Ingest (suite.VerifyStrict).

type peer struct {
	t   testing.TB
	s   *State
	w   *Writer
	now int64
}

func newPeer(t testing.TB, user, device int, epoch uint64) *peer {
	p := &peer{t: t, s: NewState(testValidator()), now: 1_700_000_000_000}
	p.w = writer(user, device, epoch, &p.now)
	return p
}

// do builds c, keeps it, and returns it for delivery.
func (p *peer) do(c Change) *Write {
	p.t.Helper()
	p.now++
	return mustBuild(p.t, p.s, p.w, c)
}

// recv ingests writes as a receiver does, from their signed fields.
func (p *peer) recv(ws ...*Write) {
	p.t.Helper()
	for _, w := range ws {
		body := w.Body()
		if _, _, err := p.s.Ingest(&body, w.Sig(), w.Epoch()); err != nil {
			p.t.Fatalf("ingest: %v", err)
		}
	}
}

// enter moves the peer to epoch e.
func (p *peer) enter(e uint64) { p.w.Epoch, p.w.Ref = e, [32]byte{byte(e)} }

func values(s *State, r [16]byte, f string) []string {
	var out []string
	for _, v := range s.Values(r, f) {
		out = append(out, string(v.Value))
	}
	slices.Sort(out)
	return out
}

func members(s *State, r [16]byte, f string) []string {
	var out []string
	for _, m := range s.Members(r, f) {
		out = append(out, string(m))
	}
	return out
}

// sameState fails unless all states encode identically.
func sameState(t *testing.T, ss ...*State) {
	t.Helper()
	for _, s := range ss[1:] {
		if !bytes.Equal(encode(t, ss[0]), encode(t, s)) {
			t.Fatal("replicas that saw the same writes differ")
		}
	}
}

var r1 = recID(1)

func TestConcurrentAssignsBecomeSiblings(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	wa, wb := a.do(assign(r1, "title", "milk")), b.do(assign(r1, "title", "bread"))
	a.recv(wb)
	b.recv(wa)
	sameState(t, a.s, b.s)
	if got := values(a.s, r1, "title"); !slices.Equal(got, []string{"bread", "milk"}) {
		t.Fatalf("siblings = %q", got)
	}
	// A write made after seeing both settles the conflict.
	b.recv(a.do(assign(r1, "title", "oat milk")))
	sameState(t, a.s, b.s)
	if got := values(b.s, r1, "title"); !slices.Equal(got, []string{"oat milk"}) {
		t.Fatalf("after settling = %q", got)
	}
}

func TestRemoveThatSawEveryAddRemoves(t *testing.T) {
	a, b, c := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1), newPeer(t, 1, 3, 1)
	xa, xb := a.do(add(r1, "tags", "x")), b.do(add(r1, "tags", "x"))
	c.recv(xa, xb)
	rm := c.do(remove(r1, "tags", "x"))
	a.recv(xb, rm)
	b.recv(rm, xa)
	sameState(t, a.s, b.s, c.s)
	if a.s.Contains(r1, "tags", []byte("x")) || len(a.s.Members(r1, "tags")) != 0 {
		t.Fatalf("element still present: %q", members(a.s, r1, "tags"))
	}
}

func TestConcurrentAddAndRemoveLeaveElementIn(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	first := a.do(add(r1, "tags", "x"))
	b.recv(first)
	rm := b.do(remove(r1, "tags", "x")) // saw the first add only
	again := a.do(add(r1, "tags", "x")) // concurrent with the remove
	a.recv(rm)
	b.recv(again)
	sameState(t, a.s, b.s)
	if got := members(a.s, r1, "tags"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("members = %q, want the element in (add wins)", got)
	}
	if !a.s.Superseded(first) {
		t.Fatal("the add both later writes saw is not superseded")
	}
}

func TestDeleteWinsOverConcurrentAndLaterEdits(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	created := a.do(assign(r1, "title", "milk"))
	b.recv(created)
	tomb := a.do(del(r1))
	concurrent := b.do(assign(r1, "title", "bread"))
	b.now += 1_000_000 // a later edit, by a device that has not seen the delete
	later := b.do(add(r1, "tags", "x"))
	b.enter(2)
	nextEpoch := b.do(assign(r1, "done", "yes"))
	a.recv(concurrent, later, nextEpoch)
	b.recv(tomb)
	c := newPeer(t, 1, 3, 2)
	c.recv(nextEpoch, later, tomb, concurrent, created)
	sameState(t, a.s, b.s, c.s)
	for _, p := range []*peer{a, b, c} {
		if !p.s.Deleted(r1) || len(p.s.Fields(r1)) != 0 {
			t.Fatalf("record not deleted: fields %q", p.s.Fields(r1))
		}
		if ws := p.s.Writes(r1); len(ws) != 1 || ws[0].ID() != tomb.ID() {
			t.Fatalf("published writes of a deleted record: %d", len(ws))
		}
	}
	if _, _, err := a.s.Build(a.w, assign(r1, "title", "x")); !errors.Is(err, ErrDeleted) {
		t.Fatalf("build on deleted record: %v", err)
	}
	if !a.s.Dominates([]*Write{created, concurrent, later, nextEpoch, tomb}) {
		t.Fatal("tombstone state does not dominate the record's old writes")
	}
}

func TestReplayedOldAddStaysSuperseded(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	old := a.do(add(r1, "tags", "x"))
	b.recv(old)
	rm := b.do(remove(r1, "tags", "x"))
	a.recv(rm)
	for range 3 {
		a.recv(old) // replayed, again and again
	}
	if a.s.Contains(r1, "tags", []byte("x")) {
		t.Fatal("replayed add came back")
	}
	// Also after a rotation: the remove, carried into epoch 2 by an
	// inventory, still supersedes the replay.
	c := newPeer(t, 1, 3, 2)
	c.recv(rm, old, old)
	if c.s.Contains(r1, "tags", []byte("x")) || c.s.Add(old) {
		t.Fatal("replayed add not superseded in a later epoch")
	}
	sameState(t, a.s, b.s, c.s)
}

// evilWrite signs, as user 9, an assign whose context covers every listed
// device up to the end of time.
func evilWrite(t *testing.T, epoch uint64, value string, devices ...int) *Write {
	var ctx suite.VV
	for _, d := range devices {
		ctx = append(ctx, suite.Dot{Device: dev(d), HLC: suite.HLC{Millis: suite.MaxHLCMillis, Counter: 0xffff}})
	}
	body := suite.WriteBody{Scope: testScope, Record: r1, Field: "title", Op: suite.OpAssign, Value: []byte(value),
		Author: pubOf(key(9)), Dot: dot(9, 5, 0), Ref: [32]byte{byte(epoch)}, Context: ctx, Base: suite.VV{}}
	w, err := testValidator().sign(key(9), &body, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestFutureContextCannotBeatFirstHonestWriteOfNextEpoch(t *testing.T) {
	a := newPeer(t, 0, 1, 1)
	h1 := a.do(assign(r1, "title", "honest"))
	m := evilWrite(t, 1, "pinned", 1, 2, 3)
	a.recv(m)
	if got := values(a.s, r1, "title"); !slices.Equal(got, []string{"pinned"}) {
		t.Fatalf("in epoch 1 the future-covering write pins the field: %q", got)
	}
	if a.s.Add(h1) {
		t.Fatal("honest epoch-1 write re-added over the pin")
	}
	if _, _, err := a.s.Build(a.w, assign(r1, "title", "again")); err != nil {
		t.Fatal(err)
	}
	// Epoch 2: the member was removed. The first honest write settles it.
	a.enter(2)
	h2 := a.do(assign(r1, "title", "settled"))
	if got := values(a.s, r1, "title"); !slices.Equal(got, []string{"settled"}) {
		t.Fatalf("first honest write of epoch 2 did not settle: %q", got)
	}
	// A device that never saw m: m and h2 conflict, but m never beats h2.
	b := newPeer(t, 1, 2, 2)
	b.recv(h2, m, evilWrite(t, 1, "pinned later", 1, 2, 3, 9))
	if !b.s.Holds(h2) || b.s.Superseded(h2) {
		t.Fatal("an epoch-1 context superseded an epoch-2 write")
	}
	// Everyone who has all three converges on h2 alone.
	a.recv(m, h1)
	c := newPeer(t, 1, 3, 2)
	c.recv(m, h2, h1)
	sameState(t, a.s, c.s)
}

func TestResignedPairComesBackAsConflict(t *testing.T) {
	a, a2 := newPeer(t, 0, 1, 1), newPeer(t, 0, 2, 1)
	x := a.do(assign(r1, "title", "first"))
	a2.recv(x)
	y := a2.do(assign(r1, "title", "second")) // replaced x
	if !a2.s.Superseded(x) {
		t.Fatal("y does not supersede x")
	}
	// Both missed the inventory; the user's device signs them again.
	a.enter(2)
	v := a.s.Validator()
	x2, err := v.Resign(a.w, x)
	if err != nil {
		t.Fatal(err)
	}
	y2, err := v.Resign(a.w, y)
	if err != nil {
		t.Fatal(err)
	}
	c := newPeer(t, 1, 3, 2)
	c.recv(x, y, y2, x2)
	if got := values(c.s, r1, "title"); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("re-signed pair = %q, want a conflict", got)
	}
	// Signing again is deterministic: another device of the user gets the
	// same bytes and write ID.
	a2.now += 12345
	a2.enter(2)
	y2b, err := a2.s.Validator().Resign(a2.w, y)
	if err != nil {
		t.Fatal(err)
	}
	if y2b.ID() != y2.ID() || !bytes.Equal(y2b.Sig(), y2.Sig()) {
		t.Fatal("signing again is not deterministic")
	}
	yb, y2body := y.Body(), y2.Body()
	if y2body.Record != yb.Record || y2body.Field != yb.Field || y2body.Op != yb.Op || y2body.Dot != yb.Dot ||
		!bytes.Equal(y2body.Value, yb.Value) || len(y2body.Context) != 0 || y2body.Ref != a.w.Ref ||
		!slices.Equal(y2body.Base, vvJoin(yb.Base, reach(y))) {
		t.Fatalf("re-signed body wrong: %+v", y2body)
	}
	if _, err := v.Resign(newPeer(t, 1, 9, 2).w, y); !errors.Is(err, ErrNotAuthor) {
		t.Fatalf("resign by another user: %v", err)
	}
	a.enter(1)
	if _, err := v.Resign(a.w, y); !errors.Is(err, ErrEpoch) {
		t.Fatalf("resign into the same epoch: %v", err)
	}
}

func TestSameDotTwiceIsTwoWrites(t *testing.T) {
	mk := func(value string) *Write {
		body := suite.WriteBody{Scope: testScope, Record: r1, Field: "title", Op: suite.OpAssign, Value: []byte(value),
			Author: pubOf(key(9)), Dot: dot(9, 5, 0), Ref: [32]byte{1}, Context: suite.VV{}, Base: suite.VV{}}
		w, err := testValidator().sign(key(9), &body, 1)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	p, q := newPeer(t, 0, 1, 1), newPeer(t, 0, 2, 1)
	w1, w2 := mk("one"), mk("two")
	p.recv(w1, w2)
	q.recv(w2, w1)
	sameState(t, p.s, q.s)
	if got := values(p.s, r1, "title"); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("same-dot writes = %q", got)
	}
}

func TestContextsCoveringEachOtherConflict(t *testing.T) {
	m1, m2 := evilWrite(t, 1, "m1", 9), evilWrite(t, 1, "m2", 9) // each covers dot(9,5,0)
	p := newPeer(t, 0, 1, 1)
	p.recv(m1, m2)
	if got := values(p.s, r1, "title"); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Fatalf("mutually covering writes = %q", got)
	}
}

func TestUnknownFieldsMergedAndCarried(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	w := a.do(assign(r1, "x-from-version-9", "\x00\xffopaque"))
	b.recv(w)
	got, err := DecodeState(encode(t, b.s), testValidator())
	if err != nil {
		t.Fatal(err)
	}
	if !got.Holds(w) || !slices.Equal(got.Fields(r1), []string{"x-from-version-9"}) {
		t.Fatal("unknown field not carried")
	}
	if v := got.Values(r1, "x-from-version-9"); len(v) != 1 || string(v[0].Value) != "\x00\xffopaque" {
		t.Fatalf("value changed: %v", v)
	}
}

func TestBuildSupersedesExactlyWhatWasSeen(t *testing.T) {
	a, b, c := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1), newPeer(t, 1, 3, 1)
	seen := a.do(assign(r1, "title", "a"))
	unseen := c.do(assign(r1, "title", "c"))
	b.recv(seen)
	nw := b.do(assign(r1, "title", "b"))
	if !supersedes(nw, seen) || supersedes(nw, unseen) || supersedes(unseen, nw) {
		t.Fatal("honest write does not supersede exactly what it saw")
	}
	// In a later epoch, base carries everything seen before.
	b.recv(unseen)
	b.enter(2)
	e2 := b.do(assign(r1, "title", "e2"))
	if len(e2.Body().Context) != 0 || !supersedes(e2, nw) || !supersedes(e2, unseen) {
		t.Fatal("first write of a new epoch does not supersede what it saw through its base")
	}
	// A set op covers only its element's register.
	add1 := b.do(add(r1, "tags", "x"))
	add2 := b.do(add(r1, "tags", "y"))
	if supersedes(add2, add1) || len(add2.Body().Context) != 0 {
		t.Fatal("an add covers another element")
	}
}

func TestBuildUnsettleableWritesWhatFits(t *testing.T) {
	// Three malicious writes, each with a context of 600 made-up devices:
	// covering all of them would need 1,800 entries.
	p := newPeer(t, 0, 1, 1)
	var evil []*Write
	for i := range 3 {
		ctx := make(suite.VV, 600)
		for j := range ctx {
			ctx[j] = suite.Dot{Device: suite.DeviceID{0xf0, byte(i), byte(j >> 8), byte(j)}, HLC: suite.HLC{Millis: 1}}
		}
		body := suite.WriteBody{Scope: testScope, Record: r1, Field: "title", Op: suite.OpAssign, Value: []byte{byte(i)},
			Author: pubOf(key(9)), Dot: dot(0xe0+i, 5, 0), Ref: [32]byte{1}, Context: ctx, Base: suite.VV{}}
		w, err := testValidator().sign(key(9), &body, 1)
		if err != nil {
			t.Fatal(err)
		}
		evil = append(evil, w)
	}
	p.recv(evil...)
	if !p.s.Unsettleable(assign(r1, "title", ""), 1) {
		t.Fatal("field not reported unsettleable")
	}
	if p.s.Unsettleable(assign(r1, "other", ""), 1) {
		t.Fatal("untouched field reported unsettleable")
	}
	w, unsettleable, err := p.s.Build(p.w, assign(r1, "title", "mine"))
	if err != nil || !unsettleable {
		t.Fatalf("build: unsettleable=%v err=%v", unsettleable, err)
	}
	body := w.Body()
	if len(body.Context) > suite.MaxVVEntries {
		t.Fatalf("context of %d entries", len(body.Context))
	}
	if _, err := testValidator().Validate(&body, w.Sig(), 1); err != nil {
		t.Fatalf("write with what fits is invalid: %v", err)
	}
	p.s.Add(w)
	// 601 entries per reach: one fits, two do not.
	if got := len(p.s.Values(r1, "title")); got != 3 {
		t.Fatalf("%d siblings, want the new write and the two that did not fit", got)
	}
	covered := 0
	for _, e := range evil {
		if p.s.Superseded(e) {
			covered++
		}
	}
	if covered != 1 {
		t.Fatalf("new write covers %d of the malicious writes, want 1", covered)
	}
	// Deterministic: the same state and clock give the same vectors.
	q := newPeer(t, 0, 1, 1)
	q.recv(evil[2], evil[0], evil[1])
	w2, _, _ := q.s.Build(q.w, assign(r1, "title", "mine"))
	if w2.ID() != w.ID() {
		t.Fatal("building with what fits is not deterministic")
	}
	// The way out: delete the record.
	if _, _, err := p.s.Build(p.w, del(r1)); err != nil {
		t.Fatal(err)
	}
}

func TestDominatesAndSuperseded(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	w1 := a.do(assign(r1, "title", "a"))
	b.recv(w1)
	w2 := b.do(assign(r1, "title", "b"))
	other := a.do(assign(recID(2), "title", "z"))
	if !b.s.Superseded(w1) || b.s.Superseded(w2) || !b.s.Holds(w2) {
		t.Fatal("Superseded/Holds wrong")
	}
	if !b.s.Dominates([]*Write{w1, w2}) || b.s.Dominates([]*Write{w1, other}) {
		t.Fatal("Dominates wrong")
	}
}

func TestBuildAndResignRejectBadInput(t *testing.T) {
	p := newPeer(t, 0, 1, 1)
	x := p.do(assign(r1, "title", "x"))
	before := p.w.Clock.Last()
	cases := map[string]struct {
		w    *Writer
		c    Change
		want error
	}{
		"no key":         {&Writer{Clock: p.w.Clock}, assign(r1, "t", "v"), ErrWriter},
		"no clock":       {&Writer{Key: key(0)}, assign(r1, "t", "v"), ErrWriter},
		"reserved field": {p.w, assign(r1, "_x", "v"), ErrReservedField},
		"named delete":   {p.w, del(suite.NamedRecordID("_meta")), ErrNamedDelete},
		"value on add":   {p.w, Change{Record: r1, Field: "tags", Op: suite.OpAdd, Value: []byte("v")}, ErrOpShape},
		"bad op":         {p.w, Change{Record: r1, Field: "f", Op: 9}, ErrMalformed},
	}
	for name, c := range cases {
		if _, _, err := p.s.Build(c.w, c.c); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if p.w.Clock.Last() != before {
		t.Error("a refused build consumed an HLC")
	}
	if _, err := p.s.Validator().Resign(&Writer{Epoch: 2}, x); !errors.Is(err, ErrWriter) {
		t.Errorf("resign without key: %v", err)
	}
	// A base that would pass 1,024 entries is refused, not signed.
	big := make(suite.VV, suite.MaxVVEntries)
	for i := range big {
		big[i] = suite.Dot{Device: suite.DeviceID{0xf0, byte(i >> 8), byte(i)}, HLC: suite.HLC{Millis: 1}}
	}
	body := suite.WriteBody{Scope: testScope, Record: r1, Field: "title", Op: suite.OpAssign, Author: pubOf(key(0)),
		Dot: dot(1, 5, 0), Ref: [32]byte{1}, Context: suite.VV{}, Base: big}
	full, err := testValidator().sign(key(0), &body, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.enter(2)
	if _, err := p.s.Validator().Resign(p.w, full); !errors.Is(err, ErrVectorLimit) {
		t.Errorf("resign past the vector limit: %v", err)
	}
}

func TestResignCandidates(t *testing.T) {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	mine := a.do(assign(r1, "title", "mine"))
	listed := a.do(add(r1, "tags", "x"))
	gone := a.do(assign(recID(2), "title", "soon deleted"))
	tomb := a.do(del(recID(2)))
	a.recv(b.do(assign(recID(3), "title", "theirs")))
	a.enter(2)
	current := a.do(assign(recID(4), "title", "already in epoch 2"))
	got := a.s.ResignCandidates(pubOf(key(0)), 2, func(_ [16]byte, id [32]byte) bool { return id == listed.ID() })
	var ids [][32]byte
	for _, w := range got {
		ids = append(ids, w.ID())
	}
	if len(ids) != 2 || !slices.Contains(ids, mine.ID()) || !slices.Contains(ids, tomb.ID()) {
		t.Fatalf("candidates = %x", ids)
	}
	if slices.Contains(ids, gone.ID()) || slices.Contains(ids, current.ID()) {
		t.Fatal("a superseded or current-epoch write is a candidate")
	}
}
