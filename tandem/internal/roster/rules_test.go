package roster

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// fixture: a collection of owner O with writer W (admitted by invite),
// reader D and writer M, all in epoch 0 (r0); r1 removes M (epoch 1).
type fixture struct {
	o        *owner
	w, d, m  *suite.Identity
	gen      *Change
	r0, r1   *Roster
	state    *mapState
	rmChange *Change
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{o: newOwner(1, 1), w: user(2), d: user(3), m: user(4), state: newMapState()}
	var err error
	f.gen, err = Genesis(f.o.signer(), f.o.id.UKa, "Jesper")
	check(t, err)
	r, err := NewRoster(f.gen.Statement)
	check(t, err)
	via := [16]byte{9, 9, 9}
	wm := member(f.w, RoleWriter, "Aimee")
	wm.Via = &via
	for _, m := range []Member{wm, member(f.d, RoleReader, "Dana"), member(f.m, RoleWriter, "Mo")} {
		ch, err := AddMember(r, f.o.signer(), m)
		check(t, err)
		r = extend(t, r, ch)
	}
	f.r0 = r
	f.rmChange, err = RemoveMember(r, f.o.signer(), f.m.UID, f.state)
	check(t, err)
	f.r1 = extend(t, r, f.rmChange)
	return f
}

// forge signs, with key, a successor of r's head whose state and body the
// edits change: an owner-signed statement that may break rules.
func forge(t testing.TB, r *Roster, key ed25519.PrivateKey, dot suite.Dot,
	editState func(*State), editValue func([]byte) []byte, editBody func(*suite.WriteBody)) *Statement {
	t.Helper()
	next := r.State().clone()
	next.N++
	if editState != nil {
		editState(next)
	}
	value, err := next.Marshal()
	check(t, err)
	if editValue != nil {
		value = editValue(value)
	}
	body := suite.WriteBody{Scope: r.Collection(), Record: rosterRecord, Field: StatementField,
		Op: suite.OpAssign, Value: value, Author: [32]byte(key.Public().(ed25519.PublicKey)),
		Dot: dot, Ref: r.Head().ID()}
	if editBody != nil {
		editBody(&body)
	}
	_, _, sig, err := suite.SignWrite(key, &body)
	check(t, err)
	st, err := NewStatement(body, sig)
	check(t, err)
	return st
}

// startEpoch turns a state into a valid epoch start (fresh commitment,
// counter +1, prev, snapshot).
func startEpoch(s *State) {
	prev := s.Key.Commit
	s.Key = Key{N: s.Key.N + 1, Commit: suite.Commit([32]byte{0xEE, byte(s.N)}), Prev: &prev}
	h := suite.H([]byte("inventory"), []byte{byte(s.N)})
	s.Snapshot = &h
}

func (s *State) memberPtr(uid [32]byte) *Member {
	for i := range s.Members {
		if s.Members[i].UID == uid {
			return &s.Members[i]
		}
	}
	return nil
}

// TestStatementRules breaks each rule of §8.2 (and §9.4, §11.9) exactly once
// with an owner-signed statement, and checks that Validate names that rule
// and that a Chain stalls on it instead of following it.
func TestStatementRules(t *testing.T) {
	f := newFixture(t)
	del, err := Delete(f.r1, f.o.signer())
	check(t, err)
	deleted := extend(t, f.r1, del)
	other := user(77)
	type tc struct {
		name  string
		base  *Roster
		key   ed25519.PrivateKey
		state func(*State)
		value func([]byte) []byte
		body  func(*suite.WriteBody)
		want  error
	}
	cases := []tc{
		{name: "valid same-epoch", base: f.r0, want: nil},
		{name: "valid epoch start", base: f.r1, state: startEpoch, want: nil},
		{name: "signed by another key", base: f.r0, key: other.SignKey, want: ErrAuthor},
		{name: "scope zero", base: f.r0, body: func(b *suite.WriteBody) { b.Scope = [16]byte{} }, want: ErrScope},
		{name: "other record", base: f.r0, body: func(b *suite.WriteBody) { b.Record = metaRecord }, want: ErrRecord},
		{name: "field not s", base: f.r0, body: func(b *suite.WriteBody) { b.Field = "S" }, want: ErrField},
		{name: "add op", base: f.r0, body: func(b *suite.WriteBody) { b.Op = suite.OpAdd }, want: ErrOp},
		{name: "context", base: f.r0, body: func(b *suite.WriteBody) { b.Context = suite.VV{{Device: suite.DeviceID{1}}} }, want: ErrContext},
		{name: "base", base: f.r0, body: func(b *suite.WriteBody) { b.Base = suite.VV{{Device: suite.DeviceID{1}}} }, want: ErrContext},
		{name: "element", base: f.r0, body: func(b *suite.WriteBody) { b.Element = []byte{0} }, want: ErrElement},
		{name: "ref skips head", base: f.r0, body: func(b *suite.WriteBody) { b.Ref = f.gen.Statement.ID() }, want: ErrRef},
		{name: "duplicate JSON name", base: f.r0, value: func(v []byte) []byte { return bytes.Replace(v, []byte(`{"n":`), []byte(`{"n":1,"n":`), 1) }, want: ErrState},
		{name: "n is a string", base: f.r0, value: func(v []byte) []byte { return bytes.Replace(v, []byte(`{"n":4`), []byte(`{"n":"4"`), 1) }, want: ErrState},
		{name: "trailing bytes", base: f.r0, value: func(v []byte) []byte { return append(v, '1') }, want: ErrState},
		{name: "n +2", base: f.r0, state: func(s *State) { s.N++ }, want: ErrSequence},
		{name: "n same", base: f.r0, state: func(s *State) { s.N-- }, want: ErrSequence},
		{name: "member twice", base: f.r0, state: func(s *State) { s.Members = append(s.Members, *s.memberPtr(f.w.UID)) }, want: ErrDuplicate},
		{name: "two owners", base: f.r0, state: func(s *State) { s.memberPtr(f.w.UID).Role = RoleOwner }, want: ErrOwner},
		{name: "no owner", base: f.r0, state: func(s *State) { s.memberPtr(f.o.id.UID).Role = RoleWriter }, want: ErrOwner},
		{name: "unknown role", base: f.r0, state: func(s *State) { s.memberPtr(f.w.UID).Role = "admin" }, want: ErrRole},
		{name: "uka changed", base: f.r0, state: func(s *State) { s.memberPtr(f.w.UID).UKA[0] ^= 1 }, want: ErrMemberChanged},
		{name: "name changed", base: f.r0, state: func(s *State) { s.memberPtr(f.w.UID).Name = "aimee" }, want: ErrMemberChanged},
		{name: "via dropped", base: f.r0, state: func(s *State) { s.memberPtr(f.w.UID).Via = nil }, want: ErrMemberChanged},
		{name: "via added", base: f.r0, state: func(s *State) { s.memberPtr(f.d.UID).Via = &[16]byte{1} }, want: ErrMemberChanged},
		{name: "successor of deleted", base: deleted, state: func(s *State) { s.Deleted = false }, want: ErrAfterDeleted},
		{name: "epoch start adds", base: f.r1, state: func(s *State) { startEpoch(s); s.Members = append(s.Members, member(other, RoleReader, "x")) }, want: ErrEpochAdds},
		{name: "epoch start reuses an earlier commitment", base: f.r1, state: func(s *State) { startEpoch(s); s.Key.Commit = f.gen.Commit }, want: ErrCommitReused},
		{name: "epoch start without snapshot", base: f.r1, state: func(s *State) { startEpoch(s); s.Snapshot = nil }, want: ErrSnapshot},
		{name: "epoch counter +2", base: f.r1, state: func(s *State) { startEpoch(s); s.Key.N++ }, want: ErrEpochCounter},
		{name: "epoch prev wrong", base: f.r1, state: func(s *State) { startEpoch(s); s.Key.Prev = &f.gen.Commit }, want: ErrEpochCounter},
		{name: "same epoch changes snapshot", base: f.r1, state: func(s *State) { h := [32]byte{1}; s.Snapshot = &h }, want: ErrSameEpoch},
		{name: "same epoch adds snapshot", base: f.r0, state: func(s *State) { h := [32]byte{1}; s.Snapshot = &h }, want: ErrSameEpoch},
		{name: "same commitment, counter +1", base: f.r0, state: func(s *State) { s.Key.N++ }, want: ErrSameEpoch},
		{name: "same epoch removes", base: f.r0, state: func(s *State) { s.Members = s.Members[:len(s.Members)-1] }, want: ErrNeedsEpoch},
		{name: "same epoch demotes", base: f.r0, state: func(s *State) { s.memberPtr(f.w.UID).Role = RoleReader }, want: ErrNeedsEpoch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := c.key
			if key == nil {
				key = f.o.id.SignKey
			}
			st := forge(t, c.base, key, f.o.clk.next(), c.state, c.value, c.body)
			err := c.base.Validate(st)
			if c.want == nil {
				check(t, err)
				return
			}
			wantIs(t, err, ErrRejected, ErrInvalidStatement, c.want)
			ch := chainOf(t, c.base)
			addErr := ch.Add(st, Origin{})
			r, _ := ch.Roster()
			if r.Head().ID() != c.base.Head().ID() {
				t.Fatalf("chain followed an invalid statement")
			}
			switch c.want {
			case ErrAuthor: // other keys' statements are not kept at all (§9.4)
				wantIs(t, addErr, ErrRejected, ErrAuthor)
				return
			case ErrRecord: // a write to another record is not a statement
				wantIs(t, addErr, ErrRejected, ErrNotRosterWrite)
				return
			case ErrRef: // a second successor of the genesis: dead (§9.4)
				check(t, addErr)
				if ch.Status() != StatusDead {
					t.Fatalf("status %v, want dead", ch.Status())
				}
				return
			}
			check(t, addErr)
			if ch.Status() != StatusStalled {
				t.Fatalf("status %v, want stalled", ch.Status())
			}
			if _, err := ch.Stalled(); !errors.Is(err, c.want) {
				t.Fatalf("stalled by %v, want %v", err, c.want)
			}
		})
	}
}

func TestBadSignatureRejected(t *testing.T) {
	f := newFixture(t)
	st := forge(t, f.r0, f.o.id.SignKey, f.o.clk.next(), nil, nil, nil)
	sig := bytes.Clone(st.Sig())
	sig[5] ^= 1
	_, err := NewStatement(st.Body(), sig)
	wantIs(t, err, ErrRejected, ErrSignature)
}

func TestGenesisRules(t *testing.T) {
	o := newOwner(1, 5)
	g, err := Genesis(o.signer(), o.id.UKa, "Jesper")
	check(t, err)
	st := g.Statement
	if CollectionID(st.ID()) != [16]byte(st.id[:16]) || st.Body().Scope != ([16]byte{}) || st.Body().Ref != ([32]byte{}) {
		t.Fatal("genesis identity")
	}
	r, err := NewRoster(st)
	check(t, err)
	if r.Epoch() != st.ID() || r.Collection() != CollectionID(st.ID()) || r.Owner() != o.id.UID {
		t.Fatal("epoch 0 is not the genesis ID")
	}
	if st.State().Key.Commit != suite.Commit(g.Key) {
		t.Fatal("genesis does not commit to its key")
	}
	other := user(9)
	cases := []struct {
		name  string
		state func(*State)
		body  func(*suite.WriteBody)
		want  error
	}{
		{"scope not zero", nil, func(b *suite.WriteBody) { b.Scope = [16]byte{1} }, ErrScope},
		{"ref not zero", nil, func(b *suite.WriteBody) { b.Ref = [32]byte{1} }, ErrRef},
		{"n not zero", func(s *State) { s.N = 1 }, nil, ErrSequence},
		{"key.n not zero", func(s *State) { s.Key.N = 1 }, nil, ErrEpochCounter},
		{"prev present", func(s *State) { s.Key.Prev = &[32]byte{} }, nil, ErrEpochCounter},
		{"snapshot present", func(s *State) { s.Snapshot = &[32]byte{} }, nil, ErrGenesis},
		{"no nonce", func(s *State) { s.Nonce = nil }, nil, ErrGenesis},
		{"deleted", func(s *State) { s.Deleted = true }, nil, ErrGenesis},
		{"second member", func(s *State) { s.Members = append(s.Members, member(other, RoleWriter, "x")) }, nil, ErrGenesis},
		{"owner is not the author", func(s *State) { s.Members[0].UID = other.UID }, nil, ErrOwner},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := st.State().clone()
			if c.state != nil {
				c.state(s)
			}
			v, err := s.Marshal()
			check(t, err)
			b := cloneBody(st.Body())
			b.Value = v
			if c.body != nil {
				c.body(&b)
			}
			_, _, sig, err := suite.SignWrite(o.id.SignKey, &b)
			check(t, err)
			bad, err := NewStatement(b, sig)
			check(t, err)
			wantIs(t, ValidateGenesis(bad), ErrRejected, c.want)
			ch := NewChain(CollectionID(bad.ID()), Options{})
			check(t, ch.Add(bad, Origin{}))
			if ch.Status() != StatusInvalidGenesis {
				t.Fatalf("status %v", ch.Status())
			}
		})
	}
}

// TestValueNotReserialized: a statement formatted differently from what
// encoding/json writes (spaces, member order, unknown members) is valid,
// and its ID and value are its exact signed bytes (§9.4).
func TestValueNotReserialized(t *testing.T) {
	f := newFixture(t)
	st := forge(t, f.r0, f.o.id.SignKey, f.o.clk.next(), nil, func(v []byte) []byte {
		v = bytes.Replace(v, []byte(`"deleted":false`), []byte(`"future": {"x": [1, 2]} , "deleted" : false`), 1)
		return append([]byte(" \n"), v...)
	}, nil)
	check(t, f.r0.Validate(st))
	ch := chainOf(t, f.r0)
	check(t, ch.Add(st, Origin{}))
	r, _ := ch.Roster()
	if !bytes.Equal(r.Head().Body().Value, st.Body().Value) || !bytes.HasPrefix(r.Head().Body().Value, []byte(" \n")) {
		t.Fatal("value bytes changed")
	}
	hb := r.Head().Body()
	si, _ := hb.SigInput()
	if suite.WriteID(si) != st.ID() {
		t.Fatal("ID is not the write ID of the signed bytes")
	}
}

// chainOf returns a chain that has been given r's statements, announced.
func chainOf(t testing.TB, r *Roster) *Chain {
	t.Helper()
	ch := NewChain(r.Collection(), Options{})
	for _, st := range r.Statements() {
		check(t, ch.Add(st, Origin{}))
	}
	for _, st := range r.Statements() {
		if inv, ok := r.Inventory(st.ID()); ok {
			check(t, ch.SetInventory(st.ID(), inv.Bytes()))
		}
	}
	got, _ := ch.Roster()
	if got.Head().ID() != r.Head().ID() {
		t.Fatalf("chain head %x, want %x", got.Head().ID(), r.Head().ID())
	}
	return ch
}
