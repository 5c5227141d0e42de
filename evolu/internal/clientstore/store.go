// Package clientstore is the Evolu client's SQLite store: encrypted
// messages (the set reconciled with relays, as protocol.Storage) and the
// rows their decrypted changes make. evolu/client wraps it with the methods
// an app calls; tests of other evolu packages write through it directly.
package clientstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
)

const clientSchema = `
create table if not exists evolu_row (
  owner blob not null, tbl text not null, id blob not null, col text not null,
  value any, ts blob not null,
  primary key (owner, tbl, id, col)) without rowid;
create table if not exists evolu_unreadable (
  owner blob not null, t blob not null, reason text not null,
  primary key (owner, t)) without rowid;
create table if not exists evolu_clock (
  k integer primary key check (k = 0), node_id blob not null, last blob not null);
`

// Store is the client's SQLite store: the owner's encrypted messages (the
// set reconciled with relays) and the rows their decrypted changes make,
// last writer wins per column by timestamp. It implements
// protocol.Storage.
type Store struct {
	db     *sqlstore.Store
	mu     sync.Mutex
	keys   map[protocol.OwnerID][32]byte
	now    func() time.Time
	random io.Reader
	// changed receives a token when Put stores a local change.
	changed chan struct{}
}

// Open opens (creating if needed) a client store at path. Several
// processes may open one file: each notices the others' writes before it
// answers or syncs (docs/decisions/evolu-shared-database.md). A relay's
// database or another program's is refused with an error matching
// ErrWrongDatabase.
func Open(ctx context.Context, path string) (*Store, error) {
	return openStore(ctx, path, false)
}

// OpenExisting is Open for a file that must exist already: a
// missing file gives an error matching fs.ErrNotExist and is not created.
func OpenExisting(ctx context.Context, path string) (*Store, error) {
	return openStore(ctx, path, true)
}

// ErrWrongDatabase is matched by the error of opening a database that is
// not a client's (a relay's, or another program's).
var ErrWrongDatabase = sqlstore.ErrWrongKind

func openStore(ctx context.Context, path string, mustExist bool) (*Store, error) {
	st, err := sqlstore.Open(ctx, path, sqlstore.Config{Kind: sqlstore.KindClient, MustExist: mustExist}, clientSchema)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("evolu client: no database %s (check --db; put or sync creates one): %w", path, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("evolu client: %w", err)
	}
	return &Store{db: st, keys: map[protocol.OwnerID][32]byte{}, now: time.Now, random: rand.Reader, changed: make(chan struct{}, 1)}, nil
}

// ExternalChange reports whether another process wrote the owner's
// messages since this store last looked, and makes the store see them.
func (s *Store) ExternalChange(ctx context.Context, owner protocol.OwnerID) (bool, error) {
	return s.db.Refresh(ctx, owner)
}

// HasChanges reports whether the store holds any message of the owner.
func (s *Store) HasChanges(ctx context.Context, owner protocol.OwnerID) (bool, error) {
	n, err := s.db.Size(ctx, owner)
	return n > 0, err
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// AddOwner lets the store decrypt the owner's changes.
func (s *Store) AddOwner(id protocol.OwnerID, encryptionKey [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[id] = encryptionKey
}

// WriteMessages implements protocol.Storage. Every new message is stored,
// so reconciliation converges; a change the store cannot read (wrong key,
// tampered, timestamp mismatch, malformed) is recorded in evolu_unreadable
// and applied to no row (docs/decisions/evolu-client-unreadable.md).
func (s *Store) WriteMessages(ctx context.Context, owner protocol.OwnerID, msgs []protocol.EncryptedMessage) error {
	s.mu.Lock()
	key, ok := s.keys[owner]
	s.mu.Unlock()
	return s.db.Write(ctx, owner, msgs, func(ctx context.Context, tx *sql.Tx, m protocol.EncryptedMessage) error {
		t := m.Timestamp.Bytes()
		if err := s.exec(ctx, tx, sqlObserve, t[:]); err != nil {
			return err
		}
		if !ok {
			return s.exec(ctx, tx, sqlUnreadable, owner[:], t[:], "no key for owner")
		}
		c, err := changecodec.DecryptChange(m, key)
		if err != nil {
			return s.exec(ctx, tx, sqlUnreadable, owner[:], t[:], err.Error())
		}
		return s.applyChange(ctx, tx, owner, t, c)
	})
}

const (
	sqlObserve    = `update evolu_clock set last = ?1 where k = 0 and last < ?1`
	sqlUnreadable = `insert or replace into evolu_unreadable (owner, t, reason) values (?, ?, ?)`
	sqlApply      = `insert into evolu_row (owner, tbl, id, col, value, ts) values (?, ?, ?, ?, ?, ?)
		on conflict (owner, tbl, id, col) do update set value = excluded.value, ts = excluded.ts where excluded.ts > evolu_row.ts`
)

// exec runs a statement prepared once, inside tx.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
	st, err := s.db.TxStmt(ctx, tx, q)
	if err != nil {
		return err
	}
	if _, err := st.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("evolu client: %w", err)
	}
	return nil
}

// applyChange writes each column if t is newer than the column's timestamp.
func (s *Store) applyChange(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, t protocol.TimestampBytes, c changecodec.DbChange) error {
	cols := c.Values
	if c.IsDelete != nil {
		v := 0.0
		if *c.IsDelete {
			v = 1
		}
		cols = append(cols[:len(cols):len(cols)], changecodec.Column{Name: "isDeleted", Value: v})
	}
	for _, col := range cols {
		if err := s.exec(ctx, tx, sqlApply, owner[:], c.Table, c.ID[:], col.Name, col.Value, t[:]); err != nil {
			return err
		}
	}
	return nil
}

// nextTimestamp is sendTimestamp: the later of now and the clock, with the
// counter advanced when the millis do not move.
func (s *Store) nextTimestamp(ctx context.Context, tx *sql.Tx) (protocol.Timestamp, error) {
	var nodeRaw, lastRaw []byte
	err := tx.QueryRowContext(ctx, `select node_id, last from evolu_clock where k = 0`).Scan(&nodeRaw, &lastRaw)
	if errors.Is(err, sql.ErrNoRows) {
		var nid protocol.NodeID
		if _, err := io.ReadFull(s.random, nid[:]); err != nil {
			return protocol.Timestamp{}, err
		}
		nodeRaw = nid[:]
		lastRaw = make([]byte, 16)
		if _, err := tx.ExecContext(ctx, `insert into evolu_clock (k, node_id, last) values (0, ?, ?)`, nodeRaw, lastRaw); err != nil {
			return protocol.Timestamp{}, err
		}
	} else if err != nil {
		return protocol.Timestamp{}, err
	}
	var lastTB protocol.TimestampBytes
	copy(lastTB[:], lastRaw)
	last := lastTB.Timestamp()
	var ts protocol.Timestamp
	copy(ts.NodeID[:], nodeRaw)
	ts.Millis = max(uint64(s.now().UnixMilli()), last.Millis)
	if ts.Millis == last.Millis {
		if last.Counter == protocol.MaxCounter {
			ts.Millis++
		} else {
			ts.Counter = last.Counter + 1
		}
	}
	if ts.Millis > protocol.MaxMillis {
		return ts, errors.New("evolu client: clock exhausted")
	}
	tb := ts.Bytes()
	_, err = tx.ExecContext(ctx, `update evolu_clock set last = ? where k = 0`, tb[:])
	return ts, err
}

// MaxMutationSize bounds one encrypted change written with Put: the 640 KB
// mutation limit of Protocol.ts, so every change fits a 1 MB message next to
// the largest ranges section.
const MaxMutationSize = 640 * 1024

// Put stamps change with the next timestamp, encrypts it with the owner's
// key, and stores it like a received message: it is applied to the rows and
// will be sent by the next sync.
func (s *Store) Put(ctx context.Context, id protocol.OwnerID, encryptionKey [32]byte, c changecodec.DbChange) (protocol.Timestamp, error) {
	s.AddOwner(id, encryptionKey)
	tx, err := s.db.DB().BeginTx(ctx, nil)
	if err != nil {
		return protocol.Timestamp{}, err
	}
	ts, err := s.nextTimestamp(ctx, tx)
	if err != nil {
		tx.Rollback()
		return ts, err
	}
	if err := tx.Commit(); err != nil {
		return ts, err
	}
	enc, err := changecodec.EncryptChange(s.random, ts, c, encryptionKey)
	if err != nil {
		return ts, err
	}
	if len(enc) > MaxMutationSize {
		return ts, fmt.Errorf("evolu client: change of %d bytes exceeds %d", len(enc), MaxMutationSize)
	}
	if err := s.WriteMessages(ctx, id, []protocol.EncryptedMessage{{Timestamp: ts, Change: enc}}); err != nil {
		return ts, err
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return ts, nil
}

// Changed receives a value after Put stored a local change (coalesced: one
// value may stand for several changes). Run uses it to push changes.
// SetNow replaces the clock Put stamps changes with (tests).
func (s *Store) SetNow(now func() time.Time) { s.now = now }

func (s *Store) Changed() <-chan struct{} { return s.changed }

// Row is one row of a table as the applied changes made it.
type Row struct {
	Table   string
	ID      protocol.ID
	Columns []changecodec.Column
}

// Rows returns the owner's rows, ordered by table, id and column.
func (s *Store) Rows(ctx context.Context, owner protocol.OwnerID, table string) ([]Row, error) {
	q := `select tbl, id, col, value from evolu_row where owner = ?`
	args := []any{owner[:]}
	if table != "" {
		q += ` and tbl = ?`
		args = append(args, table)
	}
	rows, err := s.db.DB().QueryContext(ctx, q+` order by tbl, id, col`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var tbl, col string
		var id []byte
		var v any
		if err := rows.Scan(&tbl, &id, &col, &v); err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].Table != tbl || string(out[n-1].ID[:]) != string(id) {
			r := Row{Table: tbl}
			copy(r.ID[:], id)
			out = append(out, r)
		}
		if i, ok := v.(int64); ok {
			v = float64(i)
		}
		r := &out[len(out)-1]
		r.Columns = append(r.Columns, changecodec.Column{Name: col, Value: v})
	}
	return out, rows.Err()
}

// Unreadable returns how many stored changes of owner could not be read.
func (s *Store) Unreadable(ctx context.Context, owner protocol.OwnerID) (int, error) {
	var n int
	err := s.db.DB().QueryRowContext(ctx, `select count(*) from evolu_unreadable where owner = ?`, owner[:]).Scan(&n)
	return n, err
}

// Size implements protocol.Storage.
func (s *Store) Size(ctx context.Context, owner protocol.OwnerID) (int, error) {
	return s.db.Size(ctx, owner)
}

// Fingerprint implements protocol.Storage.
func (s *Store) Fingerprint(ctx context.Context, owner protocol.OwnerID, begin, end int) (protocol.Fingerprint, error) {
	return s.db.Fingerprint(ctx, owner, begin, end)
}

// FingerprintRanges implements protocol.Storage.
func (s *Store) FingerprintRanges(ctx context.Context, owner protocol.OwnerID, buckets []int, ub protocol.UpperBound) ([]protocol.Range, error) {
	return s.db.FingerprintRanges(ctx, owner, buckets, ub)
}

// FindLowerBound implements protocol.Storage.
func (s *Store) FindLowerBound(ctx context.Context, owner protocol.OwnerID, begin, end int, ub protocol.UpperBound) (int, error) {
	return s.db.FindLowerBound(ctx, owner, begin, end, ub)
}

// Iterate implements protocol.Storage.
func (s *Store) Iterate(ctx context.Context, owner protocol.OwnerID, begin, end int, fn func(protocol.TimestampBytes, int) bool) error {
	return s.db.Iterate(ctx, owner, begin, end, fn)
}

// ReadChange implements protocol.Storage.
func (s *Store) ReadChange(ctx context.Context, owner protocol.OwnerID, t protocol.TimestampBytes) ([]byte, error) {
	return s.db.ReadChange(ctx, owner, t)
}

var _ protocol.Storage = (*Store)(nil)
