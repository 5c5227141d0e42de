package replica

import (
	"context"
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/media"
)

func bigDoc(b *testing.B) *engine.KV {
	src, _ := engine.NewKV("src")
	val := make([]byte, 1<<20)
	for i := range val {
		val[i] = byte(i * 31)
	}
	if err := src.Set("big", "blob", val); err != nil {
		b.Fatal(err)
	}
	return src
}

// BenchmarkAnchorSnapshot1MiB is the anchor: snapshot a 1 MiB document and
// import it into an empty replica, with no transfer at all.
func BenchmarkAnchorSnapshot1MiB(b *testing.B) {
	src := bigDoc(b)
	for b.Loop() {
		dst, _ := engine.NewKV("dst")
		snap, _ := src.Snapshot("big")
		if out, err := dst.ImportSnapshot("big", snap); out != engine.Applied || err != nil {
			b.Fatal(out, err)
		}
	}
	b.SetBytes(1 << 20)
}

// BenchmarkMediaPath1MiB carries the same document over the media path:
// chunked, judged at chunk 0, reassembled and imported.
func BenchmarkMediaPath1MiB(b *testing.B) {
	src := bigDoc(b)
	var chunks, wire int
	for b.Loop() {
		dst, _ := engine.NewKV("dst")
		done := false
		rx := &media.Receiver{
			Judge: func(p media.Purpose, total uint64) error {
				if total > DefaultMaxRecord {
					return media.ErrOverRecord
				}
				return nil
			},
			Data: func(p media.Purpose, data []byte) {
				out, err := dst.ImportSnapshot(p.Doc, data)
				done = out == engine.Applied && err == nil
			},
		}
		chunks, wire = 0, 0
		tx := &media.Sender{Send: func(_ context.Context, c []byte) error {
			chunks++
			wire += len(c) + 1
			return rx.Handle(c)
		}}
		snap, _ := src.Snapshot("big")
		if err := tx.SendData(context.Background(), media.Purpose{P: media.PurposeSnapshot, Doc: "big"}, snap); err != nil || !done {
			b.Fatal(fmt.Errorf("transfer: %v, imported %v", err, done))
		}
	}
	b.SetBytes(1 << 20)
	b.ReportMetric(float64(chunks), "chunks/op")
	b.ReportMetric(float64(wire), "wire-bytes/op")
}
