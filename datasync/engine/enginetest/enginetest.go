// Package enginetest is the conformance suite of the engine.Engine
// contract: an app that brings its own document engine runs it from a test,
// as both of Ferry's engines (engine.KV and engine/loro) do.
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, enginetest.Harness{New: ..., Set: ..., Get: ...})
//	}
//
// The suite checks what package datasync relies on: documents are created
// once, changes apply once and in order, snapshots carry a whole document,
// concurrent edits converge, and bytes an engine cannot read change
// nothing.
package enginetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// Harness is how the suite drives an engine.
type Harness struct {
	// New returns an empty engine for replica actor (1, 2, 3), released by
	// the test's cleanup.
	New func(t testing.TB, actor uint64) engine.Engine
	// Set writes the text value under key in doc, creating doc if needed,
	// and commits it.
	Set func(e engine.Engine, doc, key, value string) error
	// Get reads the text under key in doc.
	Get func(e engine.Engine, doc, key string) (string, bool)
}

// Run runs every check of the suite as a subtest.
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"CreateOnce", testCreateOnce},
		{"ChangesApplyOnce", testChangesApplyOnce},
		{"SnapshotCarriesDocument", testSnapshot},
		{"ConcurrentEditsConverge", testConverge},
		{"MissingPredecessor", testMissingPredecessor},
		{"UnreadableChangesNothing", testUnreadable},
		{"CompactKeepsValues", testCompact},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantValue(t *testing.T, h Harness, e engine.Engine, doc, key, want string) {
	t.Helper()
	if got, ok := h.Get(e, doc, key); !ok || got != want {
		t.Fatalf("%s/%s = %q (%v), want %q", doc, key, got, ok, want)
	}
}

// sync brings to's doc up to date with from's by one change.
func sync(t *testing.T, from, to engine.Engine, doc string) engine.Outcome {
	t.Helper()
	if !to.Has(doc) {
		must(t, to.Create(doc))
	}
	have, err := to.Version(doc)
	must(t, err)
	ch, err := from.Changes(doc, have)
	must(t, err)
	out, err := to.Import(doc, ch)
	if err != nil {
		t.Fatalf("Import: %v (%v)", out, err)
	}
	return out
}

func testCreateOnce(t *testing.T, h Harness) {
	e := h.New(t, 1)
	if _, err := e.Version("d"); !errors.Is(err, engine.ErrNoDocument) {
		t.Fatalf("Version of a missing document: %v, want ErrNoDocument", err)
	}
	must(t, e.Create("d"))
	if !e.Has("d") || !slices.Contains(e.Docs(), "d") {
		t.Fatalf("created document missing: Has %v, Docs %v", e.Has("d"), e.Docs())
	}
	if err := e.Create("d"); !errors.Is(err, engine.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
}

func testChangesApplyOnce(t *testing.T, h Harness) {
	a, b := h.New(t, 1), h.New(t, 2)
	must(t, h.Set(a, "d", "k", "v"))
	must(t, b.Create("d"))
	bv, err := b.Version("d")
	must(t, err)
	if behind, err := a.Behind("d", bv); err != nil || !behind {
		t.Fatalf("Behind before sync: %v, %v; want true", behind, err)
	}
	ch, err := a.Changes("d", bv)
	must(t, err)
	if out, err := b.Import("d", ch); err != nil || out != engine.Applied {
		t.Fatalf("first Import: %v, %v; want applied", out, err)
	}
	wantValue(t, h, b, "d", "k", "v")
	if out, err := b.Import("d", ch); err != nil || out != engine.AlreadyHeld {
		t.Fatalf("second Import: %v, %v; want already held", out, err)
	}
	bv, err = b.Version("d")
	must(t, err)
	if behind, err := a.Behind("d", bv); err != nil || behind {
		t.Fatalf("Behind after sync: %v, %v; want false", behind, err)
	}
}

func testSnapshot(t *testing.T, h Harness) {
	a, c := h.New(t, 1), h.New(t, 3)
	must(t, h.Set(a, "d", "k", "v"))
	must(t, h.Set(a, "d", "k2", "w"))
	snap, err := a.Snapshot("d")
	must(t, err)
	if out, err := c.ImportSnapshot("d", snap); err != nil || out != engine.Applied {
		t.Fatalf("ImportSnapshot into an engine without the document: %v, %v", out, err)
	}
	wantValue(t, h, c, "d", "k", "v")
	wantValue(t, h, c, "d", "k2", "w")
	if out, err := c.ImportSnapshot("d", snap); err != nil || (out != engine.AlreadyHeld && out != engine.Applied) {
		t.Fatalf("the same snapshot again: %v, %v", out, err)
	}
	wantValue(t, h, c, "d", "k", "v")
}

func testConverge(t *testing.T, h Harness) {
	a, b := h.New(t, 1), h.New(t, 2)
	must(t, h.Set(a, "d", "x", "from a"))
	must(t, h.Set(a, "d", "same", "a"))
	must(t, h.Set(b, "d", "y", "from b"))
	must(t, h.Set(b, "d", "same", "b"))
	sync(t, a, b, "d")
	sync(t, b, a, "d")
	for _, k := range []string{"x", "y", "same"} {
		va, oka := h.Get(a, "d", k)
		vb, okb := h.Get(b, "d", k)
		if !oka || !okb || va != vb {
			t.Fatalf("%s: a has %q (%v), b has %q (%v): not converged", k, va, oka, vb, okb)
		}
	}
	av, err := a.Version("d")
	must(t, err)
	if behind, err := b.Behind("d", av); err != nil || behind {
		t.Fatalf("b.Behind(a's version) after exchanging both ways: %v, %v", behind, err)
	}
}

func testMissingPredecessor(t *testing.T, h Harness) {
	a, c := h.New(t, 1), h.New(t, 3)
	must(t, h.Set(a, "d", "k1", "1"))
	v1, err := a.Version("d")
	must(t, err)
	must(t, h.Set(a, "d", "k2", "2"))
	later, err := a.Changes("d", v1) // only what follows v1
	must(t, err)
	must(t, c.Create("d"))
	out, err := c.Import("d", later)
	if out != engine.MissingPredecessor {
		t.Fatalf("a change without its predecessor: %v, %v; want missing predecessor", out, err)
	}
	if _, ok := h.Get(c, "d", "k2"); ok {
		t.Fatal("a change without its predecessor was applied")
	}
}

func testUnreadable(t *testing.T, h Harness) {
	a := h.New(t, 1)
	must(t, h.Set(a, "d", "k", "v"))
	before, err := a.Version("d")
	must(t, err)
	for _, junk := range [][]byte{nil, {0xff}, []byte("not a change at all, just text")} {
		out, err := a.Import("d", junk)
		if out == engine.Applied || out == engine.AlreadyHeld && err != nil {
			t.Fatalf("junk %q: %v, %v", junk, out, err)
		}
		if out != engine.Unreadable && out != engine.AlreadyHeld && err == nil {
			t.Fatalf("junk %q: %v with no error", junk, out)
		}
		out, err = a.ImportSnapshot("d", junk)
		if out == engine.Applied && err == nil {
			t.Fatalf("junk snapshot %q applied", junk)
		}
	}
	after, err := a.Version("d")
	must(t, err)
	if string(after) != string(before) {
		t.Fatal("unreadable bytes changed the document's version")
	}
	wantValue(t, h, a, "d", "k", "v")
}

func testCompact(t *testing.T, h Harness) {
	a, b := h.New(t, 1), h.New(t, 2)
	must(t, h.Set(a, "d", "k", "v"))
	must(t, h.Set(a, "d", "k", "v2"))
	must(t, a.Compact("d"))
	wantValue(t, h, a, "d", "k", "v2")
	snap, err := a.Snapshot("d")
	must(t, err)
	if _, err := b.ImportSnapshot("d", snap); err != nil {
		t.Fatalf("snapshot of a compacted document: %v", err)
	}
	wantValue(t, h, b, "d", "k", "v2")
}
