package relay_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/pgtest"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
)

// The scale-out benchmarks of issue 16: the same workloads against one
// SQLite relay process (the anchor, "sqlite-1") and three relay processes
// on one Postgres database with the clients spread over them
// ("postgres-3"). Every iteration starts on an empty database. Run with
//
//	go test ./evolu/relay -run '^$' -bench Scale -benchtime 3x
//
// Figures: docs/benchmarks/evolu.md.

// deployment is relay processes on one database.
type deployment struct {
	urls []string
	// preload writes msgs of owner straight into the database, before the
	// relays start.
	preload func(b *testing.B, owner protocol.OwnerID, msgs []protocol.EncryptedMessage)
	start   func(b *testing.B)
}

// url is the relay of client i.
func (d *deployment) url(i int) string { return d.urls[i%len(d.urls)] }

type setup struct {
	name string
	make func(b *testing.B) *deployment
}

var scaleSetups = []setup{
	{"sqlite-1", func(b *testing.B) *deployment {
		db := filepath.Join(b.TempDir(), "relay.db")
		d := &deployment{}
		d.preload = func(b *testing.B, o protocol.OwnerID, msgs []protocol.EncryptedMessage) {
			st, err := sqlstore.Open(context.Background(), db, sqlstore.Config{Kind: sqlstore.KindRelay, Exclusive: true}, "")
			if err != nil {
				b.Fatal(err)
			}
			writeAll(b, st, o, msgs)
			st.Close()
		}
		d.start = func(b *testing.B) { d.urls = []string{startChild(b, db).url} }
		return d
	}},
	{"postgres-3", func(b *testing.B) *deployment {
		dsn := pgtest.Database(b)
		d := &deployment{}
		d.preload = func(b *testing.B, o protocol.OwnerID, msgs []protocol.EncryptedMessage) {
			st, err := sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Config{Kind: sqlstore.KindRelay})
			if err != nil {
				b.Fatal(err)
			}
			writeAll(b, st, o, msgs)
			st.Close()
		}
		d.start = func(b *testing.B) {
			for range 3 {
				d.urls = append(d.urls, startChild(b, dsn).url)
			}
		}
		return d
	}},
}

// BenchmarkScalePush20kPull: a client pushes 20,000 changes through one
// relay process, then a fresh client pulls them through another.
func BenchmarkScalePush20kPull(b *testing.B) {
	for _, s := range scaleSetups {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				d := s.make(b)
				d.start(b)
				o := testOwner(9)
				ctx := context.Background()
				a, fresh := preloadedStore(b, filepath.Join(b.TempDir(), "a.db"), o.ID(), opaqueMessages(b, 20_000, 1)), openStore(b, "b.db")
				b.StartTimer()
				rep, err := client.Sync(ctx, d.url(0), o, a, client.SyncOptions{})
				if err != nil || rep.Sent != 20_000 {
					b.Fatalf("push: %+v %v", rep, err)
				}
				rep2, err := client.Sync(ctx, d.url(1), o, fresh, client.SyncOptions{})
				if err != nil || rep2.Received != 20_000 {
					b.Fatalf("pull: %+v %v", rep2, err)
				}
			}
		})
	}
}

// BenchmarkScaleReconcile100k: client and relay hold the same 100,000
// changes but for 10 on each side; the client syncs with the third relay
// process (the one that did not load anything).
func BenchmarkScaleReconcile100k(b *testing.B) {
	for _, s := range scaleSetups {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				d := s.make(b)
				o := testOwner(10)
				all := opaqueMessages(b, 100_010, 1)
				a := preloadedStore(b, filepath.Join(b.TempDir(), "a.db"), o.ID(), append(append([]protocol.EncryptedMessage{}, all[:50_000]...), all[50_010:]...))
				d.preload(b, o.ID(), append(append([]protocol.EncryptedMessage{}, all[:99_990]...), all[100_000:]...))
				d.start(b)
				b.StartTimer()
				rep, err := client.Sync(context.Background(), d.url(2), o, a, client.SyncOptions{})
				if err != nil || rep.Sent != 10 || rep.Received != 10 {
					b.Fatalf("reconcile: %+v %v", rep, err)
				}
			}
		})
	}
}

// BenchmarkScale200Clients: 200 clients, each with its own owner and 100
// changes, sync at once, spread over the relay processes.
func BenchmarkScale200Clients(b *testing.B) {
	const n, m = 200, 100
	for _, s := range scaleSetups {
		b.Run(s.name, func(b *testing.B) {
			var p99 time.Duration
			for b.Loop() {
				b.StopTimer()
				d := s.make(b)
				d.start(b)
				f := newFleet(b, n, m)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				b.StartTimer()
				var wg sync.WaitGroup
				errs := make([]error, n)
				lat := make([]time.Duration, n)
				for i := range f.owners {
					wg.Go(func() {
						start := time.Now()
						rep, err := client.Sync(ctx, d.url(i), f.owners[i], f.stores[i], client.SyncOptions{})
						lat[i] = time.Since(start)
						if err == nil && rep.Sent != m {
							err = errSent
						}
						errs[i] = err
					})
				}
				wg.Wait()
				b.StopTimer()
				cancel()
				for i, err := range errs {
					if err != nil {
						b.Fatalf("client %d: %v", i, err)
					}
					p99 = max(p99, lat[i])
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*m*b.N)/b.Elapsed().Seconds(), "changes/s")
			b.ReportMetric(float64(p99.Microseconds())/1000, "max-sync-ms")
		})
	}
}

var errSent = errorString("did not upload all its changes")

type errorString string

func (e errorString) Error() string { return string(e) }

// preloadedStore is a client store at path already holding msgs, written straight
// into its database (the client's storage adapter is unexported).
func preloadedStore(b testing.TB, path string, o protocol.OwnerID, msgs []protocol.EncryptedMessage) *client.Store {
	writeAll(b, rawClientStorage(b, path), o, msgs)
	st, err := client.OpenExistingStore(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// rawClientStorage opens the message side of a client store's database at
// path, the way the client's unexported storage adapter reads it; closed
// when the test ends.
func rawClientStorage(b testing.TB, path string) *sqlstore.Store {
	raw, err := sqlstore.Open(context.Background(), path, sqlstore.Config{Kind: sqlstore.KindClient}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	return raw
}
