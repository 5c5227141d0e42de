package client

import (
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
)

// BenchmarkFirstSync compares a new device's first Sync of a collection of
// benchWrites writes, one per message on memhub (Changes, Fetch, open the
// envelope, strict JSON, roster eligibility, verify, merge), with the
// anchor: record.State.Ingest of the same writes (strict signature check
// and merge alone). Each iteration runs both, one after the other, and the
// benchmark reports their times and the ratio x-anchor.
func BenchmarkFirstSync(b *testing.B) {
	const benchWrites = 500
	srv := memhub.NewServer()
	us, _ := NewSecret(nil)
	a, err := New(Config{Secret: us, Hub: srv.Open(), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	c, err := a.CreateCollection("Bench")
	if err != nil {
		b.Fatal(err)
	}
	for range benchWrites {
		rec, _ := a.NewRecordID()
		if err := a.Assign(c, rec, "title", []byte("an item of a list")); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := a.Sync(b.Context()); err != nil {
		b.Fatal(err)
	}
	snap, _ := a.Snapshot(c)
	var writes []*record.Write
	for w := range snap.All() {
		writes = append(writes, w)
	}
	var anchor, client time.Duration
	for b.Loop() {
		t0 := time.Now()
		st := record.NewState(snap.Validator())
		for _, w := range writes {
			body := w.Body()
			if _, _, err := st.Ingest(&body, w.Sig(), w.Epoch()); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		d, err := New(Config{Secret: us, Hub: srv.Open(), Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		if rep, err := d.Sync(b.Context()); err != nil || rep.Applied < benchWrites {
			b.Fatalf("sync: %+v, %v", rep, err)
		}
		t2 := time.Now()
		anchor += t1.Sub(t0)
		client += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(anchor.Microseconds())/n/1000, "anchor-ingest-ms")
	b.ReportMetric(float64(client.Microseconds())/n/1000, "first-sync-ms")
	b.ReportMetric(float64(client)/float64(anchor), "x-anchor")
}
