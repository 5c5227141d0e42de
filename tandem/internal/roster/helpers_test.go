package roster

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// user returns a deterministic identity for tests.
func user(n byte) *suite.Identity {
	var s [32]byte
	s[0], s[31] = n, 0xA5
	return suite.NewIdentity(s)
}

// seeded is a deterministic io.Reader for epoch keys and nonces.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return rand.NewChaCha8(s)
}

// clock hands out strictly increasing dots for one device.
type clock struct {
	dev suite.DeviceID
	ms  uint64
}

func (c *clock) next() suite.Dot {
	c.ms++
	return suite.Dot{Device: c.dev, HLC: suite.HLC{Millis: 1_700_000_000_000 + c.ms}}
}

// owner bundles the owner's identity, clock and randomness.
type owner struct {
	id   *suite.Identity
	clk  *clock
	rand *rand.ChaCha8
}

func newOwner(n byte, seed uint64) *owner {
	return &owner{id: user(n), clk: &clock{dev: suite.DeviceID{n, 1}}, rand: seeded(seed)}
}

func (o *owner) signer() Signer { return Signer{Key: o.id.SignKey, Dot: o.clk.next(), Rand: o.rand} }

func member(id *suite.Identity, role Role, name string) Member {
	return Member{UID: id.UID, Role: role, UKA: id.UKa, Name: name}
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// extend applies a change to r and returns the new roster.
func extend(t testing.TB, r *Roster, ch *Change) *Roster {
	t.Helper()
	n, err := r.Extend(ch.Statement)
	check(t, err)
	if ch.Inventory != nil {
		n, err = n.WithInventory(ch.Inventory)
		check(t, err)
	}
	return n
}

// mapState is a plain StateView for tests: what tandem/record's state
// would report.
type mapState struct {
	kept  map[[16]byte][][32]byte
	known map[[32]byte]bool
}

func newMapState() *mapState {
	return &mapState{kept: map[[16]byte][][32]byte{}, known: map[[32]byte]bool{}}
}

func (m *mapState) Kept(fn func([16]byte, [][32]byte)) {
	for r, ws := range m.kept {
		fn(r, ws)
	}
}

func (m *mapState) Known(_ [16]byte, w [32]byte) bool { return m.known[w] }

func (m *mapState) keep(rec [16]byte, w [32]byte) {
	m.kept[rec] = append(m.kept[rec], w)
	m.known[w] = true
}

// dataWrite signs a data write by id under statement ref.
func dataWrite(t testing.TB, id *suite.Identity, scope [16]byte, rec [16]byte, ref [32]byte, dot suite.Dot, op suite.Op, value string) (suite.WriteBody, []byte, [32]byte) {
	t.Helper()
	w := suite.WriteBody{Scope: scope, Record: rec, Field: "title", Op: op, Value: []byte(value),
		Author: id.UID, Dot: dot, Ref: ref}
	if op == suite.OpDelete {
		w.Field, w.Value = "", nil
	}
	_, wid, sig, err := suite.SignWrite(id.SignKey, &w)
	if err != nil {
		t.Fatal(err)
	}
	return w, sig, wid
}

func wantIs(t testing.TB, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %v: want %v", err, target)
		}
	}
}

var timeZero = time.Time{}
