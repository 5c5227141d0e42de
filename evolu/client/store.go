package client

import (
	"context"

	"github.com/ferry-sync/ferry/evolu/internal/clientstore"
)

// Store is a device's local database: the owner's encrypted changes (the
// set Sync and Run reconcile with relays) and the rows their decrypted
// changes make, last writer wins per column by timestamp. Several processes
// may open one file; each sees the others' writes
// (docs/decisions/evolu-shared-database.md).
type Store struct {
	st *clientstore.Store
}

// OpenStore opens (creating if needed) a client store at path. A relay's
// database or another program's is refused with an error matching
// ErrWrongDatabase.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	st, err := clientstore.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Store{st: st}, nil
}

// OpenExistingStore is OpenStore for a file that must exist already: a
// missing file gives an error matching fs.ErrNotExist and is not created.
func OpenExistingStore(ctx context.Context, path string) (*Store, error) {
	st, err := clientstore.OpenExisting(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Store{st: st}, nil
}

// ErrWrongDatabase is matched by the error of opening a database that is
// not a client's (a relay's, or another program's).
var ErrWrongDatabase = clientstore.ErrWrongDatabase

// storage is the Store as the reconciliation code sees it (the protocol's
// storage interface); Sync and Run use it, an app never does.
func (s *Store) storage() *clientstore.Store { return s.st }

// Close closes the database.
func (s *Store) Close() error { return s.st.Close() }

// AddOwner lets the store decrypt the owner's changes as they arrive. Put,
// Sync and Run add their owner themselves.
func (s *Store) AddOwner(o Owner) { s.st.AddOwner(o.id, o.encryptionKey) }

// Put stamps change with the next timestamp, encrypts it with the owner's
// key, and stores it: it is applied to the rows and sent by the next sync.
func (s *Store) Put(ctx context.Context, o Owner, change DbChange) (Timestamp, error) {
	return s.st.Put(ctx, o.id, o.encryptionKey, change)
}

// Changed receives a value after Put stored a local change (coalesced: one
// value may stand for several changes). Run uses it to push changes.
func (s *Store) Changed() <-chan struct{} { return s.st.Changed() }

// HasChanges reports whether the store holds any change of the owner.
func (s *Store) HasChanges(ctx context.Context, owner OwnerID) (bool, error) {
	return s.st.HasChanges(ctx, owner)
}

// Row is one row of a table as the applied changes made it.
type Row struct {
	Table   string
	ID      ID
	Columns []Column
}

// Rows returns the owner's rows of table (all tables when table is ""),
// ordered by table, id and column.
func (s *Store) Rows(ctx context.Context, owner OwnerID, table string) ([]Row, error) {
	rows, err := s.st.Rows(ctx, owner, table)
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Table: r.Table, ID: r.ID, Columns: r.Columns}
	}
	return out, err
}

// Unreadable returns how many stored changes of owner could not be read
// (no key, or a change that does not decrypt or decode); they are kept and
// still synced.
func (s *Store) Unreadable(ctx context.Context, owner OwnerID) (int, error) {
	return s.st.Unreadable(ctx, owner)
}
