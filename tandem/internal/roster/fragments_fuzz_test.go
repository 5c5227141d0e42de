package roster

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// storeFixture is an epoch whose statement a chain follows, with its
// honest fragments.
type storeFixture struct {
	w    *world
	r2   *Roster
	e2   [32]byte
	inv  []byte
	good []*Fragment
}

func newStoreFixture(t testing.TB) *storeFixture {
	w := newWorld(t)
	r2, e2, inv := bigEpoch(t, w, 40)
	good, err := Split(e2, inv, 1700)
	check(t, err)
	if len(good) < 4 {
		t.Fatalf("only %d fragments", len(good))
	}
	return &storeFixture{w: w, r2: r2, e2: e2, inv: inv, good: good}
}

// checkStore verifies the store's bookkeeping against its contents and
// its limits.
func checkStore(t testing.TB, s *fragmentStore) {
	t.Helper()
	charge, perEpoch := 0, map[[32]byte]int{}
	for k, g := range s.groups {
		charge += groupCost
		perEpoch[k.epoch]++
		combos := 1
		for i, vs := range g.versions {
			if i < 0 || i >= g.parts || len(vs) == 0 || len(vs) > s.limits.MaxVersions {
				t.Fatalf("group %d parts: index %d holds %d versions", g.parts, i, len(vs))
			}
			combos *= len(vs)
			for _, v := range vs {
				charge += len(v.b) + versionCost
			}
		}
		if combos != g.combos || combos > s.limits.MaxAssemblyTries {
			t.Fatalf("combos %d, recorded %d, budget %d", combos, g.combos, s.limits.MaxAssemblyTries)
		}
	}
	switch {
	case charge != s.used:
		t.Fatalf("charged %d, holds %d", s.used, charge)
	case s.used > s.limits.MaxFragmentBytes:
		t.Fatalf("charged %d > %d", s.used, s.limits.MaxFragmentBytes)
	case len(s.groups) > s.limits.MaxGroups:
		t.Fatalf("%d groups", len(s.groups))
	}
	for e, n := range perEpoch {
		if n > s.limits.MaxGroupsPerEpoch || s.perEpoch[e] != n {
			t.Fatalf("epoch %x: %d groups, recorded %d", e[:4], n, s.perEpoch[e])
		}
	}
}

// run applies ops (4 bytes each) to a chain that follows fx's epoch:
// honest fragments, junk versions of them, fragments of other parts
// counts, epochs and channels, and clock jumps with Expire. The store must
// stay within its limits after every step, and whenever every other honest
// part is held, the honest fragment completes the assembly.
func (fx *storeFixture) run(t testing.TB, ops []byte) {
	now := time.Unix(1_900_000_000, 0)
	lim := Limits{MaxFragmentBytes: 12 << 10, MaxVersions: 3, MaxAssemblyTries: 16, MaxGroupsPerEpoch: 3, MaxGroups: 5}
	c := following(t, fx.w, fx.r2, Options{Limits: lim, Now: func() time.Time { return now }})
	held := map[int]bool{}
	for ; len(ops) >= 4; ops = ops[4:] {
		op, a, b, n := ops[0], int(ops[1]), int(ops[2]), int(ops[3])
		i := a % len(fx.good)
		honest := fx.good[i]
		var fr *Fragment
		channel := fx.e2
		switch op % 8 {
		case 0, 1, 2, 3:
			fr = honest
		case 4: // another version of an honest part
			fr = &Fragment{Epoch: fx.e2, Part: i, Parts: honest.Parts, Bytes: bytes.Repeat([]byte{byte(b)}, 1+n)}
		case 5: // another parts count, claiming up to 65,536 parts
			parts := 1 + (b<<8|n)%DefaultMaxParts
			fr = &Fragment{Epoch: fx.e2, Part: a % parts, Parts: parts, Bytes: bytes.Repeat([]byte{byte(a)}, 1+n%64)}
		case 6: // another epoch, read in its own channel or in ours
			fr = &Fragment{Epoch: [32]byte{byte(b % 3)}, Part: 0, Parts: 1 + n%4, Bytes: []byte{byte(a)}}
			if a%2 == 0 {
				channel = fr.Epoch
			}
		case 7:
			now = now.Add(time.Duration(b) * time.Hour * 24)
			c.Expire()
			for j := range held { // an honest part may have expired
				held[j] = c.frags.holds(fx.good[j])
			}
			checkStore(t, c.frags)
			continue
		}
		complete := true
		for j := range fx.good {
			complete = complete && (j == i || held[j])
		}
		err := c.AddFragmentIn(fr, channel)
		switch {
		case err == nil, errors.Is(err, ErrLimit) && !errors.Is(err, ErrRejected):
		case errors.Is(err, ErrRejected) && fr.Epoch != channel:
		default:
			t.Fatalf("op %d: %v", op%8, err)
		}
		if assembled(c, fx.e2) {
			r, _ := c.Roster()
			inv, _ := r.Inventory(fx.e2)
			if !bytes.Equal(inv.Bytes(), fx.inv) {
				t.Fatal("assembled the wrong bytes")
			}
			return
		}
		if fr == honest && complete {
			t.Fatalf("part %d completed the honest assembly, and was not used: %v", i, err)
		}
		if fr == honest && err == nil {
			held[i] = true
		}
		checkStore(t, c.frags)
	}
}

// TestFragmentStoreProperty runs the store property on random operations.
func TestFragmentStoreProperty(t *testing.T) {
	fx := newStoreFixture(t)
	rng := rand.New(rand.NewPCG(31, 32))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for range rounds {
		ops := make([]byte, 4*(1+rng.IntN(200)))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		fx.run(t, ops)
	}
}

// FuzzFragmentStore: any sequence of fragments keeps the fragment store
// within its limits (memory by bytes received, groups, versions, search
// budget), and junk never keeps out the honest fragment that completes an
// assembly.
func FuzzFragmentStore(f *testing.F) {
	fx := newStoreFixture(f)
	var honest []byte
	for i := range fx.good {
		honest = append(honest, 0, byte(i), 0, 0)
	}
	f.Add(honest)
	f.Add(append([]byte{4, 0, 1, 9, 4, 0, 2, 9, 4, 0, 3, 9, 5, 1, 255, 255, 6, 2, 1, 1, 7, 0, 40, 0}, honest...))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			return
		}
		fx.run(t, ops)
	})
}
