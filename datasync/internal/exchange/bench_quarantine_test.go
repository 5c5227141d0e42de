package exchange

import (
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
)

// benchImports receives b.N distinct one-edit deltas on a session whose
// space uses ledger (nil: the anchor, no quarantine record).
func benchImports(b *testing.B, ledger quarantine.Ledger) {
	src := newReplica(b, "a")
	wires := make([][]byte, b.N)
	for i := range b.N {
		before, _ := src.kv.Version("d")
		if !src.kv.Has("d") {
			before = nil
		}
		_ = src.kv.Set("d", fmt.Sprint("k", i%16), []byte("value"))
		ch, _ := src.kv.Changes("d", before)
		wires[i] = wire(b, frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: ch})
	}
	dst := newReplica(b, "b")
	dst.sp.Ledger = ledger
	s := NewSession(dst.sp, "a", Options{Caps: kvCaps})
	b.ResetTimer()
	for i := range b.N {
		s.Receive(wires[i])
	}
	b.StopTimer()
	if len(dst.reports) != 0 || fmt.Sprint(dst.kv.Values("d")) != fmt.Sprint(src.kv.Values("d")) {
		b.Fatalf("not imported: %v", dst.reports)
	}
}

// BenchmarkAnchorImportDelta is the anchor: one delta received and
// imported, no quarantine record.
func BenchmarkAnchorImportDelta(b *testing.B) { benchImports(b, nil) }

// BenchmarkImportDeltaMemoryLedger records each blob in an in-memory ledger.
func BenchmarkImportDeltaMemoryLedger(b *testing.B) { benchImports(b, &quarantine.Memory{}) }

// BenchmarkImportDeltaDirLedger records each blob on disk (file written and
// fsynced, directory fsynced) before the engine sees it.
func BenchmarkImportDeltaDirLedger(b *testing.B) {
	d, err := quarantine.OpenDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	benchImports(b, d)
}
