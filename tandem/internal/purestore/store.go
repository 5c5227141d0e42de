// Package purestore is a device store in pure Go, for the targets where
// devstore's SQLite driver does not build (js/wasm, wasip1). It keeps
// devstore's tables in memory and makes them durable as an append-only log
// in one file: each commit is one checksummed batch, written and synced
// before it counts, so a crash keeps every commit or drops the last one
// whole. It implements client.Journal and client.Source with devstore's
// semantics (the same upserts, orders and meta keys).
// docs/decisions/platforms-builds.md.
package purestore

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// DB is an open store. It is safe for concurrent use.
type DB struct {
	mu   sync.Mutex
	path string
	f    *os.File
	ts   [nTables]*table
	size int64 // bytes of whole batches in the file
	live int64 // bytes the rows took on open (for compaction)
}

// Open opens (creating if needed) the store file at path. A log much
// larger than the rows it holds is rewritten first.
func Open(ctx context.Context, path string) (*DB, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("purestore: %w", err)
	}
	s := &DB{path: path, f: f, ts: newTables()}
	if s.size, err = replay(f, &s.ts); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(s.size); err != nil { // a torn last commit
		f.Close()
		return nil, fmt.Errorf("purestore: %w", err)
	}
	for _, t := range s.ts {
		for k, r := range t.rows {
			s.live += int64(len(k) + len(r.val) + 4)
		}
	}
	if s.size > 2*s.live+(1<<20) {
		if err := s.compact(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return s, nil
}

// compact rewrites the log as one batch of the rows, in their order.
func (s *DB) compact() error {
	var ops []op
	for i, t := range s.ts {
		for _, k := range t.ordered(false) {
			ops = append(ops, op{kind: opMove, table: byte(i), key: k, val: t.rows[k].val})
		}
	}
	b := appendBatch(nil, ops)
	tmp := s.path + ".tmp"
	if err := writeSynced(tmp, b); err != nil {
		return fmt.Errorf("purestore: compact: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("purestore: compact: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("purestore: compact: %w", err)
	}
	s.f.Close()
	s.f, s.size = f, int64(len(b))
	return nil
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Close closes the store.
func (s *DB) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}

// Scanning is devstore's page-cache switch; there is no cache here.
func (s *DB) Scanning(context.Context, bool) error { return nil }

// Meta returns the value of meta key k, or nil.
func (s *DB) Meta(_ context.Context, k string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.ts[tMeta].rows[k]; ok && len(r.val) > 0 {
		return append([]byte{}, r.val...), nil
	}
	return nil, nil // absent or empty, as devstore reads either
}

// SetMeta sets meta keys, all in one commit.
func (s *DB) SetMeta(_ context.Context, kv map[string][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tx txn
	for k, v := range kv {
		tx.put(s, tMeta, k, append([]byte{}, v...), false)
	}
	return s.commit(&tx)
}

// Commit stores ds, in order, in one commit (client.Journal).
func (s *DB) Commit(ds ...*client.Delta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tx txn
	for _, d := range ds {
		deltaOps(s, &tx, d)
	}
	if err := s.commit(&tx); err != nil {
		return fmt.Errorf("purestore: commit: %w", err)
	}
	return nil
}

// WriteRows returns how many writes are stored, as devstore's WriteRows
// (here one per write ID: a write stored again replaces its row).
func (s *DB) WriteRows(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ts[tWrites].rows), nil
}

// Prune deletes stored writes keep does not list, as devstore's Prune.
func (s *DB) Prune(_ context.Context, keep func(id [32]byte) bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tx txn
	for k := range s.ts[tWrites].rows {
		if len(k) != 32 || !keep([32]byte([]byte(k))) {
			tx.del(s, tWrites, k)
		}
	}
	if len(tx.ops) == 0 {
		return 0, nil
	}
	return len(tx.ops), s.commit(&tx)
}

// txn is a commit being built: its ops are applied to the tables as they
// are made (later ops of the same commit read earlier ones), and undone if
// the log append fails.
type txn struct {
	ops  []op
	undo []undo
}

// undo is a row as it was before an op of the commit.
type undo struct {
	table byte
	key   string
	had   bool
	prev  row
}

func (tx *txn) record(s *DB, o op) {
	prev, had := s.ts[o.table].rows[o.key]
	tx.undo = append(tx.undo, undo{table: o.table, key: o.key, had: had, prev: prev})
	tx.ops = append(tx.ops, o)
	_ = apply(&s.ts, o)
}

func (tx *txn) put(s *DB, tb byte, key string, val []byte, move bool) {
	kind := opPut
	if move {
		kind = opMove
	}
	tx.record(s, op{kind: kind, table: tb, key: key, val: val})
}

func (tx *txn) del(s *DB, tb byte, key string) {
	if _, ok := s.ts[tb].rows[key]; ok {
		tx.record(s, op{kind: opDel, table: tb, key: key})
	}
}

// commit appends tx to the log and syncs it; on failure the tables are
// put back as they were.
func (s *DB) commit(tx *txn) error {
	if len(tx.ops) == 0 {
		return nil
	}
	b := appendBatch(nil, tx.ops)
	_, err := s.f.WriteAt(b, s.size)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		s.rollback(tx)
		_ = s.f.Truncate(s.size)
		return err
	}
	s.size += int64(len(b))
	return nil
}

func (s *DB) rollback(tx *txn) {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		u := tx.undo[i]
		if u.had {
			s.ts[u.table].rows[u.key] = u.prev
		} else {
			delete(s.ts[u.table].rows, u.key)
		}
	}
}

var _ client.Journal = (*DB)(nil)
