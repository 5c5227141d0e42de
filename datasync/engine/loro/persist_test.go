package loro

import (
	"context"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// TestPersistFailureChangesNothing: when the storage hook refuses, a local
// edit or an import fails and the document is as it was; once storage
// recovers, the same edit and import go through, and the persisted
// snapshot loads into a fresh engine with the same content.
func TestPersistFailureChangesNothing(t *testing.T) {
	var saved []byte
	failing := false
	e, err := New(context.Background(), testRuntime(t), Options{Peer: 1, Persist: func(doc string, snap []byte) error {
		if failing {
			return errors.New("disk full")
		}
		saved = snap
		return nil
	}})
	check(t, err)
	check(t, e.Set("d", "k", tv("kept")))
	o := newEngine(t, 2)
	check(t, o.Set("d", "o", tv("theirs")))
	change := must[[]byte](t)(o.Changes("d", nil))

	failing = true
	before := stateOf(t, e)
	if err := e.Set("d", "k", tv("lost")); !errors.Is(err, engine.ErrStorage) {
		t.Fatalf("Set with storage failing: %v", err)
	}
	if out, err := e.Import("d", change); out != engine.Failed || !errors.Is(err, engine.ErrStorage) {
		t.Fatalf("Import with storage failing: %v %v", out, err)
	}
	if after := stateOf(t, e); !after.same(before) {
		t.Fatalf("failed writes changed the document: %s -> %s", before.json, after.json)
	}

	failing = false
	check(t, e.Set("d", "k", tv("second try")))
	if out, _ := e.Import("d", change); out != engine.Applied {
		t.Fatalf("Import after recovery: %v", out)
	}
	fresh := newEngine(t, 3)
	if out, err := fresh.ImportSnapshot("d", saved); out != engine.Applied {
		t.Fatalf("persisted snapshot: %v %v", out, err)
	}
	if got, want := must[[]byte](t)(fresh.JSON("d")), must[[]byte](t)(e.JSON("d")); string(got) != string(want) {
		t.Fatalf("persisted %s, held %s", got, want)
	}
}
