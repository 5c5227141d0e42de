package loro

import (
	"bytes"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// FuzzImport: whatever bytes a peer sends as a change or a snapshot, the
// engine does not panic, an Unreadable blob changes nothing, and the engine
// keeps working (a trap is contained by a rebuild). Each input is also
// tried with its Loro checksum fixed, so mutations reach Loro's decoder
// instead of stopping at the checksum. The same bytes as a peer's version:
// Behind and Changes do not fail, and the changes they answer are readable.
func FuzzImport(f *testing.F) {
	e, change, snap := filled(f)
	other := newEngine(f, 9)
	f.Add(change, false)
	f.Add(snap, true)
	f.Add(change[:len(change)/2], false)
	f.Add([]byte("loro"), true)
	f.Add(must[[]byte](f)(e.Version("d")), false)
	f.Add([]byte{1, 2, 6}, false)
	f.Fuzz(func(t *testing.T, blob []byte, asSnapshot bool) {
		importProbe(t, e, blob, asSnapshot)
		if fixed := withChecksum(blob); !bytes.Equal(fixed, blob) {
			importProbe(t, e, fixed, asSnapshot)
		}
		if _, err := decodeVV(blob); err != nil {
			return // an unreadable version counts as empty: covered by the seeds
		}
		if _, err := e.Behind("d", blob); err != nil {
			t.Fatalf("Behind: %v", err)
		}
		ch, err := e.Changes("d", blob)
		if err != nil {
			t.Fatalf("Changes: %v", err)
		}
		if out, err := other.Import("d", ch); out == engine.Unreadable {
			t.Fatalf("Changes for version %x unreadable: %v", blob, err)
		}
	})
}

func importProbe(t *testing.T, e *Engine, blob []byte, asSnapshot bool) {
	before := stateOf(t, e)
	var out engine.Outcome
	var err error
	if asSnapshot {
		out, err = e.ImportSnapshot("d", blob)
	} else {
		out, err = e.Import("d", blob)
	}
	after := stateOf(t, e)
	if out == engine.Unreadable {
		if err == nil {
			t.Fatal("Unreadable without an error")
		}
		if !after.same(before) {
			t.Fatalf("an unreadable blob changed the document: %s -> %s", before.json, after.json)
		}
	}
	if out == engine.AlreadyHeld && !bytes.Equal(after.version, before.version) {
		t.Fatal("AlreadyHeld changed the version")
	}
}
