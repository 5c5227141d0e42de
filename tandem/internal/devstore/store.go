// Package devstore is the durable device's database: one SQLite file
// (modernc.org/sqlite, pure Go) holding everything a Tandem device must not
// lose across restarts and crashes. It implements client.Journal (every
// change committed atomically) and client.Source (everything read back on
// open). See docs/decisions/tandem-device-store.md.
//
// Schema (version 5, PRAGMA user_version; PRAGMA application_id 'FRYT'):
//
//	meta(k TEXT PRIMARY KEY, v BLOB)           device_id, hlc, cursor, uid, hub, ...
//	writes(seq INTEGER PRIMARY KEY, wid BLOB, scope BLOB, stored BLOB, crc BLOB)   kept writes in arrival order, record.AppendStored; crc: integrity.go; a write stored again has a later row until Prune
//	statements(seq INTEGER PRIMARY KEY, coll BLOB, origin BLOB, payload BLOB)
//	fragments(seq INTEGER PRIMARY KEY, coll BLOB, payload BLOB)
//	msgs(id TEXT PRIMARY KEY, channel TEXT, state INTEGER, hash BLOB, kind INTEGER, rec BLOB, writes BLOB, size INTEGER, first_seen INTEGER)   in rowid order
//	outbox(seq INTEGER PRIMARY KEY, channel TEXT, envelope BLOB, rec BLOB, dirty INTEGER, kind INTEGER, writes BLOB, auto INTEGER, crc BLOB)   crc: integrity.go
//	held(id TEXT PRIMARY KEY, channel TEXT, envelope BLOB, first_seen INTEGER)
//	rotations(coll BLOB PRIMARY KEY, step, payload, key, inventory, old_epoch, old_key)   the §11.6 journal
//
// Written by hand: only the schema and the queries.
package devstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// Version is the schema version this package writes.
const Version = 5

// appID marks a Ferry device database ('FRYT'), so that another SQLite
// file is never taken for one.
const appID = 0x46525954

// ErrNewer: the database was written by a newer Ferry (a higher schema
// version); it is not opened, so nothing in it is damaged.
var ErrNewer = errors.New("devstore: database written by a newer version")

// ErrForeign: the file is an SQLite database of something else.
var ErrForeign = errors.New("devstore: not a Ferry device database")

// DB is an open device database. It is safe for concurrent use.
type DB struct {
	db *sql.DB
}

// Open opens (creating if needed) the database file at path and brings its
// schema to Version. A database of a newer version is refused (ErrNewer);
// an older one is migrated in one transaction.
func Open(ctx context.Context, path string) (*DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=cache_size(" + strconv.Itoa(cacheWorking) + ")&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one writer; reads are served by the device's memory
	s := &DB{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Page cache sizes (PRAGMA cache_size, in KiB when negative): a device's
// random inserts into the writes table gain from a large cache; one pass
// over every row, as reopening makes, gains nothing from keeping pages and
// pays for allocating each one (a 10,000-record device reopens in about
// 0.85 of the time with the small cache).
const (
	cacheWorking = -32000
	cacheScan    = -2000
)

// Scanning switches the page cache to the small one for a pass over every
// row (on) and back (off). The database has one connection, so the
// setting holds for every statement until it is switched back.
func (s *DB) Scanning(ctx context.Context, on bool) error {
	n := cacheWorking
	if on {
		n = cacheScan
	}
	_, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = %d", n))
	return err
}

// Close closes the database.
func (s *DB) Close() error { return s.db.Close() }

// migrations[v] brings a database from version v to v+1.
var migrations = []string{
	0: `
CREATE TABLE meta(k TEXT PRIMARY KEY, v BLOB NOT NULL);
CREATE TABLE writes(wid BLOB PRIMARY KEY, scope BLOB NOT NULL, stored BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX writes_scope ON writes(scope);
CREATE TABLE statements(seq INTEGER PRIMARY KEY, coll BLOB NOT NULL, origin BLOB NOT NULL, payload BLOB NOT NULL);
CREATE TABLE fragments(seq INTEGER PRIMARY KEY, coll BLOB NOT NULL, payload BLOB NOT NULL);
CREATE TABLE msgs(id TEXT PRIMARY KEY, channel TEXT NOT NULL, state INTEGER NOT NULL, hash BLOB, kind INTEGER NOT NULL, rec BLOB, writes BLOB);
CREATE TABLE outbox(seq INTEGER PRIMARY KEY, channel TEXT NOT NULL, envelope BLOB, rec BLOB, dirty INTEGER NOT NULL, kind INTEGER NOT NULL, writes BLOB);
CREATE TABLE held(id TEXT PRIMARY KEY, channel TEXT NOT NULL, envelope BLOB NOT NULL, first_seen INTEGER NOT NULL);
CREATE TABLE rotations(coll BLOB PRIMARY KEY, step INTEGER NOT NULL, payload BLOB NOT NULL, key BLOB NOT NULL, inventory BLOB NOT NULL, old_epoch BLOB NOT NULL, old_key BLOB NOT NULL);
`,
	// 2: a message refused for a holding bound keeps its size and first
	// sighting (tandem/internal/client bounds.go); an outbox entry says
	// whether it is an automatic answer (answers.go); a stored write
	// carries a checksum (integrity.go).
	1: `
ALTER TABLE msgs ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE msgs ADD COLUMN first_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN auto INTEGER NOT NULL DEFAULT 0;
ALTER TABLE writes ADD COLUMN crc BLOB;
`,
	// 3: an outbox entry carries a checksum (integrity.go).
	2: `
ALTER TABLE outbox ADD COLUMN crc BLOB;
`,
	// 4: writes are stored in arrival order (a rowid table), so a sync
	// appends its rows at the end of the table instead of scattering them
	// over every page by their random IDs; only the small unique index on
	// wid takes random inserts. See docs/decisions/tandem-device-store.md.
	3: `
CREATE TABLE writes4(seq INTEGER PRIMARY KEY, wid BLOB NOT NULL UNIQUE, scope BLOB NOT NULL, stored BLOB NOT NULL, crc BLOB);
INSERT INTO writes4(wid, scope, stored, crc) SELECT wid, scope, stored, crc FROM writes;
DROP TABLE writes;
ALTER TABLE writes4 RENAME TO writes;
CREATE INDEX writes_scope ON writes(scope);
`,
	// 5: no index on wid. Its random inserts were most of a sync's commit
	// (every transaction rewrote nearly all of its pages); a write stored
	// again now adds a row, the later one is the one kept, and Prune
	// removes the earlier. See docs/decisions/tandem-device-store.md.
	4: `
CREATE TABLE writes5(seq INTEGER PRIMARY KEY, wid BLOB NOT NULL, scope BLOB NOT NULL, stored BLOB NOT NULL, crc BLOB);
INSERT INTO writes5(seq, wid, scope, stored, crc) SELECT seq, wid, scope, stored, crc FROM writes;
DROP TABLE writes;
ALTER TABLE writes5 RENAME TO writes;
CREATE INDEX writes_scope ON writes(scope);
`,
}

func (s *DB) migrate(ctx context.Context) error {
	var app, ver int
	if err := s.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("devstore: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&ver); err != nil {
		return fmt.Errorf("devstore: %w", err)
	}
	var tables int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("devstore: %w", err)
	}
	switch {
	case app == 0 && tables > 0, app != 0 && app != appID:
		return ErrForeign
	case ver > Version:
		return fmt.Errorf("%w: schema %d, this version reads up to %d", ErrNewer, ver, Version)
	case ver == Version:
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("devstore: %w", err)
	}
	defer tx.Rollback()
	for v := ver; v < Version; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("devstore: migrate %d→%d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", appID, Version)); err != nil {
		return fmt.Errorf("devstore: %w", err)
	}
	return tx.Commit()
}

// Meta returns the value of meta key k, or nil.
func (s *DB) Meta(ctx context.Context, k string) ([]byte, error) {
	var v []byte
	err := s.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = ?", k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return v, err
}

// SetMeta sets meta keys, all in one transaction.
func (s *DB) SetMeta(ctx context.Context, kv map[string][]byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for k, v := range kv {
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta(k, v) VALUES(?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", k, v); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// SQL gives the benchmarks and tests the raw database.
func (s *DB) SQL() *sql.DB { return s.db }
