package interop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// The side-by-side benchmarks of issue 5: the same client workload (the
// evolu/internal/protocol client over a WebSocket, protocolSync, with in-memory
// stores) against the real TS relay and the Ferry relay, each running as its
// own process on 127.0.0.1. Every iteration starts both relays empty, runs the
// workload against the TS relay (the anchor) and then the Ferry relay, and
// reports per relay: wall-clock of the timed steps, bytes on the wire, rounds
// and the relay process's peak RSS (VmHWM), plus the ratios; and, apart, the
// time the client waited for replies (send to reply read, summed over rounds),
// the relays' own share under the same client. Run with
//
//	go test ./evolu/interop -run '^$' -bench Relay -benchtime 1x
//
// Results are written in docs/benchmarks/evolu.md.

// benchChangeSize is the size of an encrypted change in the benchmarks: about
// what encodeAndEncryptDbChange makes for a short row (a relay never decrypts,
// so the bodies are opaque bytes of that size).
const benchChangeSize = 100

// relayKind starts one relay process, on a fresh data directory or on dir.
type relayKind struct {
	name    string
	start   func(testing.TB) *relayProc
	startIn func(t testing.TB, dir string) *relayProc
}

// relayKinds are, in order: the anchor (the real @evolu/nodejs relay), the
// Ferry relay, and the relay code of @evolu/common 8.11.0 (js/relay-811.mjs),
// whose bytes on the wire Ferry must equal.
func relayKinds(e realEnv) []relayKind {
	return []relayKind{
		{"ts", func(t testing.TB) *relayProc { return startTSRelay(t, e) },
			func(t testing.TB, dir string) *relayProc { return startNodeRelayIn(t, e, "relay.mjs", dir) }},
		{"ferry", startFerryRelayProcess, startFerryRelayProcessIn},
		{"ts811", func(t testing.TB) *relayProc { return startTS811Relay(t, e) },
			func(t testing.TB, dir string) *relayProc { return startNodeRelayIn(t, e, "relay-811.mjs", dir) }},
	}
}

// workloadResult is what one workload measured against one relay.
type workloadResult struct {
	Elapsed       time.Duration // the timed steps
	BytesSent     int64         // client to relay
	BytesReceived int64         // relay to client
	Rounds        int
	PeakRSS       int64
	RelayCPU      time.Duration // CPU the relay process used in the timed steps
	// Wait is the part of Elapsed the client spent waiting for replies
	// (wsStats.Wait summed over sessions): same client, so the fair
	// relay-only comparison.
	Wait time.Duration
}

// timed runs step and adds its relay CPU time to res.
func timed(r *relayProc, res *workloadResult, step func() error) error {
	before, err := r.CPUTime()
	if err != nil {
		return err
	}
	if err := step(); err != nil {
		return err
	}
	after, err := r.CPUTime()
	res.RelayCPU += after - before
	return err
}

// runOn starts a relay, runs fn against it, and records its peak RSS.
func runOn(b *testing.B, k relayKind, fn func(ctx context.Context, r *relayProc) (workloadResult, error)) workloadResult {
	b.Helper()
	r := k.start(b)
	ctx := withTimeout(b, 10*time.Minute)
	res, err := fn(ctx, r)
	if err != nil {
		b.Fatalf("%s relay: %v\n%s", k.name, err, r.Stderr())
	}
	rss, err := r.PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	res.PeakRSS = rss
	b.Logf("%s relay: %v (waiting for replies %v, relay CPU %v), %d B sent, %d B received, %d rounds, peak RSS %.1f MiB",
		k.name, res.Elapsed, res.Wait, res.RelayCPU, res.BytesSent, res.BytesReceived, res.Rounds, float64(rss)/(1<<20))
	if err := r.Stop(); err != nil {
		b.Logf("%s relay exit: %v", k.name, err)
	}
	return res
}

// runAll runs the workload b.N times on fresh relays of every kind, in turn,
// and reports the median of each figure (the machine is shared: use
// -benchtime 3x or more for stable medians).
func runAll(b *testing.B, kinds []relayKind, workload func(ctx context.Context, r *relayProc) (workloadResult, error)) {
	b.Helper()
	results := make([][]workloadResult, len(kinds))
	b.ResetTimer()
	for range b.N {
		for i, k := range kinds {
			results[i] = append(results[i], runOn(b, k, workload))
		}
	}
	b.StopTimer()
	report(b, median(results[0]), median(results[1]), median(results[2]))
}

// median is the median of each figure (the lower middle for an even count).
func median(rs []workloadResult) workloadResult {
	pick := func(f func(workloadResult) int64) int64 {
		v := make([]int64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[(len(v)-1)/2]
	}
	return workloadResult{
		Elapsed:       time.Duration(pick(func(r workloadResult) int64 { return int64(r.Elapsed) })),
		BytesSent:     pick(func(r workloadResult) int64 { return r.BytesSent }),
		BytesReceived: pick(func(r workloadResult) int64 { return r.BytesReceived }),
		Rounds:        int(pick(func(r workloadResult) int64 { return int64(r.Rounds) })),
		PeakRSS:       pick(func(r workloadResult) int64 { return r.PeakRSS }),
		RelayCPU:      time.Duration(pick(func(r workloadResult) int64 { return int64(r.RelayCPU) })),
		Wait:          time.Duration(pick(func(r workloadResult) int64 { return int64(r.Wait) })),
	}
}

// report adds the relays' figures and the ratios to b. Speed and memory are
// compared with the real @evolu/nodejs relay (ts); bytes and rounds must
// equal those of the 8.11.0 relay code (ts811), which Ferry implements. The
// @evolu/nodejs relay runs @evolu/common 8.0.0-next.5, whose bytes differ
// where its splitRange lists the wrong timestamps
// (docs/decisions/evolu-interop-relay-811.md); that difference is reported,
// not failed.
func report(b *testing.B, ts, ferry, ts811 workloadResult) {
	b.Helper()
	b.ReportMetric(float64(ts811.Elapsed.Milliseconds()), "ts811-ms")
	b.ReportMetric(float64(ts811.PeakRSS)/(1<<20), "ts811-rss-MiB")
	b.ReportMetric(float64(ts811.BytesSent+ts811.BytesReceived), "ts811-wire-B")
	if ferry.BytesSent != ts811.BytesSent || ferry.BytesReceived != ts811.BytesReceived || ferry.Rounds != ts811.Rounds {
		b.Errorf("wire differs from the 8.11.0 relay: it sent %d/received %d in %d rounds, Ferry %d/%d in %d",
			ts811.BytesReceived, ts811.BytesSent, ts811.Rounds, ferry.BytesReceived, ferry.BytesSent, ferry.Rounds)
	}
	b.ReportMetric(float64(ts.Elapsed.Milliseconds()), "ts-ms")
	b.ReportMetric(float64(ferry.Elapsed.Milliseconds()), "ferry-ms")
	b.ReportMetric(float64(ts.Elapsed)/float64(ferry.Elapsed), "speedup-x")
	b.ReportMetric(float64(ts.Wait.Microseconds())/1000, "ts-wait-ms")
	b.ReportMetric(float64(ferry.Wait.Microseconds())/1000, "ferry-wait-ms")
	if ferry.Wait > 0 {
		b.ReportMetric(float64(ts.Wait)/float64(ferry.Wait), "wait-speedup-x")
	}
	b.ReportMetric(float64(ts.RelayCPU.Milliseconds()), "ts-cpu-ms")
	b.ReportMetric(float64(ferry.RelayCPU.Milliseconds()), "ferry-cpu-ms")
	if ferry.RelayCPU > 0 {
		b.ReportMetric(float64(ts.RelayCPU)/float64(ferry.RelayCPU), "cpu-speedup-x")
	}
	b.ReportMetric(float64(ts.PeakRSS)/(1<<20), "ts-rss-MiB")
	b.ReportMetric(float64(ferry.PeakRSS)/(1<<20), "ferry-rss-MiB")
	b.ReportMetric(float64(ferry.PeakRSS)/float64(ts.PeakRSS), "rss-ratio")
	b.ReportMetric(float64(ts.BytesSent+ts.BytesReceived), "ts-wire-B")
	b.ReportMetric(float64(ferry.BytesSent+ferry.BytesReceived), "ferry-wire-B")
	b.ReportMetric(float64(ts.Rounds), "ts-rounds")
	b.ReportMetric(float64(ferry.Rounds), "ferry-rounds")
	if ts.BytesSent != ferry.BytesSent || ts.BytesReceived != ferry.BytesReceived || ts.Rounds != ferry.Rounds {
		b.Logf("wire differs from the @evolu/nodejs relay (common 8.0.0-next.5): it sent %d/received %d in %d rounds, Ferry %d/%d in %d",
			ts.BytesReceived, ts.BytesSent, ts.Rounds, ferry.BytesReceived, ferry.BytesSent, ferry.Rounds)
	}
}

// checkSame fails unless st holds exactly want messages with fingerprint fp.
func checkSame(ctx context.Context, st protocol.Storage, owner protocol.OwnerID, want int, fp protocol.Fingerprint) error {
	n, got, err := storeDigest(ctx, st, owner)
	if err != nil {
		return err
	}
	if n != want || got != fp {
		return fmt.Errorf("%w: %d messages %x, want %d %x", errNotConverged, n, got, want, fp)
	}
	return nil
}

// BenchmarkRelayPush20kPull pushes 20,000 changes into an empty relay, then a
// fresh client pulls them all; both steps are timed.
func BenchmarkRelayPush20kPull(b *testing.B) {
	e := needReal(b)
	owner := loadOwner(b, 0)
	const n = 20_000
	items := opaqueItems(seq(0, n), benchChangeSize)
	ref := protocol.NewMemoryStorage()
	if err := writeAll(context.Background(), ref, owner.ID, items); err != nil {
		b.Fatal(err)
	}
	_, refFP, _ := storeDigest(context.Background(), ref, owner.ID)

	workload := func(ctx context.Context, r *relayProc) (workloadResult, error) {
		var res workloadResult
		pusher := protocol.NewMemoryStorage()
		if err := writeAll(ctx, pusher, owner.ID, items); err != nil {
			return res, err
		}
		puller := protocol.NewMemoryStorage()
		var push, pull wsStats
		err := timed(r, &res, func() (err error) {
			if push, err = protocolSync(ctx, r.URL, owner.ID, owner.WriteKey, pusher); err != nil {
				return fmt.Errorf("push: %w", err)
			}
			if pull, err = protocolSync(ctx, r.URL, owner.ID, owner.WriteKey, puller); err != nil {
				return fmt.Errorf("pull: %w", err)
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		if err := checkSame(ctx, puller, owner.ID, n, refFP); err != nil {
			return res, err
		}
		res.Elapsed = push.Duration + pull.Duration
		res.Wait = push.Wait + pull.Wait
		res.BytesSent = push.BytesSent + pull.BytesSent
		res.BytesReceived = push.BytesReceived + pull.BytesReceived
		res.Rounds = push.Rounds + pull.Rounds
		return res, nil
	}
	runAll(b, relayKinds(e), workload)
}

// reconcile100k is the workload of the reconcile benchmarks: a relay holding
// 100,005 changes but 5 (loaded by an untimed sync), a client holding
// 100,005 but 5 others.
type reconcile100k struct {
	owner               vectorOwner
	n                   int
	clientIdx, relayIdx []int
	allFP               protocol.Fingerprint
}

func newReconcile100k(b *testing.B) *reconcile100k {
	w := &reconcile100k{owner: loadOwner(b, 0), n: 100_005}
	onlyClient := map[int]bool{10: true, 20_000: true, 50_000: true, 77_777: true, 100_004: true}
	onlyRelay := map[int]bool{0: true, 33_333: true, 50_001: true, 99_999: true, 100_003: true}
	for i := range w.n {
		if !onlyRelay[i] {
			w.clientIdx = append(w.clientIdx, i)
		}
		if !onlyClient[i] {
			w.relayIdx = append(w.relayIdx, i)
		}
	}
	all := protocol.NewMemoryStorage()
	if err := writeAll(context.Background(), all, w.owner.ID, opaqueItems(seq(0, w.n), benchChangeSize)); err != nil {
		b.Fatal(err)
	}
	_, w.allFP, _ = storeDigest(context.Background(), all, w.owner.ID)
	return w
}

// load fills the relay (untimed).
func (w *reconcile100k) load(ctx context.Context, r *relayProc) error {
	loader := protocol.NewMemoryStorage()
	if err := writeAll(ctx, loader, w.owner.ID, opaqueItems(w.relayIdx, benchChangeSize)); err != nil {
		return err
	}
	if _, err := protocolSync(ctx, r.URL, w.owner.ID, w.owner.WriteKey, loader); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// reconcile times the client's sync and checks both sides converged.
func (w *reconcile100k) reconcile(ctx context.Context, r *relayProc) (workloadResult, error) {
	var res workloadResult
	client := protocol.NewMemoryStorage()
	if err := writeAll(ctx, client, w.owner.ID, opaqueItems(w.clientIdx, benchChangeSize)); err != nil {
		return res, err
	}
	var s wsStats
	err := timed(r, &res, func() (err error) {
		if s, err = protocolSync(ctx, r.URL, w.owner.ID, w.owner.WriteKey, client); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := checkSame(ctx, client, w.owner.ID, w.n, w.allFP); err != nil {
		return res, err
	}
	// The relay got the client's 5: a fresh client pulls everything.
	check := protocol.NewMemoryStorage()
	if _, err := protocolSync(ctx, r.URL, w.owner.ID, w.owner.WriteKey, check); err != nil {
		return res, fmt.Errorf("check: %w", err)
	}
	if err := checkSame(ctx, check, w.owner.ID, w.n, w.allFP); err != nil {
		return res, fmt.Errorf("relay after reconcile: %w", err)
	}
	res.Elapsed, res.BytesSent, res.BytesReceived, res.Rounds = s.Duration, s.BytesSent, s.BytesReceived, s.Rounds
	res.Wait = s.Wait
	return res, nil
}

// BenchmarkRelayReconcile100k reconciles a client of 100,000 changes with a
// relay of 100,000 that differ in 10 (5 only on each side). Loading the relay
// (by a sync from another client) is not timed; the reconciliation is.
func BenchmarkRelayReconcile100k(b *testing.B) {
	e := needReal(b)
	w := newReconcile100k(b)
	runAll(b, relayKinds(e), func(ctx context.Context, r *relayProc) (workloadResult, error) {
		if err := w.load(ctx, r); err != nil {
			return workloadResult{}, err
		}
		return w.reconcile(ctx, r)
	})
}

// BenchmarkRelayReconcile100kRestarted is BenchmarkRelayReconcile100k with
// every relay stopped after the load and restarted on its data before the
// timed reconciliation, so nothing of the load is left in its memory (the
// common case of a busy relay, whose caches hold few owners). Peak RSS is
// the restarted process's.
func BenchmarkRelayReconcile100kRestarted(b *testing.B) {
	e := needReal(b)
	w := newReconcile100k(b)
	kinds := relayKinds(e)
	restarted := make([]relayKind, len(kinds))
	for i, k := range kinds {
		restarted[i] = relayKind{name: k.name, start: func(t testing.TB) *relayProc {
			dir := t.TempDir()
			r := k.startIn(t, dir)
			ctx := withTimeout(t, 10*time.Minute)
			if err := w.load(ctx, r); err != nil {
				t.Fatalf("%s relay: %v", k.name, err)
			}
			if err := r.Stop(); err != nil {
				t.Logf("%s relay exit: %v", k.name, err)
			}
			return k.startIn(t, dir)
		}}
	}
	runAll(b, restarted, w.reconcile)
}
