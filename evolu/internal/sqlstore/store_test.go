package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/synctest"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

func openTest(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func randomBatch(r *rand.Rand, n int) []protocol.EncryptedMessage {
	msgs := make([]protocol.EncryptedMessage, n)
	for i := range msgs {
		var nid protocol.NodeID
		nid[0] = byte(r.IntN(3))
		msgs[i] = protocol.EncryptedMessage{
			Timestamp: protocol.Timestamp{Millis: uint64(r.IntN(5000)), Counter: uint16(r.IntN(3)), NodeID: nid},
			Change:    []byte{byte(i), 1, 2},
		}
	}
	return msgs
}

// TestMatchesMemoryStorage checks every Storage query of the block index
// against the linear in-memory reference, across splits, inserts before
// the first block, duplicates, and a reopen of the database.
func TestMatchesMemoryStorage(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 1))
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	s, err := Open(ctx, path, Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	mem := protocol.NewMemoryStorage()
	owner := protocol.OwnerID{1}
	other := protocol.OwnerID{2}
	for round := range 12 {
		batch := randomBatch(r, 1+r.IntN(400))
		if err := s.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteMessages(ctx, other, batch[:1]); err != nil {
			t.Fatal(err)
		}
		if round == 6 {
			s.Close()
			if s, err = Open(ctx, path, Config{}, ""); err != nil {
				t.Fatal(err)
			}
		}
		compare(t, ctx, r, s, mem, owner)
	}
	s.Close()
}

func compare(t *testing.T, ctx context.Context, r *rand.Rand, s *Store, mem *protocol.MemoryStorage, owner protocol.OwnerID) {
	t.Helper()
	n, err := s.Size(ctx, owner)
	want, _ := mem.Size(ctx, owner)
	if err != nil || n != want {
		t.Fatalf("Size = %d, %v; want %d", n, err, want)
	}
	all := mem.Timestamps(owner)
	for range 50 {
		a, b := r.IntN(n+1), r.IntN(n+1)
		if a > b {
			a, b = b, a
		}
		f1, err := s.Fingerprint(ctx, owner, a, b)
		f2, _ := mem.Fingerprint(ctx, owner, a, b)
		if err != nil || f1 != f2 {
			t.Fatalf("Fingerprint(%d,%d) differs: %v", a, b, err)
		}
		var ub protocol.UpperBound
		if r.IntN(2) == 0 && n > 0 {
			ub = protocol.BoundAt(all[r.IntN(n)])
		} else {
			ub = protocol.BoundAt(protocol.Timestamp{Millis: uint64(r.IntN(5100))}.Bytes())
		}
		l1, err := s.FindLowerBound(ctx, owner, a, n, ub)
		l2, _ := mem.FindLowerBound(ctx, owner, a, n, ub)
		if err != nil || l1 != l2 {
			t.Fatalf("FindLowerBound(%d) = %d, want %d (%v)", a, l1, l2, err)
		}
		var got []protocol.TimestampBytes
		if err := s.Iterate(ctx, owner, a, b, func(ts protocol.TimestampBytes, i int) bool {
			if i != a+len(got) {
				t.Fatalf("index %d, want %d", i, a+len(got))
			}
			got = append(got, ts)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		for i, ts := range got {
			if ts != all[a+i] {
				t.Fatalf("Iterate(%d,%d)[%d] differs", a, b, i)
			}
		}
		if len(got) != b-a {
			t.Fatalf("Iterate(%d,%d) gave %d", a, b, len(got))
		}
	}
	if n >= 40 {
		buckets := []int{3, 10, n / 2, n - 1, n}
		r1, err := s.FingerprintRanges(ctx, owner, buckets, protocol.InfiniteUpperBound)
		r2, _ := mem.FingerprintRanges(ctx, owner, buckets, protocol.InfiniteUpperBound)
		if err != nil || len(r1) != len(r2) {
			t.Fatalf("FingerprintRanges: %v", err)
		}
		for i := range r1 {
			if r1[i].Fingerprint != r2[i].Fingerprint || r1[i].UpperBound != r2[i].UpperBound {
				t.Fatalf("FingerprintRanges[%d] differs", i)
			}
		}
	}
}

func TestQuotaStoresNothing(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{WithinQuota: func(_ protocol.OwnerID, n int64) bool { return n <= 10 }})
	owner := protocol.OwnerID{3}
	msg := func(ms uint64, n int) protocol.EncryptedMessage {
		return protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: ms}, Change: make([]byte, n)}
	}
	if err := s.WriteMessages(ctx, owner, []protocol.EncryptedMessage{msg(1, 6)}); err != nil {
		t.Fatal(err)
	}
	err := s.WriteMessages(ctx, owner, []protocol.EncryptedMessage{msg(2, 2), msg(3, 3)})
	var q *protocol.QuotaExceededError
	if !errors.As(err, &q) {
		t.Fatalf("err = %v", err)
	}
	if n, _ := s.Size(ctx, owner); n != 1 {
		t.Fatalf("size %d after rejected batch", n)
	}
	// A duplicate costs nothing.
	if err := s.WriteMessages(ctx, owner, []protocol.EncryptedMessage{msg(1, 6), msg(2, 4)}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Size(ctx, owner); n != 2 {
		t.Fatalf("size %d", n)
	}
}

func TestWriteKey(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	owner := protocol.OwnerID{4}
	k1, k2 := protocol.WriteKey{1}, protocol.WriteKey{2}
	if ok, err := s.ValidateWriteKey(ctx, owner, k1); !ok || err != nil {
		t.Fatalf("first key: %v %v", ok, err)
	}
	if ok, _ := s.ValidateWriteKey(ctx, owner, k2); ok {
		t.Fatal("second key accepted")
	}
	if ok, _ := s.ValidateWriteKey(ctx, owner, k1); !ok {
		t.Fatal("first key rejected later")
	}
}

// TestVectorsRBSR replays the real @evolu/common transcripts over SQLite.
func TestVectorsRBSR(t *testing.T) {
	vectors.ReplayRBSR(t, func(t *testing.T) protocol.RelayStorage { return openTest(t, Config{}) })
}

// TestPropertyConvergenceSQLite: a SQLite client and a SQLite relay of
// random timestamp sets converge to their union under random limits.
func TestPropertyConvergenceSQLite(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 5))
		o := synctest.GenOpts{N: 100 + r.IntN(3000), Common: r.IntN(90), MinSize: 41, MaxSize: 41 + r.IntN(2000)}
		totalMax := protocol.MinMaxSize + r.IntN(2)*r.IntN(protocol.MinMaxSize)
		rangesMax := protocol.MinRangesMaxSize + r.IntN(protocol.MaxRangesMaxSize-protocol.MinRangesMaxSize)
		t.Run(fmt.Sprintf("seed%d_n%d_ranges%d", seed, o.N, rangesMax), func(t *testing.T) {
			owner := protocol.OwnerID{byte(seed)}
			client, relay := openTest(t, Config{}), openTest(t, Config{})
			union := synctest.Fill(t, r, client, relay, owner, o)
			synctest.Session(t, client, relay, owner, protocol.WriteKey{1}, totalMax, rangesMax, protocol.MinRangesMaxSize+r.IntN(protocol.MaxRangesMaxSize-protocol.MinRangesMaxSize))
			synctest.CheckUnion(t, "client", client, owner, union, relay)
			synctest.CheckUnion(t, "relay", relay, owner, union, client)
		})
	}
}

// TestEvictedIndexesReload: with room for few owner indexes, many owners
// still answer correctly (their indexes are reloaded from evolu_block).
func TestEvictedIndexesReload(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	s.maxOwners = 5
	mem := protocol.NewMemoryStorage()
	r := rand.New(rand.NewPCG(4, 4))
	for range 3 {
		for i := range 20 {
			o := protocol.OwnerID{byte(i)}
			batch := randomBatch(r, 50+r.IntN(200))
			if err := s.WriteMessages(ctx, o, batch); err != nil {
				t.Fatal(err)
			}
			_ = mem.WriteMessages(ctx, o, batch)
		}
	}
	if len(s.owners) > 5 {
		t.Fatalf("%d indexes cached", len(s.owners))
	}
	for i := range 20 {
		compare(t, ctx, r, s, mem, protocol.OwnerID{byte(i)})
	}
}

// TestRowCacheEvicts checks that the block-row cache keeps at most its
// capacity, least recently used first out, and forgets dropped blocks.
func TestRowCacheEvicts(t *testing.T) {
	c := newRowCache(2)
	key := func(i byte) blockKey { return blockKey{owner: protocol.OwnerID{1}, start: protocol.TimestampBytes{i}} }
	rows := &blockRows{}
	c.put(key(1), rows)
	c.put(key(2), rows)
	c.get(key(1)) // 2 is now the least recently used
	c.put(key(3), rows)
	if c.get(key(2)) != nil || c.get(key(1)) == nil || c.get(key(3)) == nil {
		t.Fatal("cache did not evict the least recently used block")
	}
	c.drop(protocol.OwnerID{1}, []protocol.TimestampBytes{key(1).start})
	if c.get(key(1)) != nil || c.get(key(3)) == nil || c.order.Len() != 1 {
		t.Fatal("drop did not forget exactly the dropped block")
	}
}

// TestRowCacheTinyMatchesMemoryStorage runs the reference comparison with a
// cache of one block, so rows are evicted and reread all the time.
func TestRowCacheTinyMatchesMemoryStorage(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(2, 2))
	s := openTest(t, Config{})
	s.rows = newRowCache(1)
	mem := protocol.NewMemoryStorage()
	owner := protocol.OwnerID{1}
	for range 8 {
		batch := randomBatch(r, 1+r.IntN(400))
		if err := s.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		compare(t, ctx, r, s, mem, owner)
	}
}

// TestReadChangeSizes reads changes of every size class of the read-ahead
// (empty, small, over aheadOne, over aheadBytes), in order and out of order.
func TestReadChangeSizes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	owner := protocol.OwnerID{7}
	sizes := []int{0, 10, aheadOne + 1, 5, aheadBytes + 1, 0, aheadOne, 100, aheadOne + 2, 1}
	for i := range 300 {
		sizes = append(sizes, 1000+i)
	}
	var msgs []protocol.EncryptedMessage
	for i, n := range sizes {
		c := make([]byte, n)
		for j := range c {
			c[j] = byte(i + j)
		}
		msgs = append(msgs, protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1000 + i)}, Change: c})
	}
	if err := s.WriteMessages(ctx, owner, msgs); err != nil {
		t.Fatal(err)
	}
	check := func(i int) {
		t.Helper()
		got, err := s.ReadChange(ctx, owner, msgs[i].Timestamp.Bytes())
		if err != nil || string(got) != string(msgs[i].Change) {
			t.Fatalf("ReadChange(%d) = %d bytes, %v; want %d bytes", i, len(got), err, len(msgs[i].Change))
		}
	}
	for i := range msgs {
		check(i)
	}
	for _, i := range rand.New(rand.NewPCG(3, 3)).Perm(len(msgs)) {
		check(i)
	}
	if _, err := s.ReadChange(ctx, owner, protocol.Timestamp{Millis: 1}.Bytes()); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("ReadChange of a missing timestamp: %v, want sql.ErrNoRows", err)
	}
}

// TestBlockRowsFallback checks that blocks without packed rows (a database
// written before evolu_block_rows) or with packed rows of the wrong size
// are read from evolu_ts, and that a later write packs them again.
func TestBlockRowsFallback(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 4))
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(ctx, path, Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	mem := protocol.NewMemoryStorage()
	owner := protocol.OwnerID{1}
	write := func() {
		batch := randomBatch(r, 1+r.IntN(400))
		if err := s.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
	}
	reopen := func(damage string) {
		if damage != "" {
			if _, err := s.DB().ExecContext(ctx, damage); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if s, err = Open(ctx, path, Config{}, ""); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		write()
	}
	reopen(`delete from evolu_block_rows`)
	compare(t, ctx, r, s, mem, owner)
	write()
	reopen(`update evolu_block_rows set rows = substr(rows, 1, length(rows) - 28)`)
	compare(t, ctx, r, s, mem, owner)
	write()
	reopen("")
	compare(t, ctx, r, s, mem, owner)
	var packed, blocks int
	if err := s.DB().QueryRowContext(ctx, `select (select count(*) from evolu_block_rows), (select count(*) from evolu_block)`).Scan(&packed, &blocks); err != nil {
		t.Fatal(err)
	}
	if packed == 0 || packed > blocks {
		t.Fatalf("%d packed block rows for %d blocks", packed, blocks)
	}
	s.Close()
}
