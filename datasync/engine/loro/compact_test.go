package loro

import (
	"errors"
	"os"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// TestCompactionOutcomes: after a shallow-snapshot compaction the engine
// itself answers the gaps Loro would otherwise paper over.
func TestCompactionOutcomes(t *testing.T) {
	a, b := newEngine(t, 1), newEngine(t, 2)
	check(t, a.Set("d", "x", Value{Kind: Text, Text: "1"}))
	if out, _ := b.Import("d", must[[]byte](t)(a.Changes("d", nil))); out != engine.Applied {
		t.Fatal(out)
	}
	check(t, a.Set("d", "x", Value{Kind: Text, Text: "2"}))
	check(t, a.Set("d", "x", Value{Kind: Text, Text: "3"}))
	if out, _ := b.Import("d", must[[]byte](t)(a.Changes("d", must[[]byte](t)(b.Version("d"))))); out != engine.Applied {
		t.Fatal(out)
	}
	stale := newEngine(t, 3) // never synced
	check(t, stale.Create("d"))
	check(t, a.Compact("d"))

	// Sending side: a peer below the shallow root gets ErrTrimmed, not an
	// update it could only hold as pending.
	if _, err := a.Changes("d", must[[]byte](t)(stale.Version("d"))); !errors.Is(err, engine.ErrTrimmed) {
		t.Fatalf("Changes for a peer below the root: %v", err)
	}
	if _, err := a.Changes("d", must[[]byte](t)(b.Version("d"))); err != nil {
		t.Fatalf("Changes for a peer at the root: %v", err)
	}

	// Receiving side: a change carrying ops below the root, and a change
	// whose dependencies lie below it (a fork), need trimmed history and
	// change nothing.
	check(t, b.Set("d", "y", Value{Kind: Text, Text: "b"}))
	before := must[[]byte](t)(a.JSON("d"))
	if out, err := a.Import("d", must[[]byte](t)(b.Changes("d", nil))); out != engine.NeedsTrimmedHistory || err != nil {
		t.Fatalf("change from the empty version: %v %v", out, err)
	}
	check(t, stale.Set("d", "x", Value{Kind: Text, Text: "fork"}))
	if out, err := a.Import("d", must[[]byte](t)(stale.Changes("d", must[[]byte](t)(a.Version("d"))))); out != engine.NeedsTrimmedHistory || err != nil {
		t.Fatalf("forked change: %v %v", out, err)
	}
	if got := must[[]byte](t)(a.JSON("d")); string(got) != string(before) {
		t.Fatalf("refused changes changed the document: %s -> %s", before, got)
	}

	// need_snap's path: b's whole document merges; the fork's is refused.
	if out, err := a.ImportSnapshot("d", must[[]byte](t)(b.Snapshot("d"))); out != engine.Applied {
		t.Fatalf("snapshot covering the root: %v %v", out, err)
	}
	if v, ok := a.Get("d", "y"); !ok || v.Text != "b" {
		t.Fatalf("b's edit after the snapshot: %+v %v", v, ok)
	}
	if out, err := a.ImportSnapshot("d", must[[]byte](t)(stale.Snapshot("d"))); out != engine.Refused || err == nil {
		t.Fatalf("forked snapshot: %v %v", out, err)
	}
	// The forked replica cannot take a's compacted snapshot either: it
	// holds a change the snapshot lacks and cannot be merged under.
	if out, err := stale.ImportSnapshot("d", must[[]byte](t)(a.Snapshot("d"))); out != engine.Refused || err == nil {
		t.Fatalf("compacted snapshot into the fork: %v %v", out, err)
	}
}

// TestCompactionDefectLeavesDocument: testdata/shallow-defect.snap is a
// document (three heads, from the randomized exchange test) whose shallow
// snapshot loro-crdt 1.13.9 exports and then refuses to load — in Node
// too; 1.17.1 loads it. Compact fails with ErrCompact and the document
// keeps its whole history and content, and goes on replicating.
func TestCompactionDefectLeavesDocument(t *testing.T) {
	snap, err := os.ReadFile("testdata/shallow-defect.snap")
	check(t, err)
	e := newEngine(t, 1)
	if out, err := e.ImportSnapshot("d", snap); out != engine.Applied {
		t.Fatalf("load: %v %v", out, err)
	}
	before := stateOf(t, e)
	if err := e.Compact("d"); !errors.Is(err, ErrCompact) {
		t.Fatalf("Compact: %v", err)
	}
	if after := stateOf(t, e); !after.same(before) {
		t.Fatalf("a failed compaction changed the document: %s -> %s", before.json, after.json)
	}
	check(t, e.Set("d", "after", tv("x")))
	o := newEngine(t, 2)
	if out, err := o.Import("d", must[[]byte](t)(e.Changes("d", nil))); out != engine.Applied {
		t.Fatalf("replicating after the failed compaction: %v %v", out, err)
	}
}
