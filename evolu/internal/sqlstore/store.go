// Package sqlstore is the SQLite storage shared by the Evolu relay and
// client: an owner's timestamps, their encrypted changes, and a persisted
// block index that answers the range fingerprints and index lookups of
// reconciliation without scanning the owner's history
// (docs/decisions/evolu-fingerprint-index.md).
//
// # Block index
//
// Each owner's timestamps, in byte order, are cut into consecutive blocks of
// at most maxBlock timestamps. A block row (evolu_block) keeps the block's
// first timestamp, its size, and the XOR of its timestamps' fingerprints.
// The blocks of an owner are loaded once (N/maxBlock rows) and kept in
// memory with prefix sums of sizes and fingerprints. A block's rows (its
// timestamps and their fingerprints) are also stored packed in one value
// (evolu_block_rows) and the most recently used blocks' rows are cached in
// memory (docs/decisions/evolu-block-row-cache.md), so
//
//   - Size is a sum,
//   - the fingerprint of [0, i) is a prefix XOR plus a prefix XOR inside
//     one block,
//   - the timestamp at an index and the index of a timestamp are lookups in
//     one block,
//
// each reading at most one row. Inserting a timestamp updates one block,
// splitting it in two when it outgrows maxBlock. Writes run in one
// transaction per batch; the in-memory index is replaced only after commit.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"

	"github.com/ferry-sync/ferry/evolu/protocol"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

var _ protocol.RelayStorage = (*Store)(nil)

// maxBlock is the largest block; a larger one is split in two halves.
const maxBlock = 128

// maxConns bounds the connection pool.
const maxConns = 4

// chunk is how many timestamps Iterate reads per query.
const chunk = 512

const schema = `
create table if not exists evolu_ts (
  owner blob not null, t blob not null, fp blob not null,
  primary key (owner, t)) without rowid;
create table if not exists evolu_block (
  owner blob not null, start blob not null, n integer not null, fp blob not null,
  primary key (owner, start)) without rowid;
create table if not exists evolu_block_rows (
  owner blob not null, start blob not null, rows blob not null,
  primary key (owner, start)) without rowid;
create table if not exists evolu_change (
  owner blob not null, t blob not null, change blob not null,
  primary key (owner, t)) without rowid;
create table if not exists evolu_owner (
  owner blob primary key, write_key blob, stored_bytes integer not null default 0
) without rowid;
`

// Config configures a Store.
type Config struct {
	// WithinQuota reports whether owner may store storedBytes bytes of
	// changes in total. Nil allows everything.
	WithinQuota func(owner protocol.OwnerID, storedBytes int64) bool
}

// Store is a protocol.RelayStorage backed by SQLite.
type Store struct {
	db  *sql.DB
	cfg Config

	writeMu sync.Mutex // serializes write transactions

	mu     sync.Mutex
	owners map[protocol.OwnerID]*ownerIndex
	stmts  map[string]*sql.Stmt
	rows   *rowCache
	// maxOwners overrides maxCachedOwners in tests.
	maxOwners int
}

// Open opens (creating if needed) the SQLite database at path. extraSchema
// is executed after the store's own schema.
func Open(ctx context.Context, path string, cfg Config, extraSchema string) (*Store, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=mmap_size(268435456)&_pragma=cache_size(-16000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	// A few connections serve many goroutines better than one per
	// goroutine: each SQLite connection has its own cache and setup cost.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if _, err := db.ExecContext(ctx, schema+extraSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: schema: %w", err)
	}
	return &Store{db: db, cfg: cfg, owners: make(map[protocol.OwnerID]*ownerIndex), stmts: make(map[string]*sql.Stmt),
		rows: newRowCache(maxCachedBlocks)}, nil
}

// DB is the underlying database, for the client's own tables.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	return s.db.Close()
}

// Stmt returns q prepared once for the store's lifetime; SQLite statement
// preparation costs more than most of the store's queries.
func (s *Store) Stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	st := s.stmts[q]
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: prepare: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stmts == nil {
		st.Close()
		return nil, errors.New("sqlstore: closed")
	}
	if prev := s.stmts[q]; prev != nil {
		st.Close()
		return prev, nil
	}
	s.stmts[q] = st
	return st, nil
}

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.Stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// scanRow runs a one-row query into dest.
func (s *Store) scanRow(ctx context.Context, q string, args []any, dest ...any) error {
	st, err := s.Stmt(ctx, q)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// TxStmt returns q prepared once, bound to tx.
func (s *Store) TxStmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	st, err := s.Stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

type block struct {
	start protocol.TimestampBytes
	n     int
	fp    protocol.Fingerprint
}

// ownerIndex is the in-memory block index of one owner; mu guards it and
// orders the owner's reads and writes.
type ownerIndex struct {
	mu       sync.Mutex
	loaded   bool
	blocks   []block
	prefixN  []int                  // prefixN[k]: timestamps before block k
	prefixFP []protocol.Fingerprint // prefixFP[k]: XOR of blocks before k
	// ahead holds the changes read ahead of the last ReadChange miss:
	// reconciliation reads changes in timestamp order. Stored changes never
	// change, so the cache is never stale.
	ahead map[protocol.TimestampBytes][]byte
	// max is the owner's greatest timestamp (valid when size() > 0).
	max protocol.TimestampBytes
	// evicted is set, under mu, when the index left Store.owners.
	evicted bool
}

// maxCachedOwners bounds how many owners' indexes stay in memory.
const maxCachedOwners = 10_000

// evictLocked drops idle indexes (other than keep) once more than
// maxCachedOwners are cached, down to 90% of it; they are reloaded from
// evolu_block when needed. s.mu is held.
func (s *Store) evictLocked(keep *ownerIndex) {
	limit := s.maxOwners
	if limit == 0 {
		limit = maxCachedOwners
	}
	if len(s.owners) <= limit {
		return
	}
	for o, x := range s.owners {
		if len(s.owners) <= limit*9/10 {
			return
		}
		if x == keep || !x.mu.TryLock() {
			continue
		}
		x.evicted = true
		delete(s.owners, o)
		x.mu.Unlock()
	}
}

func (x *ownerIndex) rebuild() {
	x.prefixN = make([]int, len(x.blocks)+1)
	x.prefixFP = make([]protocol.Fingerprint, len(x.blocks)+1)
	for k, b := range x.blocks {
		x.prefixN[k+1] = x.prefixN[k] + b.n
		x.prefixFP[k+1] = x.prefixFP[k].Xor(b.fp)
	}
}

func (x *ownerIndex) size() int { return x.prefixN[len(x.blocks)] }

// locate returns the block holding index i and i's offset in it; for
// i == size it returns the last block and its size.
func (x *ownerIndex) locate(i int) (int, int) {
	k := sort.Search(len(x.blocks), func(k int) bool { return x.prefixN[k+1] > i })
	if k == len(x.blocks) {
		k--
	}
	return k, i - x.prefixN[k]
}

// index returns the loaded index of owner, locked; the caller unlocks.
func (s *Store) index(ctx context.Context, owner protocol.OwnerID) (*ownerIndex, error) {
	var x *ownerIndex
	for {
		s.mu.Lock()
		x = s.owners[owner]
		if x == nil {
			x = &ownerIndex{}
			s.owners[owner] = x
			s.evictLocked(x)
		}
		s.mu.Unlock()
		x.mu.Lock()
		if !x.evicted {
			break
		}
		x.mu.Unlock() // evicted between lookup and lock: look up again
	}
	if x.loaded {
		return x, nil
	}
	rows, err := s.query(ctx, `select start, n, fp from evolu_block where owner = ? order by start`, owner[:])
	if err != nil {
		x.mu.Unlock()
		return nil, fmt.Errorf("sqlstore: load index: %w", err)
	}
	defer rows.Close()
	x.blocks = x.blocks[:0]
	for rows.Next() {
		var b block
		var start, fp []byte
		if err := rows.Scan(&start, &b.n, &fp); err != nil {
			x.mu.Unlock()
			return nil, fmt.Errorf("sqlstore: load index: %w", err)
		}
		copy(b.start[:], start)
		copy(b.fp[:], fp)
		x.blocks = append(x.blocks, b)
	}
	if err := rows.Err(); err != nil {
		x.mu.Unlock()
		return nil, fmt.Errorf("sqlstore: load index: %w", err)
	}
	x.rebuild()
	if len(x.blocks) > 0 {
		var raw []byte
		if err := s.scanRow(ctx, `select max(t) from evolu_ts where owner = ?`, []any{owner[:]}, &raw); err != nil {
			x.mu.Unlock()
			return nil, fmt.Errorf("sqlstore: load index: %w", err)
		}
		copy(x.max[:], raw)
	}
	x.loaded = true
	return x, nil
}
