package relay_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// clientFleet is n clients, each with its own owner and store holding m
// encrypted changes the relay does not have.
type clientFleet struct {
	owners    []client.Owner
	stores    []*client.Store
	paths     []string // of the stores, for rawClientStorage
	m         int
	latencies []time.Duration // of the last syncAll, per client
}

// percentile returns the p-th percentile of the last syncAll's latencies.
func (f *clientFleet) percentile(p float64) time.Duration {
	l := slices.Clone(f.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(p*float64(len(l))))]
}

func newFleet(t testing.TB, n, m int) *clientFleet {
	t.Helper()
	f := &clientFleet{m: m}
	for i := range n {
		var sec client.Secret
		if _, err := rand.Read(sec[:]); err != nil {
			t.Fatal(err)
		}
		o := client.OwnerFromSecret(sec)
		_, key, _ := protocol.OwnerKeys(sec)
		msgs := make([]protocol.EncryptedMessage, m)
		for j := range msgs {
			var id protocol.ID
			id[0], id[1] = byte(j), byte(j>>8)
			ts := protocol.Timestamp{Millis: uint64(1_700_000_000_000 + j), NodeID: protocol.NodeID{byte(i), 1}}
			c := client.DbChange{Table: "item", ID: id, IsInsert: true, Values: []client.Column{
				{Name: "title", Value: fmt.Sprintf("item %d of client %d", j, i)}, {Name: "n", Value: float64(j)}}}
			enc, err := changecodec.EncryptChange(rand.Reader, ts, c, key)
			if err != nil {
				t.Fatal(err)
			}
			msgs[j] = protocol.EncryptedMessage{Timestamp: ts, Change: enc}
		}
		path := filepath.Join(t.TempDir(), fmt.Sprintf("c%d.db", i))
		st := preloadedStore(t, path, o.ID(), msgs)
		f.paths = append(f.paths, path)
		f.owners = append(f.owners, o)
		f.stores = append(f.stores, st)
	}
	return f
}

// syncAll syncs every client, concurrently or one after another, and
// returns the number of changes uploaded.
func (f *clientFleet) syncAll(t testing.TB, url string, concurrent bool) int {
	t.Helper()
	f.latencies = make([]time.Duration, len(f.owners))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	errs := make([]error, len(f.owners))
	one := func(i int) {
		start := time.Now()
		rep, err := client.Sync(ctx, url, f.owners[i], f.stores[i], client.SyncOptions{})
		f.latencies[i] = time.Since(start)
		errs[i] = err
		mu.Lock()
		sent += rep.Sent
		mu.Unlock()
	}
	for i := range f.owners {
		if concurrent {
			wg.Go(func() { one(i) })
		} else {
			one(i)
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	return sent
}

// checkRelay verifies that the relay holds exactly every client's set.
func (f *clientFleet) checkRelay(t testing.TB, srv *relay.Server) {
	t.Helper()
	ctx := context.Background()
	for i, o := range f.owners {
		n, err := relay.StorageOf(srv).Size(ctx, o.ID())
		if err != nil || n != f.m {
			t.Fatalf("owner %d: relay has %d of %d (%v)", i, n, f.m, err)
		}
		cs := rawClientStorage(t, f.paths[i])
		cn, _ := cs.Size(ctx, o.ID())
		a, _ := relay.StorageOf(srv).Fingerprint(ctx, o.ID(), 0, n)
		b, _ := cs.Fingerprint(ctx, o.ID(), 0, cn)
		if a != b || cn != n {
			t.Fatalf("owner %d: relay and client differ", i)
		}
	}
}

// TestRelay200Clients: 200 clients, each syncing its own owner over a real
// WebSocket at the same time, all converge and nothing is lost; a fresh
// device of each owner then pulls and decrypts everything.
func TestRelay200Clients(t *testing.T) {
	n, m := 200, 20
	if testing.Short() {
		n, m = 50, 10
	}
	srv, url := startRelay(t, relay.Config{})
	f := newFleet(t, n, m)
	if sent := f.syncAll(t, url, true); sent != n*m {
		t.Fatalf("uploaded %d of %d", sent, n*m)
	}
	f.checkRelay(t, srv)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, o := range f.owners {
		wg.Go(func() {
			st := openStore(t, fmt.Sprintf("fresh%d.db", i))
			rep, err := client.Sync(ctx, url, o, st, client.SyncOptions{})
			if err == nil && rep.Received != m {
				err = fmt.Errorf("received %d of %d", rep.Received, m)
			}
			if err == nil {
				rows, _ := st.Rows(ctx, o.ID(), "item")
				if len(rows) != m {
					err = fmt.Errorf("%d rows of %d", len(rows), m)
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("fresh client %d: %v", i, err)
		}
	}
}

// BenchmarkRelay200Clients measures 200 clients pushing 100 changes each
// to an empty Ferry relay over WebSocket on 127.0.0.1. The anchor,
// Sequential, syncs the same 200 clients one after another; Concurrent
// syncs them all at once. Each iteration uses a fresh relay and fresh
// clients (set up outside the timer) and checks that the relay converged
// to every client's set.
func BenchmarkRelay200Clients(b *testing.B) {
	const n, m = 200, 100
	for _, mode := range []struct {
		name       string
		concurrent bool
	}{{"Sequential", false}, {"Concurrent", true}} {
		b.Run(mode.name, func(b *testing.B) {
			changes := 0
			var p50, p99 time.Duration
			for b.Loop() {
				b.StopTimer()
				srv, url := startRelay(b, relay.Config{})
				f := newFleet(b, n, m)
				b.StartTimer()
				changes += f.syncAll(b, url, mode.concurrent)
				b.StopTimer()
				f.checkRelay(b, srv)
				p50, p99 = max(p50, f.percentile(0.5)), max(p99, f.percentile(0.99))
				b.StartTimer()
			}
			b.ReportMetric(float64(changes)/b.Elapsed().Seconds(), "changes/s")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "syncs/s")
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		})
	}
}
