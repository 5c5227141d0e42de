package engine

import (
	"bytes"
	"errors"
	"testing"
)

// A storage failure leaves a document exactly as it was: imports, snapshot
// imports and compaction return Failed (or the error) and change nothing,
// and staged edits stay staged. Once storage recovers, an applied import
// folds the staged edits in, after the imported change.
func TestKVPersistFailureChangesNothing(t *testing.T) {
	a, b := newKV(t, "a"), newKV(t, "b")
	_ = a.Set("d", "x", []byte("1"))
	syncDoc(t, a, b, "d")
	_ = b.Delete("d", "x")
	_ = a.Set("d", "y", []byte("2"))
	v, _ := b.Version("d")
	ch, _ := a.Changes("d", v)
	snap, _ := a.Snapshot("d")
	_ = b.Stage("d", "mine", []byte("staged"))

	failing := true
	writes := 0
	b.Persist = func(doc string, s []byte) error {
		writes++
		if _, err := decodeSnapshot(s); err != nil || doc != "d" {
			t.Fatalf("persisted %q: %v", doc, err)
		}
		if failing {
			return errors.New("disk full")
		}
		return nil
	}
	was, _ := b.Snapshot("d")
	if out, err := b.Import("d", ch); out != Failed || !errors.Is(err, ErrStorage) {
		t.Fatalf("Import: %v %v", out, err)
	}
	if out, err := b.ImportSnapshot("d", snap); out != Failed || !errors.Is(err, ErrStorage) {
		t.Fatalf("ImportSnapshot: %v %v", out, err)
	}
	if err := b.Compact("d"); !errors.Is(err, ErrStorage) {
		t.Fatalf("Compact: %v", err)
	}
	if _, err := b.Flush("d"); !errors.Is(err, ErrStorage) {
		t.Fatalf("Flush: %v", err)
	}
	if now, _ := b.Snapshot("d"); !bytes.Equal(now, was) || !b.Pending("d") || writes != 4 {
		t.Fatalf("failed writes changed the document (pending %v, %d writes)", b.Pending("d"), writes)
	}

	failing = false
	if out, err := b.Import("d", ch); out != Applied || err != nil {
		t.Fatalf("Import after recovery: %v %v", out, err)
	}
	if b.Pending("d") {
		t.Fatal("staged edit not folded into the applied import")
	}
	if v, _ := b.Get("d", "mine"); string(v) != "staged" {
		t.Fatal("folded edit missing")
	}
	// The folded edit is a local change the peer lacks: a's version is
	// behind b's, and the change carries it.
	va, _ := a.Version("d")
	if behind, _ := b.Behind("d", va); !behind {
		t.Fatal("folded edit not in b's version")
	}
	syncDoc(t, b, a, "d")
	if v, _ := a.Get("d", "mine"); string(v) != "staged" {
		t.Fatal("folded edit did not replicate")
	}
}
