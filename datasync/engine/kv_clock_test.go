package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// hostileDelta is a delta claiming actor's change at counter n, with a
// Lamport clock of lamport: what an authenticated, wrong peer can send.
func hostileDelta(actor string, n, lamport uint64) []byte {
	to := vv{actor: n}
	return delta{From: vv{}, To: to, Regs: []reg{{Key: "x", Value: []byte("evil"), Lamport: lamport,
		Dot: dot{Actor: actor, Counter: n}}}}.encode()
}

// reload reads k's stored form of doc into a fresh engine with the same
// actor, as "ferry peer run --state" does at start.
func reload(t *testing.T, k *KV, actor, doc string) *KV {
	t.Helper()
	r := newKV(t, actor)
	if out, err := r.ImportSnapshot(doc, must(k.Snapshot(doc))); err != nil {
		t.Fatalf("own snapshot of %q does not read back: %v %v", doc, out, err)
	}
	return r
}

// Issue 17 point 1: a delta whose version claims the receiver's own writer
// (or any writer, or the Lamport clock) at the top of the counter range is
// refused at import, before anything is stored, and says so; local edits
// afterwards still save and reload.
func TestKVHostileClockRefusedAtImport(t *testing.T) {
	for name, in := range map[string][]byte{
		"own counter 2^64-1":   hostileDelta("me", math.MaxUint64, 5),
		"other counter 2^64-1": hostileDelta("peer", math.MaxUint64, 5),
		"lamport 2^64-1":       hostileDelta("peer", 1, math.MaxUint64),
		"own counter past max": hostileDelta("me", MaxClock+1, 5),
		"lamport past max":     hostileDelta("peer", 1, MaxClock+1),
	} {
		t.Run(name, func(t *testing.T) {
			k := newKV(t, "me")
			stored := 0
			k.Persist = func(string, []byte) error { stored++; return nil }
			_ = k.Set("notes", "a", []byte("1"))
			stored = 0
			before := must(k.Snapshot("notes"))
			out, err := k.Import("notes", in)
			if out != Unreadable || !errors.Is(err, ErrClockRange) {
				t.Fatalf("import: %v %v", out, err)
			}
			if stored != 0 || string(must(k.Snapshot("notes"))) != string(before) {
				t.Fatal("refused import changed or stored state")
			}
			snapIn := snapshot{VV: vv{"me": math.MaxUint64}, Base: vv{}}.encode()
			if out, err := k.ImportSnapshot("notes", snapIn); out != Unreadable || !errors.Is(err, ErrClockRange) {
				t.Fatalf("snapshot import: %v %v", out, err)
			}
			if err := k.Set("notes", "b", []byte("2")); err != nil {
				t.Fatal(err)
			}
			r := reload(t, k, "me", "notes")
			if v, _ := r.Get("notes", "b"); string(v) != "2" {
				t.Fatal("local edit lost on reload")
			}
		})
	}
}

// The engine's own encoder and decoder agree at the edge of the range: the
// largest clock an import accepts still reloads, and a local edit that
// would pass it fails with a clear error and changes nothing.
func TestKVClockEdge(t *testing.T) {
	k := newKV(t, "me")
	if out, err := k.Import("d", hostileDelta("me", MaxClock, MaxClock)); out != Applied || err != nil {
		t.Fatalf("import at the bound: %v %v", out, err)
	}
	reload(t, k, "me", "d")
	before := must(k.Snapshot("d"))
	if err := k.Set("d", "y", []byte("1")); !errors.Is(err, ErrClockRange) {
		t.Fatalf("edit past the bound: %v", err)
	}
	_ = k.Stage("d", "z", []byte("1"))
	if _, err := k.Flush("d"); !errors.Is(err, ErrClockRange) || !k.Pending("d") {
		t.Fatalf("flush past the bound: %v", err)
	}
	if string(must(k.Snapshot("d"))) != string(before) {
		t.Fatal("failed edit changed state")
	}
	reload(t, k, "me", "d")
}

// Every state the engine reaches through its own operations reads back:
// a fresh engine loaded from the snapshot holds the same document and
// stamps the next local edit exactly as the original does (same Lamport
// clock, same dot), including after compaction dropped the tombstone that
// held the highest clock.
func TestKVStateRoundTripsUnderRandomOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for round := range 200 {
		a, b := newKV(t, "a"), newKV(t, "b")
		for step := range 30 {
			k, other := a, b
			if rng.IntN(2) == 0 {
				k, other = b, a
			}
			key := fmt.Sprint("k", rng.IntN(4))
			switch rng.IntN(6) {
			case 0, 1:
				_ = k.Set("d", key, []byte(fmt.Sprint(step)))
			case 2:
				_ = k.Delete("d", key)
			case 3:
				if k.Has("d") {
					_ = k.Compact("d")
				}
			case 4:
				if other.Has("d") {
					v := []byte{}
					if k.Has("d") {
						v = must(k.Version("d"))
					}
					if ch, err := other.Changes("d", v); err == nil {
						_, _ = k.Import("d", ch)
					}
				}
			case 5:
				if other.Has("d") {
					_, _ = k.ImportSnapshot("d", must(other.Snapshot("d")))
				}
			}
		}
		for _, k := range []*KV{a, b} {
			if !k.Has("d") {
				continue
			}
			r := reload(t, k, k.actor, "d")
			if string(must(r.Snapshot("d"))) != string(must(k.Snapshot("d"))) {
				t.Fatalf("round %d: reloaded snapshot differs", round)
			}
			_ = k.Set("d", "next", []byte("v"))
			_ = r.Set("d", "next", []byte("v"))
			if string(must(r.Snapshot("d"))) != string(must(k.Snapshot("d"))) {
				t.Fatalf("round %d: the next local edit differs after a reload (lamport %d vs %d)",
					round, r.docs["d"].lamport, k.docs["d"].lamport)
			}
		}
	}
}

// The refusal is made by the decoder, so a varint-encoded clock past the
// bound anywhere in a snapshot (VV, Base, BaseLamport, a register) is
// refused.
func TestKVSnapshotClockFields(t *testing.T) {
	big := uint64(MaxClock + 1)
	for name, s := range map[string]snapshot{
		"vv":          {VV: vv{"a": big}, Base: vv{}},
		"base":        {VV: vv{"a": big}, Base: vv{"a": big}},
		"baseLamport": {VV: vv{"a": 1}, Base: vv{}, BaseLamport: big},
		"reg lamport": {VV: vv{"a": 1}, Base: vv{}, Regs: []reg{{Key: "k", Lamport: big, Dot: dot{"a", 1}}}},
	} {
		k := newKV(t, "me")
		if out, err := k.ImportSnapshot("d", s.encode()); out != Unreadable || !errors.Is(err, ErrClockRange) {
			t.Fatalf("%s: %v %v", name, out, err)
		}
	}
}
