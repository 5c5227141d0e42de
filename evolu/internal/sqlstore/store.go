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
	"os"
	"sort"
	"sync"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"

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
create table if not exists evolu_block (
  owner blob not null, start blob not null, n integer not null, fp blob not null,
  primary key (owner, start)) without rowid;
create table if not exists evolu_block_rows (
  owner blob not null, start blob not null, rows blob not null,
  primary key (owner, start)) without rowid;
create table if not exists evolu_change (
  owner blob not null, t blob not null, fp blob not null, change blob not null,
  primary key (owner, t)) without rowid;
create table if not exists evolu_owner (
  owner blob primary key, write_key blob, stored_bytes integer not null default 0,
  gen integer not null default 0
) without rowid;
create table if not exists evolu_meta (k text primary key, v integer not null) without rowid;
`

// Config configures a Store.
type Config struct {
	// WithinQuota reports whether owner may store storedBytes bytes of
	// changes in total. Nil allows everything.
	WithinQuota func(owner protocol.OwnerID, storedBytes int64) bool
	// Kind is stamped into a new database and checked in an existing one.
	Kind Kind
	// Exclusive takes a lock on the database file for the Store's lifetime
	// (Open fails with a *LockedError while another process holds it), and
	// then trusts the in-memory index between its own writes. Without it,
	// every query first checks the owner's generation, so writes by other
	// processes are seen (docs/decisions/evolu-shared-database.md).
	Exclusive bool
	// MustExist makes Open fail with an error matching fs.ErrNotExist
	// instead of creating a missing database.
	MustExist bool
}

// Store is a protocol.RelayStorage backed by SQLite.
type Store struct {
	db   *sql.DB
	cfg  Config
	lock *os.File // the exclusive lock, when Config.Exclusive
	pg   bool     // the database is Postgres (OpenPostgres)

	writeMu sync.Mutex // serializes write transactions

	mu     sync.Mutex
	owners map[protocol.OwnerID]*ownerIndex
	stmts  map[string]*sql.Stmt
	rows   *rowCache
	// maxOwners overrides maxCachedOwners in tests.
	maxOwners int
}

// Open opens (creating if needed) the SQLite database at path. extraSchema
// is executed after the store's own schema. A database of another Kind is
// refused with a *WrongKindError. The block index of a database that was
// not closed cleanly by an exclusive Store, or that an earlier build wrote,
// is checked against its rows and rebuilt where it does not match.
func Open(ctx context.Context, path string, cfg Config, extraSchema string) (*Store, error) {
	if cfg.MustExist {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("sqlstore: %w", err)
		}
	}
	var lock *os.File
	if cfg.Exclusive {
		var err error
		if lock, err = lockFile(path); err != nil {
			return nil, err
		}
	}
	s, err := open(ctx, path, cfg, extraSchema)
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	s.lock = lock
	return s, nil
}

func open(ctx context.Context, path string, cfg Config, extraSchema string) (*Store, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=mmap_size(0)&_pragma=cache_size(-4000)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	// A few connections serve many goroutines better than one per
	// goroutine: each SQLite connection has its own cache and setup cost.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	s := &Store{db: db, cfg: cfg, owners: make(map[protocol.OwnerID]*ownerIndex), stmts: make(map[string]*sql.Stmt),
		rows: newRowCache(maxCachedBlocks)}
	if err := s.prepare(ctx, path, extraSchema); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// prepare checks the stamp, creates and migrates the schema, and verifies
// the index when it may not match the rows.
func (s *Store) prepare(ctx context.Context, path, extraSchema string) error {
	legacy, err := stamp(ctx, s.db, path, s.cfg.Kind)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, schema+extraSchema); err != nil {
		return fmt.Errorf("sqlstore: schema: %w", err)
	}
	if err := migrate(ctx, s.db); err != nil {
		return err
	}
	verify := legacy
	if s.cfg.Exclusive {
		clean, err := isClean(ctx, s.db)
		if err != nil {
			return fmt.Errorf("sqlstore: %w", err)
		}
		verify = verify || !clean
		if err := setClean(ctx, s.db, false); err != nil {
			return fmt.Errorf("sqlstore: %w", err)
		}
	}
	if !verify {
		return nil
	}
	if _, err := s.Verify(ctx); err != nil {
		return err
	}
	return nil
}

// DB is the underlying database, for the client's own tables.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database (marking it closed cleanly when exclusive)
// and releases the lock.
func (s *Store) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	var err error
	if s.lock != nil {
		err = setClean(context.Background(), s.db, true)
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if s.lock != nil {
		s.lock.Close() // after SQLite closed its own descriptors
	}
	return err
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
	st, err := s.db.PrepareContext(ctx, s.rebind(q))
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
	// gen is the owner's generation (evolu_owner.gen) the index reflects;
	// every write transaction of the owner increments it.
	gen int64
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
// A store that is not exclusive first checks the owner's generation and
// reloads the index when another process wrote.
func (s *Store) index(ctx context.Context, owner protocol.OwnerID) (*ownerIndex, error) {
	return s.indexChecked(ctx, owner, !s.cfg.Exclusive)
}

func (s *Store) indexChecked(ctx context.Context, owner protocol.OwnerID, check bool) (*ownerIndex, error) {
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
	if x.loaded && check {
		gen, err := s.ownerGen(ctx, s.db, owner)
		if err != nil {
			x.mu.Unlock()
			return nil, err
		}
		if gen != x.gen {
			s.forget(owner, x)
		}
	}
	if x.loaded {
		return x, nil
	}
	if err := s.load(ctx, owner, x); err != nil {
		x.mu.Unlock()
		return nil, err
	}
	return x, nil
}

// Refresh makes the next queries about owner reflect what the database
// holds now: it reloads the owner's index if another process wrote since it
// was loaded, and reports whether it did. An exclusive store need not call
// it.
func (s *Store) Refresh(ctx context.Context, owner protocol.OwnerID) (bool, error) {
	s.mu.Lock()
	x := s.owners[owner]
	s.mu.Unlock()
	var before int64 = -1
	if x != nil {
		x.mu.Lock()
		if x.loaded && !x.evicted {
			before = x.gen
		}
		x.mu.Unlock()
	}
	x, err := s.indexChecked(ctx, owner, true)
	if err != nil {
		return false, err
	}
	defer x.mu.Unlock()
	return before >= 0 && x.gen != before, nil
}

// forget drops the loaded index x of owner (x.mu held) and the cached rows
// of its blocks, so that they are read again.
func (s *Store) forget(owner protocol.OwnerID, x *ownerIndex) {
	starts := make([]protocol.TimestampBytes, len(x.blocks))
	for k, b := range x.blocks {
		starts[k] = b.start
	}
	s.rows.drop(owner, starts)
	x.loaded = false
	x.ahead = nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func (s *Store) ownerGen(ctx context.Context, q querier, owner protocol.OwnerID) (int64, error) {
	var gen int64
	const sel = `select gen from evolu_owner where owner = ?`
	var err error
	if q == querier(s.db) {
		err = s.scanRow(ctx, sel, []any{owner[:]}, &gen)
	} else {
		err = q.QueryRowContext(ctx, s.rebind(sel), owner[:]).Scan(&gen)
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlstore: owner generation: %w", err)
	}
	return gen, nil
}

// load reads the index of owner into x (x.mu held) in one read
// transaction, so that the blocks, the greatest timestamp and the
// generation agree.
func (s *Store) load(ctx context.Context, owner protocol.OwnerID, x *ownerIndex) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg {
		opts.Isolation = sql.LevelRepeatableRead // one snapshot, as SQLite's read transaction
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("sqlstore: load index: %w", err)
	}
	defer tx.Rollback()
	return s.loadTx(ctx, tx, owner, x)
}

// loadTx is load inside tx.
func (s *Store) loadTx(ctx context.Context, q querier, owner protocol.OwnerID, x *ownerIndex) error {
	gen, err := s.ownerGen(ctx, q, owner)
	if err != nil {
		return err
	}
	rows, err := q.QueryContext(ctx, s.rebind(`select start, n, fp from evolu_block where owner = ? order by start`), owner[:])
	if err != nil {
		return fmt.Errorf("sqlstore: load index: %w", err)
	}
	defer rows.Close()
	x.blocks = x.blocks[:0]
	for rows.Next() {
		var b block
		var start, fp []byte
		if err := rows.Scan(&start, &b.n, &fp); err != nil {
			return fmt.Errorf("sqlstore: load index: %w", err)
		}
		copy(b.start[:], start)
		copy(b.fp[:], fp)
		x.blocks = append(x.blocks, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: load index: %w", err)
	}
	rows.Close()
	x.rebuild()
	x.max = protocol.TimestampBytes{}
	if len(x.blocks) > 0 {
		var raw []byte
		if err := q.QueryRowContext(ctx, s.rebind(`select t from evolu_change where owner = ? order by t desc limit 1`), owner[:]).Scan(&raw); err != nil {
			return fmt.Errorf("sqlstore: load index: %w", err)
		}
		copy(x.max[:], raw)
	}
	x.gen = gen
	x.ahead = nil
	x.loaded = true
	return nil
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, s.rebind(`select 1`)).Scan(&one); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	return nil
}
