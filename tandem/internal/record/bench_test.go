package record

import (
	"crypto/ed25519"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Benchmarks. Reproduce with:
//
//	go test -run '^$' -bench . -benchtime 2x -count 3 ./tandem/record
//
// VerifyRaw is the anchor: crypto/ed25519.Verify over the same sigInputs
// that Ingest verifies and merges. docs/benchmarks/tandem-record.md has the
// figures.

// workload builds n writes over records records as a few devices make
// them: mostly on top of everything (supersession), one in five concurrent
// with everything (siblings), with assigns on two fields and set adds and
// removes over four elements. sign selects real signatures.
func workload(tb testing.TB, n, records int, sign bool) []*Write {
	r := rand.New(rand.NewPCG(42, 42))
	gen := NewState(testValidator())
	now := int64(1_700_000_000_000)
	var writers []*Writer
	for d := range 4 {
		writers = append(writers, &Writer{Key: key(d % 2), Device: dev(d + 1), Clock: NewClock(suite.HLC{}, func() time.Time { return time.UnixMilli(now) }), Ref: [32]byte{1}, Epoch: 1})
	}
	out := make([]*Write, 0, n)
	for i := range n {
		now += int64(r.IntN(3))
		rec := [16]byte{0xbe, byte(i % records >> 16), byte(i % records >> 8), byte(i % records)}
		var c Change
		switch k := r.IntN(20); {
		case k < 10:
			c = assign(rec, []string{"title", "done"}[r.IntN(2)], "value of some length")
		case k < 17:
			c = add(rec, "tags", string(rune('a'+r.IntN(4))))
		default:
			c = remove(rec, "tags", string(rune('a'+r.IntN(4))))
		}
		w := writers[r.IntN(len(writers))]
		body, _, err := gen.prepare(w, c)
		if err != nil {
			tb.Fatal(err)
		}
		if r.IntN(5) == 0 {
			body.Context, body.Base = suite.VV{}, suite.VV{}
		}
		var x *Write
		if sign {
			x, err = gen.v.sign(w.Key, &body, 1)
			if err != nil {
				tb.Fatal(err)
			}
		} else {
			si, err := body.SigInput()
			if err != nil {
				tb.Fatal(err)
			}
			x = &Write{body: body, id: suite.WriteID(si), epoch: 1, ok: true}
		}
		gen.Add(x)
		out = append(out, x)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

var (
	signedOnce   sync.Once
	signedWrites []*Write
	mergeOnce    sync.Once
	mergeWrites  []*Write
)

func signedWorkload(b *testing.B) []*Write {
	signedOnce.Do(func() { signedWrites = workload(b, 4096, 512, true) })
	return signedWrites
}

// BenchmarkVerifyRaw is the anchor: plain crypto/ed25519.Verify of each
// write's sigInput, the cheapest check any client could make.
func BenchmarkVerifyRaw(b *testing.B) {
	ws := signedWorkload(b)
	inputs := make([][]byte, len(ws))
	for i, w := range ws {
		inputs[i], _ = w.body.SigInput()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w := ws[i%len(ws)]
		if !ed25519.Verify(w.body.Author[:], inputs[i%len(ws)], w.sig) {
			b.Fatal("verify")
		}
	}
}

// BenchmarkIngest is what a receiver does per write: encode sigInput, hash
// the write ID, VerifyStrict, and merge into the state.
func BenchmarkIngest(b *testing.B) {
	ws := signedWorkload(b)
	s := NewState(testValidator())
	bodies := make([]suite.WriteBody, len(ws))
	for i, w := range ws {
		bodies[i] = w.Body()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % len(ws)
		if j == 0 && i > 0 {
			b.StopTimer()
			s = NewState(testValidator())
			b.StartTimer()
		}
		if _, _, err := s.Ingest(&bodies[j], ws[j].sig, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMerge100k merges 100,000 validated writes over 10,000 records
// (conflicts, supersession, sets) into an empty state, in arrival order
// shuffled. One op is the whole merge; ns/write and allocs/write are
// reported per write.
func BenchmarkMerge100k(b *testing.B) {
	mergeOnce.Do(func() { mergeWrites = workload(b, 100_000, 10_000, false) })
	ws := mergeWrites
	b.ReportAllocs()
	b.ResetTimer()
	var kept int
	for range b.N {
		s := NewState(testValidator())
		for _, w := range ws {
			s.Add(w)
		}
		kept = s.Len()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ws)), "ns/write")
	b.ReportMetric(float64(kept), "kept")
}

// BenchmarkIngestVsVerify interleaves the anchor and the ingest write by
// write, so that load from other processes on a shared machine hits both
// alike, and reports the ratio of rates ingest/verify = verify-ns/ingest-ns
// (goal ≥ 0.70), from the medians of the per-write times (robust to a
// process being preempted mid-measurement) and from the totals.
func BenchmarkIngestVsVerify(b *testing.B) {
	ws := signedWorkload(b)
	inputs := make([][]byte, len(ws))
	bodies := make([]suite.WriteBody, len(ws))
	for i, w := range ws {
		inputs[i], _ = w.body.SigInput()
		bodies[i] = w.Body()
	}
	s := NewState(testValidator())
	verifyNs := make([]time.Duration, 0, b.N)
	ingestNs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		j := i % len(ws)
		if j == 0 && i > 0 {
			s = NewState(testValidator())
		}
		verify := func() {
			t0 := time.Now()
			if !ed25519.Verify(ws[j].body.Author[:], inputs[j], ws[j].sig) {
				b.Fatal("verify")
			}
			verifyNs = append(verifyNs, time.Since(t0))
		}
		ingest := func() {
			t0 := time.Now()
			if _, _, err := s.Ingest(&bodies[j], ws[j].sig, 1); err != nil {
				b.Fatal(err)
			}
			ingestNs = append(ingestNs, time.Since(t0))
		}
		if i%2 == 0 { // alternate which goes first
			verify()
			ingest()
		} else {
			ingest()
			verify()
		}
	}
	b.StopTimer()
	sum := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	vm, im := median(verifyNs), median(ingestNs)
	b.ReportMetric(float64(vm.Nanoseconds()), "verify-median-ns")
	b.ReportMetric(float64(im.Nanoseconds()), "ingest-median-ns")
	b.ReportMetric(float64(vm)/float64(im), "rate-ratio-median")
	b.ReportMetric(float64(sum(verifyNs))/float64(sum(ingestNs)), "rate-ratio-total")
}
