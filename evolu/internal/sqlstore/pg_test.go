package sqlstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/pgtest"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

func openPG(t testing.TB, dsn string, cfg Config) *Store {
	t.Helper()
	s, err := OpenPostgres(context.Background(), dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRebindPostgres(t *testing.T) {
	s := &Store{pg: true}
	got := s.rebind("insert into x values (?1, ?, ?), (?1, ?, ?) where a in (?, ?)")
	if want := "insert into x values ($1, $2, $3), ($1, $4, $5) where a in ($6, $7)"; got != want {
		t.Fatalf("rebind = %q", got)
	}
}

// TestPostgresMatchesMemoryStorage is TestMatchesMemoryStorage over the
// real PostgreSQL, reopened half way.
func TestPostgresMatchesMemoryStorage(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 1))
	s := openPG(t, dsn, Config{})
	mem := protocol.NewMemoryStorage()
	owner := protocol.OwnerID{1}
	for round := range 8 {
		batch := randomBatch(r, 1+r.IntN(400))
		if err := s.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		mem.WriteMessages(ctx, owner, batch)
		if round == 4 {
			s.Close()
			s = openPG(t, dsn, Config{})
		}
		compare(t, ctx, r, s, mem, owner)
	}
	if ok, err := s.WriteKeyCheck(ctx, owner); err != nil || !ok {
		t.Fatalf("write key: %v %v", ok, err)
	}
}

// WriteKeyCheck registers a key and checks a wrong one is refused.
func (s *Store) WriteKeyCheck(ctx context.Context, owner protocol.OwnerID) (bool, error) {
	k := protocol.WriteKey{1}
	if ok, err := s.ValidateWriteKey(ctx, owner, k); err != nil || !ok {
		return ok, err
	}
	bad, err := s.ValidateWriteKey(ctx, owner, protocol.WriteKey{2})
	return !bad, err
}

func TestPostgresVectorsRBSR(t *testing.T) {
	dsn := pgtest.Database(t)
	vectors.ReplayRBSR(t, func(t *testing.T) protocol.RelayStorage {
		return openPG(t, pgtest.Schema(t, dsn), Config{})
	})
}

// TestPostgresConcurrentProcesses: three stores on one Postgres database
// (three relay processes) write one owner concurrently; every store then
// answers like the reference, the index matches the rows, and usage and
// quota are exact.
func TestPostgresConcurrentProcesses(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	const quota = 40_000
	cfg := Config{WithinQuota: func(_ protocol.OwnerID, n int64) bool { return n <= quota }}
	stores := []*Store{openPG(t, dsn, cfg), openPG(t, dsn, cfg), openPG(t, dsn, cfg)}
	owner := protocol.OwnerID{5}
	var mu sync.Mutex
	mem := protocol.NewMemoryStorage()
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for range 15 {
				batch := randomBatch(r, 1+r.IntN(100))
				for j := range batch {
					batch[j].Timestamp.NodeID[1] = byte(i)
					batch[j].Change = make([]byte, 10+r.IntN(40))
				}
				if _, err := s.Refresh(ctx, owner); err != nil {
					t.Error(err)
					return
				}
				err := s.WriteMessages(ctx, owner, batch)
				if _, over := err.(*protocol.QuotaExceededError); over {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				mem.WriteMessages(ctx, owner, batch)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r := rand.New(rand.NewPCG(3, 3))
	for _, s := range stores {
		if _, err := s.Refresh(ctx, owner); err != nil {
			t.Fatal(err)
		}
		compare(t, ctx, r, s, mem, owner)
	}
	rebuilt, err := stores[0].Verify(ctx)
	if err != nil || len(rebuilt) != 0 {
		t.Fatalf("Verify rebuilt %v, %v", rebuilt, err)
	}
	var stored, actual int64
	if err := stores[0].db.QueryRowContext(ctx, `select stored_bytes, (select sum(length(change)) from evolu_change where owner = $1) from evolu_owner where owner = $1`, owner[:]).Scan(&stored, &actual); err != nil {
		t.Fatal(err)
	}
	if stored != actual || stored > quota {
		t.Fatalf("stored_bytes %d, changes %d bytes, quota %d", stored, actual, quota)
	}
}
