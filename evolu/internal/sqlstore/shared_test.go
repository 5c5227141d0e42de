package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

func mustOpen(t *testing.T, path string, cfg Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// appendBatch is n messages after every earlier one of the same node.
func appendBatch(node byte, from, n int) []protocol.EncryptedMessage {
	msgs := make([]protocol.EncryptedMessage, n)
	for i := range msgs {
		msgs[i] = protocol.EncryptedMessage{
			Timestamp: protocol.Timestamp{Millis: uint64(1000 + from + i), NodeID: protocol.NodeID{node}},
			Change:    []byte{node, byte(i)},
		}
	}
	return msgs
}

// TestExclusiveLock: a second exclusive store on one file (a second relay
// process) is refused while the first is open, and allowed after.
func TestExclusiveLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relay.db")
	a, err := Open(ctx, path, Config{Exclusive: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, path, Config{Exclusive: true}, ""); !errors.Is(err, ErrLocked) {
		t.Fatalf("second exclusive open: %v, want ErrLocked", err)
	}
	a.Close()
	b, err := Open(ctx, path, Config{Exclusive: true}, "")
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	b.Close()
}

// TestSharedStoresAgree: two non-exclusive stores on one file (two client
// processes) see each other's writes before answering, and writes through
// both leave an index that matches the rows (issue 16: 600 changes written
// through one were served as 300 by the other).
func TestSharedStoresAgree(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "client.db")
	a := mustOpen(t, path, Config{})
	b := mustOpen(t, path, Config{})
	owner := protocol.OwnerID{7}
	mem := protocol.NewMemoryStorage()
	write := func(s *Store, msgs []protocol.EncryptedMessage) {
		t.Helper()
		if err := s.WriteMessages(ctx, owner, msgs); err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteMessages(ctx, owner, msgs); err != nil {
			t.Fatal(err)
		}
	}
	write(a, appendBatch(1, 0, 300))
	if n, err := b.Size(ctx, owner); err != nil || n != 300 {
		t.Fatalf("b sees %d, %v; want 300", n, err)
	}
	write(a, appendBatch(1, 300, 300))
	if n, err := b.Size(ctx, owner); err != nil || n != 600 {
		t.Fatalf("b sees %d, %v; want 600", n, err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		write(s, randomBatch(r, 1+r.IntN(300)))
	}
	compare(t, ctx, r, a, mem, owner)
	compare(t, ctx, r, b, mem, owner)
	rebuilt, err := a.Verify(ctx)
	if err != nil || len(rebuilt) != 0 {
		t.Fatalf("Verify rebuilt %v, %v: the index written through two stores does not match the rows", rebuilt, err)
	}
}

// TestDamagedIndexRebuiltOnOpen: an index that does not match the rows (as
// two relay processes of an earlier build left it) is rebuilt when an
// exclusive store opens a database it did not close cleanly, and the owner
// is answered correctly afterwards (issue 16: "iterate: index 771 missing"
// for good after a restart).
func TestDamagedIndexRebuiltOnOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relay.db")
	owner := protocol.OwnerID{3}
	mem := protocol.NewMemoryStorage()
	r := rand.New(rand.NewPCG(5, 5))
	s, err := Open(ctx, path, Config{Exclusive: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		batch := randomBatch(r, 300)
		if err := s.WriteMessages(ctx, owner, batch); err != nil {
			t.Fatal(err)
		}
		mem.WriteMessages(ctx, owner, batch)
	}
	for _, damage := range []string{
		`update evolu_block set n = n - 1 where start = (select min(start) from evolu_block)`,
		`delete from evolu_block where start = (select max(start) from evolu_block)`,
		`update evolu_block_rows set rows = (select rows from evolu_block_rows order by start limit 1)`,
	} {
		if _, err := s.DB().ExecContext(ctx, damage); err != nil {
			t.Fatal(err)
		}
		s.db.Close() // a crash: not marked clean
		s.lock.Close()
		if s, err = Open(ctx, path, Config{Exclusive: true}, ""); err != nil {
			t.Fatal(err)
		}
		compare(t, ctx, r, s, mem, owner)
	}
	s.Close()
}

// TestDamagedIndexRepairedAtRuntime: a query that finds a block not
// matching its rows fails once with ErrIndexDamaged, and the rebuilt index
// answers the next ones.
func TestDamagedIndexRepairedAtRuntime(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relay.db")
	s := mustOpen(t, path, Config{Exclusive: true})
	owner := protocol.OwnerID{4}
	mem := protocol.NewMemoryStorage()
	batch := appendBatch(1, 0, 1000)
	if err := s.WriteMessages(ctx, owner, batch); err != nil {
		t.Fatal(err)
	}
	mem.WriteMessages(ctx, owner, batch)
	// An index that counts 100 rows more than there are, and no packed
	// rows: the rows of the last block fall short.
	if _, err := s.DB().ExecContext(ctx, `delete from evolu_block_rows; update evolu_block set n = n + 100 where start = (select max(start) from evolu_block)`); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.owners = map[protocol.OwnerID]*ownerIndex{}
	s.mu.Unlock()
	s.rows.dropOwner(owner)
	err := s.Iterate(ctx, owner, 0, 1100, func(protocol.TimestampBytes, int) bool { return true })
	if !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("Iterate over a damaged index: %v, want ErrIndexDamaged", err)
	}
	compare(t, ctx, rand.New(rand.NewPCG(1, 2)), s, mem, owner)
}

// TestKindStamp: a relay refuses a client database and the other way
// round; a missing file is refused with MustExist; another program's
// database is refused.
func TestKindStamp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	relayDB, clientDB := filepath.Join(dir, "relay.db"), filepath.Join(dir, "client.db")
	mustOpen(t, relayDB, Config{Kind: KindRelay}).Close()
	c, err := Open(ctx, clientDB, Config{Kind: KindClient}, "create table if not exists evolu_row (x)")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Open(ctx, relayDB, Config{Kind: KindClient}, ""); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("client on a relay database: %v", err)
	}
	if _, err := Open(ctx, clientDB, Config{Kind: KindRelay}, ""); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("relay on a client database: %v", err)
	}
	if _, err := Open(ctx, filepath.Join(dir, "typo.db"), Config{Kind: KindClient, MustExist: true}, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing database: %v", err)
	}
	other := filepath.Join(dir, "other.db")
	o := mustOpen(t, other, Config{})
	if _, err := o.DB().ExecContext(ctx, `pragma application_id = 7`); err != nil {
		t.Fatal(err)
	}
	o.Close()
	if _, err := Open(ctx, other, Config{}, ""); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("another program's database: %v", err)
	}
}

// TestMigrateEarlierSchema: a relay database of an earlier build (no
// stamp, fingerprints in evolu_ts, no owner generation, no block index) is
// migrated and its index rebuilt on open; one change whose evolu_ts row was
// missing gets its fingerprint computed.
func TestMigrateEarlierSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `
create table evolu_ts (owner blob not null, t blob not null, fp blob not null, primary key (owner, t)) without rowid;
create table evolu_block (owner blob not null, start blob not null, n integer not null, fp blob not null, primary key (owner, start)) without rowid;
create table evolu_change (owner blob not null, t blob not null, change blob not null, primary key (owner, t)) without rowid;
create table evolu_owner (owner blob primary key, write_key blob, stored_bytes integer not null default 0) without rowid;`); err != nil {
		t.Fatal(err)
	}
	owner := protocol.OwnerID{8}
	mem := protocol.NewMemoryStorage()
	msgs := randomBatch(rand.New(rand.NewPCG(8, 8)), 700)
	mem.WriteMessages(ctx, owner, msgs)
	for i, m := range msgs {
		ts := m.Timestamp.Bytes()
		fp := protocol.TimestampFingerprint(ts)
		if _, err := db.ExecContext(ctx, `insert or ignore into evolu_change values (?, ?, ?)`, owner[:], ts[:], m.Change); err != nil {
			t.Fatal(err)
		}
		if i != 5 { // one change without its evolu_ts row
			db.ExecContext(ctx, `insert or ignore into evolu_ts values (?, ?, ?)`, owner[:], ts[:], fp[:])
		}
	}
	db.Close()
	s := mustOpen(t, path, Config{Exclusive: true})
	compare(t, ctx, rand.New(rand.NewPCG(2, 2)), s, mem, owner)
	var tables int
	if err := s.DB().QueryRowContext(ctx, `select count(*) from sqlite_schema where name = 'evolu_ts'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("evolu_ts still there: %d %v", tables, err)
	}
	if err := s.WriteMessages(ctx, owner, randomBatch(rand.New(rand.NewPCG(9, 1)), 50)); err != nil {
		t.Fatalf("write after migration: %v", err)
	}
}
