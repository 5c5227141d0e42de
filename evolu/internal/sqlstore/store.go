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
// memory with prefix sums of sizes and fingerprints, so
//
//   - Size is a sum,
//   - the fingerprint of [0, i) is a prefix XOR plus at most maxBlock/2
//     stored per-row fingerprints (evolu_ts.fp) read from one block,
//   - the index of a timestamp is a prefix count plus a count inside one
//     block,
//
// and inserting a timestamp updates one block, splitting it in two when it
// outgrows maxBlock. Writes run in one transaction per batch; the in-memory
// index is replaced only after commit.
package sqlstore

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"

	"github.com/ferry-sync/ferry/evolu/protocol"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

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
	return &Store{db: db, cfg: cfg, owners: make(map[protocol.OwnerID]*ownerIndex), stmts: make(map[string]*sql.Stmt)}, nil
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
	s.mu.Lock()
	x := s.owners[owner]
	if x == nil {
		x = &ownerIndex{}
		s.owners[owner] = x
	}
	s.mu.Unlock()
	x.mu.Lock()
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

func checkRange(begin, end, size int) error {
	if begin < 0 || begin > end || end > size {
		return fmt.Errorf("sqlstore: invalid range [%d, %d) of %d", begin, end, size)
	}
	return nil
}

// Size implements protocol.Storage.
func (s *Store) Size(ctx context.Context, owner protocol.OwnerID) (int, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return 0, err
	}
	defer x.mu.Unlock()
	return x.size(), nil
}

// prefixFP is the XOR of the fingerprints of timestamps [0, i).
func (s *Store) prefixFP(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, i int) (protocol.Fingerprint, error) {
	var fp protocol.Fingerprint
	if i == 0 {
		return fp, nil
	}
	k, off := x.locate(i)
	b := x.blocks[k]
	switch {
	case off == 0:
		return x.prefixFP[k], nil
	case off == b.n:
		return x.prefixFP[k+1], nil
	case off <= b.n/2:
		part, err := s.xorRows(ctx, `select fp from evolu_ts where owner = ? and t >= ? order by t limit ?`, owner[:], b.start[:], off)
		return x.prefixFP[k].Xor(part), err
	case k+1 < len(x.blocks):
		// Fewer rows from the block's end: XOR them out of the block.
		part, err := s.xorRows(ctx, `select fp from evolu_ts where owner = ? and t >= ? and t < ? order by t desc limit ?`,
			owner[:], b.start[:], x.blocks[k+1].start[:], b.n-off)
		return x.prefixFP[k+1].Xor(part), err
	default:
		part, err := s.xorRows(ctx, `select fp from evolu_ts where owner = ? and t >= ? order by t desc limit ?`, owner[:], b.start[:], b.n-off)
		return x.prefixFP[k+1].Xor(part), err
	}
}

func (s *Store) xorRows(ctx context.Context, q string, args ...any) (protocol.Fingerprint, error) {
	var acc protocol.Fingerprint
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return acc, fmt.Errorf("sqlstore: fingerprint: %w", err)
	}
	defer rows.Close()
	var fp []byte
	for rows.Next() {
		if err := rows.Scan(&fp); err != nil {
			return acc, fmt.Errorf("sqlstore: fingerprint: %w", err)
		}
		var f protocol.Fingerprint
		copy(f[:], fp)
		acc = acc.Xor(f)
	}
	return acc, rows.Err()
}

// Fingerprint implements protocol.Storage.
func (s *Store) Fingerprint(ctx context.Context, owner protocol.OwnerID, begin, end int) (protocol.Fingerprint, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return protocol.Fingerprint{}, err
	}
	defer x.mu.Unlock()
	return s.fingerprint(ctx, owner, x, begin, end)
}

func (s *Store) fingerprint(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, begin, end int) (protocol.Fingerprint, error) {
	if err := checkRange(begin, end, x.size()); err != nil {
		return protocol.Fingerprint{}, err
	}
	if begin == end {
		return protocol.Fingerprint{}, nil
	}
	a, err := s.prefixFP(ctx, owner, x, begin)
	if err != nil {
		return a, err
	}
	b, err := s.prefixFP(ctx, owner, x, end)
	return a.Xor(b), err
}

// timestampAt reads the timestamp at index i < size.
func (s *Store) timestampAt(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, i int) (protocol.TimestampBytes, error) {
	var t protocol.TimestampBytes
	k, off := x.locate(i)
	var raw []byte
	err := s.scanRow(ctx, `select t from evolu_ts where owner = ? and t >= ? order by t limit 1 offset ?`, []any{owner[:], x.blocks[k].start[:], off}, &raw)
	if err != nil {
		return t, fmt.Errorf("sqlstore: timestamp at %d: %w", i, err)
	}
	copy(t[:], raw)
	return t, nil
}

// FingerprintRanges implements protocol.Storage.
func (s *Store) FingerprintRanges(ctx context.Context, owner protocol.OwnerID, buckets []int, ub protocol.UpperBound) ([]protocol.Range, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	rs := make([]protocol.Range, len(buckets))
	prev := 0
	prevFP := protocol.Fingerprint{}
	for i, b := range buckets {
		if err := checkRange(prev, b, x.size()); err != nil {
			return nil, err
		}
		fp, err := s.prefixFP(ctx, owner, x, b)
		if err != nil {
			return nil, err
		}
		rs[i] = protocol.Range{Type: protocol.RangeFingerprint, Fingerprint: prevFP.Xor(fp), UpperBound: ub}
		if i < len(buckets)-1 {
			if b >= x.size() {
				return nil, fmt.Errorf("sqlstore: bucket %d beyond %d", b, x.size())
			}
			t, err := s.timestampAt(ctx, owner, x, b)
			if err != nil {
				return nil, err
			}
			rs[i].UpperBound = protocol.BoundAt(t)
		}
		prev, prevFP = b, fp
	}
	return rs, nil
}

// FindLowerBound implements protocol.Storage.
func (s *Store) FindLowerBound(ctx context.Context, owner protocol.OwnerID, begin, end int, ub protocol.UpperBound) (int, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return 0, err
	}
	defer x.mu.Unlock()
	if err := checkRange(begin, end, x.size()); err != nil {
		return 0, err
	}
	if end == 0 || begin == end || ub.Infinite {
		return end, nil
	}
	// The last block starting before ub holds the first timestamp >= ub,
	// or that timestamp starts the next block.
	k := sort.Search(len(x.blocks), func(k int) bool { return x.blocks[k].start.Compare(ub.Timestamp) >= 0 }) - 1
	if k < 0 {
		return 0, nil
	}
	var n int
	err = s.scanRow(ctx, `select count(*) from (select 1 from evolu_ts where owner = ? and t >= ? and t < ? limit ?)`, []any{owner[:], x.blocks[k].start[:], ub.Timestamp[:], x.blocks[k].n}, &n)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: lower bound: %w", err)
	}
	return min(x.prefixN[k]+n, end), nil
}

// Iterate implements protocol.Storage. It reads in chunks and calls fn
// without holding a database cursor.
func (s *Store) Iterate(ctx context.Context, owner protocol.OwnerID, begin, end int, fn func(protocol.TimestampBytes, int) bool) error {
	x, err := s.index(ctx, owner)
	if err != nil {
		return err
	}
	if err := checkRange(begin, end, x.size()); err != nil {
		x.mu.Unlock()
		return err
	}
	if begin == end {
		x.mu.Unlock()
		return nil
	}
	k, off := x.locate(begin)
	from := x.blocks[k].start
	x.mu.Unlock()
	index := begin
	first := true
	for index < end {
		var q string
		var args []any
		n := min(chunk, end-index)
		if first {
			q, args = `select t from evolu_ts where owner = ? and t >= ? order by t limit ? offset ?`, []any{owner[:], from[:], n, off}
		} else {
			q, args = `select t from evolu_ts where owner = ? and t > ? order by t limit ?`, []any{owner[:], from[:], n}
		}
		ts, err := s.readTimestamps(ctx, q, args...)
		if err != nil {
			return err
		}
		if len(ts) == 0 {
			return fmt.Errorf("sqlstore: iterate: index %d missing", index)
		}
		for _, t := range ts {
			if !fn(t, index) {
				return nil
			}
			index++
		}
		from, first = ts[len(ts)-1], false
	}
	return nil
}

func (s *Store) readTimestamps(ctx context.Context, q string, args ...any) ([]protocol.TimestampBytes, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: iterate: %w", err)
	}
	defer rows.Close()
	var out []protocol.TimestampBytes
	var raw []byte
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("sqlstore: iterate: %w", err)
		}
		var t protocol.TimestampBytes
		copy(t[:], raw)
		out = append(out, t)
	}
	return out, rows.Err()
}

// ReadChange implements protocol.Storage.
func (s *Store) ReadChange(ctx context.Context, owner protocol.OwnerID, t protocol.TimestampBytes) ([]byte, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	if c, ok := x.ahead[t]; ok {
		delete(x.ahead, t)
		return c, nil
	}
	ahead, err := s.readAhead(ctx, owner, t)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read change %s: %w", t.Timestamp(), err)
	}
	c, ok := ahead[t]
	if !ok {
		return nil, fmt.Errorf("sqlstore: read change %s: %w", t.Timestamp(), sql.ErrNoRows)
	}
	delete(ahead, t)
	x.ahead = ahead
	return c, nil
}

// Read-ahead bounds: at most aheadRows changes and aheadBytes bytes (but
// always the requested one).
const (
	aheadRows  = 64
	aheadBytes = 1 << 20
)

// readAhead reads the change of t and those of the timestamps after it.
func (s *Store) readAhead(ctx context.Context, owner protocol.OwnerID, t protocol.TimestampBytes) (map[protocol.TimestampBytes][]byte, error) {
	// Sizes first (SQLite reads a blob's length from the record header), so
	// a run of huge changes is not loaded only to be dropped.
	rows, err := s.query(ctx, `select length(change) from evolu_change where owner = ? and t >= ? order by t limit ?`, owner[:], t[:], aheadRows)
	if err != nil {
		return nil, err
	}
	n, total := 0, 0
	for rows.Next() {
		var l int
		if err := rows.Scan(&l); err != nil {
			rows.Close()
			return nil, err
		}
		if n > 0 && total+l > aheadBytes {
			break
		}
		n++
		total += l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[protocol.TimestampBytes][]byte, n)
	if n == 0 {
		return out, nil
	}
	rows, err = s.query(ctx, `select t, change from evolu_change where owner = ? and t >= ? order by t limit ?`, owner[:], t[:], n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var traw, c []byte
		if err := rows.Scan(&traw, &c); err != nil {
			return nil, err
		}
		var k protocol.TimestampBytes
		copy(k[:], traw)
		out[k] = c
	}
	return out, rows.Err()
}

// ValidateWriteKey implements protocol.RelayStorage: the first key of an
// owner becomes its key; later keys are compared in constant time.
func (s *Store) ValidateWriteKey(ctx context.Context, owner protocol.OwnerID, key protocol.WriteKey) (bool, error) {
	var stored []byte
	err := s.scanRow(ctx, `select write_key from evolu_owner where owner = ?`, []any{owner[:]}, &stored)
	if err == nil && stored != nil {
		return subtle.ConstantTimeCompare(stored, key[:]) == 1, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("sqlstore: read write key: %w", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err = s.db.ExecContext(ctx, `insert into evolu_owner (owner, write_key) values (?, ?)
		on conflict (owner) do update set write_key = excluded.write_key where write_key is null`, owner[:], key[:])
	if err != nil {
		return false, fmt.Errorf("sqlstore: store write key: %w", err)
	}
	// A concurrent first key may have won: compare with what is stored.
	if err := s.scanRow(ctx, `select write_key from evolu_owner where owner = ?`, []any{owner[:]}, &stored); err != nil {
		return false, fmt.Errorf("sqlstore: read write key: %w", err)
	}
	return subtle.ConstantTimeCompare(stored, key[:]) == 1, nil
}
