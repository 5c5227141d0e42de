package roster

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Anchor: strict verification of one data write's signature.
func BenchmarkAnchorVerifyWrite(b *testing.B) {
	w := newWorld(b)
	for b.Loop() {
		if _, err := suite.VerifyWrite(&w.wA.body, w.wA.sig); err != nil {
			b.Fatal(err)
		}
	}
}

// CheckWrite of a listed old write in a new epoch (signature + §8.3).
func BenchmarkCheckWriteListed(b *testing.B) {
	w := newWorld(b)
	c := chainOf(b, w.r1)
	for b.Loop() {
		if _, err := c.CheckWrite(&w.wA.body, w.wA.sig, w.e1); err != nil {
			b.Fatal(err)
		}
	}
}

// NewStatement (verify + strict JSON parse) and Chain.Add of a statement
// that extends a 50-statement roster.
func BenchmarkAddStatement(b *testing.B) {
	h := randomHistory(b, rand.New(rand.NewPCG(1, 1)), 50)
	last := h.statements[len(h.statements)-1]
	base := h.rosters[len(h.rosters)-2]
	for b.Loop() {
		b.StopTimer()
		c := NewChain(base.Collection(), Options{})
		for _, st := range base.Statements() {
			check(b, c.Add(st, Origin{}))
		}
		b.StartTimer()
		st, err := NewStatement(last.Body(), last.Sig())
		check(b, err)
		check(b, c.Add(st, Origin{}))
	}
}

func oneMiB(b *testing.B) []byte {
	inv := bigInventory(b, rand.New(rand.NewPCG(2, 2)), 12000)
	b.SetBytes(int64(len(inv)))
	return inv
}

// Anchor: SHA-256 of the same inventory bytes.
func BenchmarkAnchorSHA256Inventory(b *testing.B) {
	inv := oneMiB(b)
	for b.Loop() {
		sha256.Sum256(inv)
	}
}

// Assemble a ~1 MiB inventory from 64 KiB-message fragments and check it
// against the commitment.
func BenchmarkAssembleInventory(b *testing.B) {
	inv := oneMiB(b)
	epoch := [32]byte{1}
	frags, err := Split(epoch, inv, 0)
	check(b, err)
	want := suite.H(inv)
	for b.Loop() {
		s := newFragmentStore(Limits{}.withDefaults())
		for _, f := range frags {
			check(b, s.add(f, timeZero))
		}
		if _, _, ok := s.assemble(epoch, want); !ok {
			b.Fatal("no assembly")
		}
	}
}
