package roster

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// bigEpoch rotates w.r1 with an inventory of n records and returns the new
// roster, its epoch ID and its inventory bytes.
func bigEpoch(t testing.TB, w *world, n int) (*Roster, [32]byte, []byte) {
	t.Helper()
	st := newMapState()
	for i := 0; i < n; i++ {
		st.keep([16]byte{byte(i), byte(i >> 8)}, suite.H([]byte{byte(i), byte(i >> 8), 1}))
	}
	rot, err := Rotate(w.r1, w.o.signer(), st)
	check(t, err)
	return extend(t, w.r1, rot), rot.Statement.ID(), rot.Inventory.Bytes()
}

// following returns a chain that follows r (inventories of r's earlier
// epochs set), without r's last inventory.
func following(t testing.TB, w *world, r *Roster, opts Options) *Chain {
	t.Helper()
	c := NewChain(w.coll, opts)
	for _, s := range r.Statements() {
		check(t, c.Add(s, Origin{}))
	}
	for _, s := range w.r1.Statements() {
		if inv, ok := w.r1.Inventory(s.ID()); ok {
			check(t, c.SetInventory(s.ID(), inv.Bytes()))
		}
	}
	return c
}

func assembled(c *Chain, epoch [32]byte) bool {
	r, ok := c.Roster()
	if !ok {
		return false
	}
	_, ok = r.Inventory(epoch)
	return ok
}

func junkOf(f *Fragment, k int) *Fragment {
	j := *f
	j.Bytes = bytes.Clone(f.Bytes)
	j.Bytes[k%len(j.Bytes)] ^= byte(1 + k%255)
	j.Bytes = append(j.Bytes, byte(k)) // distinct for every k
	return &j
}

// TestFragmentMemoryByBytes: what the store holds is bounded by the bytes
// it was given, never by the part count a fragment claims (§10.6). Before
// the fix a 1-byte fragment claiming 65,536 parts cost 1.5 MiB.
func TestFragmentMemoryByBytes(t *testing.T) {
	w := newWorld(t)
	c := NewChain(w.coll, Options{Limits: Limits{MaxGroupsPerEpoch: 1 << 20, MaxGroups: 1 << 20}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 64
	for i := 0; i < n; i++ {
		f := &Fragment{Epoch: w.e1, Part: 0, Parts: DefaultMaxParts - i, Bytes: []byte{byte(i)}}
		if err := c.AddFragmentIn(f, w.e1); err != nil {
			t.Fatalf("fragment %d: %v", i, err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Fatalf("%d one-byte fragments grew the heap by %d bytes", n, grew)
	}
	if c.frags.used > n*(1+versionCost+groupCost) || c.frags.used < n {
		t.Fatalf("charged %d bytes for %d one-byte fragments", c.frags.used, n)
	}
	runtime.KeepAlive(c)
}

// TestFragmentByteLimit: the charge (bytes plus fixed bookkeeping) never
// passes MaxFragmentBytes, whatever mix of epochs, parts counts and sizes
// arrives; over the limit the error is ErrLimit, never ErrRejected.
func TestFragmentByteLimit(t *testing.T) {
	w := newWorld(t)
	rng := rand.New(rand.NewPCG(21, 22))
	lim := Limits{MaxFragmentBytes: 64 << 10}
	c := NewChain(w.coll, Options{Limits: lim})
	held, refused := 0, 0
	for i := 0; i < 5000; i++ {
		var e [32]byte
		e[0] = byte(rng.IntN(40))
		parts := 1 + rng.IntN(DefaultMaxParts)
		f := &Fragment{Epoch: e, Part: rng.IntN(parts), Parts: parts, Bytes: make([]byte, 1+rng.IntN(3000))}
		f.Bytes[0] = byte(i)
		switch err := c.AddFragment(f); {
		case err == nil:
			held++
		case errors.Is(err, ErrLimit) && !errors.Is(err, ErrRejected):
			refused++
		default:
			t.Fatalf("fragment %d: %v", i, err)
		}
		if c.frags.used > lim.MaxFragmentBytes {
			t.Fatalf("charged %d > %d", c.frags.used, lim.MaxFragmentBytes)
		}
	}
	if held == 0 || refused == 0 {
		t.Fatalf("held %d, refused %d: the test exercises nothing", held, refused)
	}
}

// TestFragmentGroupsBounded: the distinct (epoch, parts) versions held are
// bounded per epoch and over all epochs; past either bound a fragment that
// would open a new one is refused with ErrLimit.
func TestFragmentGroupsBounded(t *testing.T) {
	w := newWorld(t)
	c := NewChain(w.coll, Options{Limits: Limits{MaxGroupsPerEpoch: 3, MaxGroups: 5}})
	add := func(e byte, parts int) error {
		return c.AddFragment(&Fragment{Epoch: [32]byte{e}, Part: 0, Parts: parts, Bytes: []byte{1}})
	}
	for p := 2; p < 5; p++ {
		check(t, add(1, p))
	}
	wantIs(t, add(1, 5), ErrLimit)
	check(t, add(1, 2)) // an existing group still takes its parts
	check(t, c.AddFragment(&Fragment{Epoch: [32]byte{1}, Part: 1, Parts: 2, Bytes: []byte{1}}))
	check(t, add(2, 2))
	check(t, add(2, 3))
	wantIs(t, add(3, 2), ErrLimit) // five groups over all epochs
	if len(c.frags.groups) != 5 {
		t.Fatalf("%d groups held", len(c.frags.groups))
	}
}

// TestJunkNeverBlocksCompletion: however many junk versions of a part are
// held, the honest fragment that completes a hash-matching assembly is
// used (§10.5), and a refusal for a holding limit is not final: the same
// fragment read again later is taken.
func TestJunkNeverBlocksCompletion(t *testing.T) {
	w := newWorld(t)
	r2, e2, invBytes := bigEpoch(t, w, 300)
	good, err := Split(e2, invBytes, 2000)
	check(t, err)
	if len(good) < 6 {
		t.Fatalf("only %d fragments", len(good))
	}
	for _, k := range []int{0, len(good) / 2, len(good) - 1} {
		c := following(t, w, r2, Options{Limits: Limits{MaxVersions: 3, MaxAssemblyTries: 64}})
		for i, f := range good {
			if i != k {
				check(t, c.AddFragmentIn(f, e2))
			}
		}
		// Junk fills part k and then the other parts up to every limit.
		for j := 0; j < 3; j++ {
			check(t, c.AddFragmentIn(junkOf(good[k], j), e2))
		}
		wantIs(t, c.AddFragmentIn(junkOf(good[k], 3), e2), ErrLimit)
		for i := range good {
			for j := 0; j < 4; j++ {
				if err := c.AddFragmentIn(junkOf(good[i], 10+j), e2); err != nil {
					wantIs(t, err, ErrLimit)
				}
			}
		}
		if assembled(c, e2) {
			t.Fatal("assembled without part", k)
		}
		check(t, c.AddFragmentIn(good[k], e2))
		if !assembled(c, e2) {
			t.Fatalf("part %d of %d: junk blocked the completing fragment", k, len(good))
		}
		r, _ := c.Roster()
		inv, _ := r.Inventory(e2)
		if !bytes.Equal(inv.Bytes(), invBytes) || len(inv.Fragments()) != len(good) {
			t.Fatal("wrong assembly")
		}
		if c.frags.used != 0 || len(c.frags.groups) != 0 {
			t.Fatalf("%d bytes, %d groups still held after assembly", c.frags.used, len(c.frags.groups))
		}
	}

	// One part: junk fills every version slot and the try budget first.
	c := following(t, w, w.r1, Options{Limits: Limits{MaxAssemblyTries: 3, MaxVersions: 3}})
	one, err := Split(w.e1, w.rmChange.Inventory.Bytes(), 0)
	check(t, err)
	for i := 0; i < 3; i++ {
		check(t, c.AddFragmentIn(&Fragment{Epoch: w.e1, Part: 0, Parts: 1, Bytes: []byte{byte(i)}}, w.e1))
	}
	check(t, c.AddFragmentIn(one[0], w.e1))
	if !assembled(c, w.e1) {
		t.Fatal("junk versions blocked a one-part inventory")
	}

	// Refused for a limit before the statement is known, taken when read
	// again after the junk expired.
	now := timeZero.AddDate(2030, 0, 0)
	c = NewChain(w.coll, Options{Limits: Limits{MaxVersions: 1}, Now: func() time.Time { return now }})
	check(t, c.AddFragmentIn(junkOf(good[0], 0), e2))
	wantIs(t, c.AddFragmentIn(good[0], e2), ErrLimit)
	now = now.Add(DefaultHoldFor + 1)
	c.Expire()
	for _, f := range good {
		check(t, c.AddFragmentIn(f, e2))
	}
	for _, s := range r2.Statements() {
		check(t, c.Add(s, Origin{}))
	}
	check(t, c.SetInventory(w.e1, w.rmChange.Inventory.Bytes()))
	if !assembled(c, e2) {
		t.Fatal("a fragment refused for a limit was not taken later")
	}
}

// TestFragmentWrongChannel: a fragment read in one epoch's channel that
// names another epoch is rejected (§8.3: an inventory is published in the
// new channel), and nothing is held.
func TestFragmentWrongChannel(t *testing.T) {
	w := newWorld(t)
	c := chainOf(t, w.r0)
	f := &Fragment{Epoch: w.e1, Part: 0, Parts: 1, Bytes: []byte{1}}
	wantIs(t, c.AddFragmentIn(f, w.e0), ErrRejected, ErrNotEpoch)
	if c.frags.used != 0 {
		t.Fatal("held a fragment of another channel")
	}
	check(t, c.AddFragmentIn(f, w.e1))
}
