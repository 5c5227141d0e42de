package engine

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

func newKV(t testing.TB, actor string) *KV {
	t.Helper()
	k, err := NewKV(actor)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sync brings dst up to src for doc with one change, as an offer answer does.
func syncDoc(t testing.TB, src, dst *KV, doc string) Outcome {
	t.Helper()
	if !dst.Has(doc) {
		_ = dst.Create(doc)
	}
	v, _ := dst.Version(doc)
	ch, err := src.Changes(doc, v)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	out, err := dst.Import(doc, ch)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return out
}

func TestKVConcurrentWritesResolveDeterministically(t *testing.T) {
	a, b := newKV(t, "a"), newKV(t, "b")
	_ = a.Set("d", "k", []byte("from a"))
	_ = b.Set("d", "k", []byte("from b"))
	syncDoc(t, a, b, "d")
	syncDoc(t, b, a, "d")
	va, _ := a.Get("d", "k")
	vb, _ := b.Get("d", "k")
	if string(va) != string(vb) || string(va) != "from b" { // equal clocks: greater actor wins
		t.Fatalf("a=%q b=%q", va, vb)
	}
	if o := syncDoc(t, a, b, "d"); o != AlreadyHeld {
		t.Fatalf("second sync: %v", o)
	}
	if behind, _ := a.Behind("d", must(b.Version("d"))); behind {
		t.Fatal("a thinks b is behind after convergence")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestKVRandomConvergence: random edits and deletions on several replicas,
// changes exchanged between random pairs in random order (including stale
// and duplicated changes): once every pair has synced, all hold the same.
func TestKVRandomConvergence(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		reps := []*KV{newKV(t, "r0"), newKV(t, "r1"), newKV(t, "r2"), newKV(t, "r3")}
		var stash [][]byte
		for step := 0; step < 300; step++ {
			r := reps[rng.IntN(len(reps))]
			key := fmt.Sprintf("k%d", rng.IntN(6))
			switch rng.IntN(4) {
			case 0:
				_ = r.Delete("d", key)
			case 1:
				src, dst := reps[rng.IntN(4)], reps[rng.IntN(4)]
				if src.Has("d") && src != dst {
					v := []byte{}
					if dst.Has("d") {
						v = must(dst.Version("d"))
					}
					ch := must(src.Changes("d", v))
					stash = append(stash, ch)
					if _, err := dst.Import("d", ch); err != nil {
						t.Fatal(err)
					}
				}
			case 2:
				if len(stash) > 0 { // an old or duplicated change arriving late
					if _, err := reps[rng.IntN(4)].Import("d", stash[rng.IntN(len(stash))]); err != nil {
						t.Fatal(err)
					}
				}
			default:
				_ = r.Set("d", key, fmt.Appendf(nil, "%d", step))
			}
		}
		for range 2 {
			for _, s := range reps {
				for _, d := range reps {
					if s != d && s.Has("d") {
						syncDoc(t, s, d, "d")
					}
				}
			}
		}
		for i := 1; i < len(reps); i++ {
			if !maps.Equal(reps[0].Values("d"), reps[i].Values("d")) {
				t.Fatalf("seed %d: replica %d diverged:\n%v\n%v", seed, i, reps[0].Values("d"), reps[i].Values("d"))
			}
			if string(must(reps[0].Version("d"))) != string(must(reps[i].Version("d"))) {
				t.Fatalf("seed %d: versions differ", seed)
			}
		}
	}
}

func TestKVMissingPredecessorHeldThenApplied(t *testing.T) {
	a, b := newKV(t, "a"), newKV(t, "b")
	_ = a.Set("d", "x", []byte("1"))
	v1 := must(a.Version("d"))
	first := must(a.Changes("d", nil))
	_ = a.Set("d", "y", []byte("2"))
	second := must(a.Changes("d", v1)) // builds on the first
	if o, _ := b.Import("d", second); o != MissingPredecessor {
		t.Fatalf("second before first: %v", o)
	}
	if _, ok := b.Get("d", "y"); ok {
		t.Fatal("held change surfaced")
	}
	if o, _ := b.Import("d", first); o != Applied {
		t.Fatalf("first: %v", o)
	}
	if v, ok := b.Get("d", "y"); !ok || string(v) != "2" {
		t.Fatal("held change not applied once its predecessor arrived")
	}
	if o, _ := b.Import("d", second); o != AlreadyHeld {
		t.Fatalf("duplicate: %v", o)
	}
}

func TestKVUnreadableChangesNothing(t *testing.T) {
	a := newKV(t, "a")
	_ = a.Set("d", "x", []byte("1"))
	before := must(a.Snapshot("d"))
	for _, bad := range [][]byte{nil, {'d'}, {'d', 2}, {'x', 1, 0, 0, 0}, {'d', 1, 0, 1, 1, 'z', 1, 1, 0}} {
		if o, err := a.Import("d", bad); o != Unreadable || err == nil {
			t.Fatalf("%x: %v %v", bad, o, err)
		}
		if o, _ := a.ImportSnapshot("d", bad); o != Unreadable {
			t.Fatalf("snapshot %x: %v", bad, o)
		}
	}
	if string(must(a.Snapshot("d"))) != string(before) {
		t.Fatal("unreadable input changed state")
	}
	if a.Has("other") {
		t.Fatal("unreadable input created a document")
	}
}

func TestKVCompactionTrimsHistory(t *testing.T) {
	a, b := newKV(t, "a"), newKV(t, "b")
	_ = a.Set("d", "x", []byte("1"))
	syncDoc(t, a, b, "d")
	old := must(b.Version("d"))
	_ = a.Delete("d", "x")
	_ = a.Compact("d")
	if _, err := a.Changes("d", old); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("changes below the frontier: %v", err)
	}
	if o, err := b.ImportSnapshot("d", must(a.Snapshot("d"))); o != Applied || err != nil {
		t.Fatalf("snapshot: %v %v", o, err)
	}
	if _, ok := b.Get("d", "x"); ok {
		t.Fatal("deletion compacted on a did not reach b through the snapshot")
	}
}

// TestKVNeedsTrimmedHistoryAndRefusedFork: b deletes and compacts a key that
// c, forked before the deletion, writes again at a lower clock. c's change
// needs history b dropped; c's snapshot cannot close it either (c never saw
// what b compacted): refused. A replica that saw b's compaction closes it.
func TestKVNeedsTrimmedHistoryAndRefusedFork(t *testing.T) {
	b, c := newKV(t, "b"), newKV(t, "c")
	_ = b.Set("d", "x", []byte("1"))
	_ = b.Set("d", "x", []byte("2"))
	_ = b.Set("d", "x", []byte("3"))
	_ = b.Delete("d", "x")
	_ = b.Compact("d")
	_ = c.Set("d", "x", []byte("fork")) // lamport 1, concurrent
	ch := must(c.Changes("d", must(b.Version("d"))))
	if o, _ := b.Import("d", ch); o != NeedsTrimmedHistory {
		t.Fatalf("change: %v", o)
	}
	if o, err := b.ImportSnapshot("d", must(c.Snapshot("d"))); o != Refused || err == nil {
		t.Fatalf("snapshot: %v %v", o, err)
	}
	// A snapshot from a replica holding everything b kept merges.
	e := newKV(t, "e")
	_, _ = e.ImportSnapshot("d", must(b.Snapshot("d")))
	_ = e.Set("d", "x", []byte("after"))
	if o, _ := b.ImportSnapshot("d", must(e.Snapshot("d"))); o != Applied {
		t.Fatalf("snapshot from a replica past the frontier: %v", o)
	}
	if v, _ := b.Get("d", "x"); string(v) != "after" {
		t.Fatalf("x=%q", v)
	}
}

func FuzzKVImport(f *testing.F) {
	a := newKV(f, "a")
	_ = a.Set("d", "x", []byte("1"))
	_ = a.Delete("d", "y")
	f.Add(must(a.Changes("d", nil)))
	f.Add(must(a.Snapshot("d")))
	f.Fuzz(func(t *testing.T, in []byte) {
		k := newKV(t, "z")
		_ = k.Set("d", "x", []byte("mine"))
		before := must(k.Snapshot("d"))
		o, err := k.Import("d", in)
		if (o == Unreadable) != (err != nil) {
			t.Fatalf("outcome %v with err %v", o, err)
		}
		if o != Applied && string(must(k.Snapshot("d"))) != string(before) {
			t.Fatalf("%v changed state", o)
		}
		mid := must(k.Snapshot("d"))
		if o2, err := k.ImportSnapshot("d", in); (o2 == Unreadable || o2 == Refused) != (err != nil) {
			t.Fatalf("snapshot outcome %v with err %v", o2, err)
		} else if (o2 == Unreadable || o2 == Refused || o2 == AlreadyHeld) && string(must(k.Snapshot("d"))) != string(mid) {
			t.Fatalf("snapshot %v changed state", o2)
		}
	})
}
