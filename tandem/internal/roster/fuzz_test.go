package roster

import (
	"bytes"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// FuzzParseState: any bytes either parse into a state whose marshalled form
// parses to the same state, or are rejected with ErrState; never a panic.
func FuzzParseState(f *testing.F) {
	fx := newFixture(f)
	for _, st := range fx.r1.Statements() {
		f.Add(st.Body().Value)
	}
	f.Add([]byte(`{"n":0,"key":{"n":0,"commit":""},"members":[]}`))
	f.Add([]byte(`{"n":1,"n":2}`))
	f.Add([]byte("{\"n\":1,\"key\":{\"n\":0,\"commit\":\"\\ud800\"},\"members\":null}"))
	f.Fuzz(func(t *testing.T, value []byte) {
		s, err := ParseState(value)
		if err != nil {
			wantIs(t, err, ErrState)
			return
		}
		out, err := s.Marshal()
		if err != nil {
			return // e.g. a name that is not valid UTF-8 cannot be re-made
		}
		back, err := ParseState(out)
		if err != nil {
			t.Fatalf("own output rejected: %v\n%s", err, out)
		}
		again, err := back.Marshal()
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("unstable: %s vs %s", out, again)
		}
	})
}

// FuzzDecodeFragment: any payload decodes into a fragment that re-encodes
// to an equal fragment, or is rejected with ErrFragment; and a chain given
// any fragment neither panics nor follows anything new.
func FuzzDecodeFragment(f *testing.F) {
	fx := newWorld(f)
	frags, err := Split(fx.e1, fx.rmChange.Inventory.Bytes(), 0)
	if err != nil {
		f.Fatal(err)
	}
	for _, fr := range frags {
		p, _ := fr.Encode()
		f.Add(p)
	}
	f.Add([]byte(`{"inventory":{"epoch":"","part":0,"parts":1,"bytes":"AA"},"writes":[]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fr, err := DecodeFragment(payload, 0)
		if err != nil {
			wantIs(t, err, ErrFragment)
			return
		}
		p, err := fr.Encode()
		check(t, err)
		back, err := DecodeFragment(p, 0)
		check(t, err)
		if back.Epoch != fr.Epoch || back.Part != fr.Part || back.Parts != fr.Parts || !bytes.Equal(back.Bytes, fr.Bytes) {
			t.Fatal("round trip")
		}
		c := NewChain(fx.coll, Options{})
		for _, st := range fx.r0.Statements() {
			check(t, c.Add(st, Origin{}))
		}
		_ = c.AddFragment(fr)
		if r, _ := c.Roster(); r.Head().ID() != fx.r0.Head().ID() {
			t.Fatal("a fragment moved the roster")
		}
	})
}

// FuzzStatementValue: an owner-signed statement with arbitrary value bytes
// is kept and either followed (if valid) or stalls the chain; never a panic.
func FuzzStatementValue(f *testing.F) {
	fx := newFixture(f)
	f.Add(fx.rmChange.Statement.Body().Value)
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		body := suite.WriteBody{Scope: fx.r0.Collection(), Record: rosterRecord, Field: StatementField,
			Op: suite.OpAssign, Value: value, Author: fx.o.id.UID, Ref: fx.r0.Head().ID()}
		_, _, sig, err := suite.SignWrite(fx.o.id.SignKey, &body)
		check(t, err)
		st, err := NewStatement(body, sig)
		check(t, err)
		c := NewChain(fx.r0.Collection(), Options{})
		for _, s := range fx.r0.Statements() {
			check(t, c.Add(s, Origin{}))
		}
		check(t, c.Add(st, Origin{}))
		r, _ := c.Roster()
		valid := fx.r0.Validate(st) == nil
		if valid != (r.Head().ID() == st.ID()) || (!valid && c.Status() != StatusStalled) {
			t.Fatalf("valid=%v head moved=%v status=%v", valid, r.Head().ID() == st.ID(), c.Status())
		}
	})
}
