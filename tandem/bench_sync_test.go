package tandem

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// The anchor of the sync benchmarks (docs/benchmarks/tandem-device.md):
// the binding fetching the same messages while crypto/ed25519.Verify
// checks the same signatures on every core, the two overlapped.

// sigCase is one write's public key, signed input and signature.
type sigCase struct{ pub, msg, sig []byte }

// sigsOf lists the signatures of collection c's writes on d (those of the
// records in only, when only is not nil).
func sigsOf(d *Device, c CollectionID, only map[RecordID]bool) []sigCase {
	st, err := d.eng.Snapshot(client.CollectionID(c))
	if err != nil {
		return nil
	}
	var out []sigCase
	for w := range st.All() {
		body := w.Body()
		if only != nil && !only[RecordID(body.Record)] {
			continue
		}
		si, err := body.SigInput()
		if err != nil {
			continue
		}
		out = append(out, sigCase{pub: body.Author[:], msg: si, sig: w.Sig()})
	}
	return out
}

// rawFetch lists the folder's changes since cursor and fetches every
// message they add, 256 at a time, with the binding alone.
func rawFetch(b *testing.B, cfg imaphub.Config, cursor hub.Cursor) {
	ctx := context.Background()
	s, err := imaphub.Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ch, err := s.Changes(ctx, cursor)
	if err != nil {
		b.Fatal(err)
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		ids = append(ids, a.ID)
	}
	for i := 0; i < len(ids); i += 256 {
		if _, err := s.Fetch(ctx, ids[i:min(i+256, len(ids))]); err != nil {
			b.Fatal(err)
		}
	}
}

// verifyAllCores checks every signature with crypto/ed25519.Verify on
// GOMAXPROCS goroutines.
func verifyAllCores(b *testing.B, sigs []sigCase) {
	var next atomic.Int64
	var bad atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(sigs)); i = next.Add(1) - 1 {
				if !ed25519.Verify(sigs[i].pub, sigs[i].msg, sigs[i].sig) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		b.Fatalf("%d signatures did not verify", bad.Load())
	}
}

// rawFetchVerify is the anchor: rawFetch overlapped with verifyAllCores.
// It returns how long the two took together.
func rawFetchVerify(b *testing.B, cfg imaphub.Config, cursor hub.Cursor, sigs []sigCase) time.Duration {
	if len(sigs) == 0 {
		b.Fatal("no signatures to verify")
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { verifyAllCores(b, sigs) })
	rawFetch(b, cfg, cursor)
	wg.Wait()
	return time.Since(t0)
}

const catchUpRecords = 1_000

var (
	catchOnce   sync.Once
	catchErr    error
	catchBase   string     // a device after its first sync, closed
	catchCursor hub.Cursor // the folder before the new messages
	catchSigs   []sigCase
)

// catchUpSource syncs a device from the first-sync source and closes it,
// then has the source write catchUpRecords new records (benchFields fields
// each, one message per record) and publish them.
func catchUpSource(b *testing.B) (Hub, string) {
	h, key := firstSyncSource(b)
	catchOnce.Do(func() {
		ctx := context.Background()
		dir, _ := osMkdirTemp()
		catchBase = filepath.Join(dir, "base")
		d, err := Restore(ctx, catchBase, key, Options{Hub: h, Logger: quiet()})
		if err != nil {
			catchErr = err
			return
		}
		if _, catchErr = d.Sync(ctx); catchErr != nil {
			d.Close()
			return
		}
		d.Close()
		s, err := imaphub.Open(ctx, rawConfig(h))
		if err != nil {
			catchErr = err
			return
		}
		ch, err := s.Changes(ctx, nil)
		s.Close()
		if err != nil {
			catchErr = err
			return
		}
		catchCursor = ch.Cursor
		src, err := Open(ctx, filepath.Join(firstDir, "src"), Options{Hub: h, Logger: quiet()})
		if err != nil {
			catchErr = err
			return
		}
		defer src.Close()
		src.db.SQL().Exec("PRAGMA synchronous = OFF") // setup only
		added := map[RecordID]bool{}
		val := make([]byte, 16)
		for range catchUpRecords {
			var id RecordID
			rand.Read(id[:])
			added[id] = true
			for f := 0; f < benchFields; f++ {
				rand.Read(val)
				src.Set(firstColl, id, fmt.Sprintf("f%d", f), val)
			}
		}
		if _, catchErr = src.Sync(ctx); catchErr != nil {
			return
		}
		catchSigs = sigsOf(src, firstColl, added)
	})
	if catchErr != nil {
		b.Fatal(catchErr)
	}
	return h, key
}

// BenchmarkCatchUp: a device that did its first sync of the 10,000-record
// collection is reopened and syncs the 1,000 new messages (10,000 writes)
// another device published (/device: the Sync only, on a fresh copy of the
// device each time), against the anchor on the same 1,000 messages.
func BenchmarkCatchUp(b *testing.B) {
	h, _ := catchUpSource(b)
	device := func(b *testing.B) time.Duration {
		b.StopTimer()
		d, err := Open(context.Background(), copyDir(b, catchBase), Options{Hub: h, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		rep, err := d.Sync(context.Background())
		if err != nil || rep.Fetched < catchUpRecords {
			b.Fatalf("%v %+v", err, rep)
		}
		took := time.Since(t0)
		b.StopTimer()
		d.Close()
		b.StartTimer()
		return took
	}
	cfg := rawConfig(h)
	anchor := func(b *testing.B) time.Duration { return rawFetchVerify(b, cfg, catchCursor, catchSigs) }
	againstAnchor(b, device, anchor)
}

// againstAnchor runs device and anchor as sub-benchmarks of their own, then
// interleaved ("ratio").
func againstAnchor(b *testing.B, device, anchor func(*testing.B) time.Duration) {
	b.Run("device", func(b *testing.B) {
		for b.Loop() {
			device(b)
		}
	})
	b.Run("anchor", func(b *testing.B) {
		for b.Loop() {
			anchor(b)
		}
	})
	b.Run("ratio", func(b *testing.B) { interleaved(b, device, anchor) })
}

// interleaved runs device then anchor in each iteration and reports the
// ratio of their timed durations summed (device/anchor), so that both see
// the same load on a shared machine.
func interleaved(b *testing.B, device, anchor func(*testing.B) time.Duration) {
	var dev, anc time.Duration
	for b.Loop() {
		dev += device(b)
		anc += anchor(b)
	}
	b.ReportMetric(float64(dev.Milliseconds())/float64(b.N), "device-ms")
	b.ReportMetric(float64(anc.Milliseconds())/float64(b.N), "anchor-ms")
	b.ReportMetric(float64(dev)/float64(anc), "device/anchor")
}

// BenchmarkIdleSync: a device that holds the 11,000-record collection syncs
// again with nothing new on the hub (what Run does at every notification
// or poll): listing the folder, then the healing pass of §12.2 over every
// kept write. The anchor is the listing alone: the binding's Changes since
// the latest cursor on an open session.
func BenchmarkIdleSync(b *testing.B) {
	h, _ := catchUpSource(b)
	ctx := context.Background()
	d, err := Open(ctx, copyDir(b, catchBase), Options{Hub: h, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	s, err := imaphub.Open(ctx, rawConfig(h))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ch, err := s.Changes(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	device := func(b *testing.B) time.Duration {
		t0 := time.Now()
		rep, err := d.Sync(ctx)
		if err != nil || rep.Fetched != 0 {
			b.Fatalf("%v %+v", err, rep)
		}
		return time.Since(t0)
	}
	anchor := func(b *testing.B) time.Duration {
		t0 := time.Now()
		if _, err := s.Changes(ctx, ch.Cursor); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	againstAnchor(b, device, anchor)
}
