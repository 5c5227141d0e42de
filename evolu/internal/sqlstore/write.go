package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"

	"github.com/ferry-sync/ferry/evolu/protocol"
)

// OnNew is called inside the write transaction for each message the store
// did not have; an error rolls the whole batch back.
type OnNew func(ctx context.Context, tx *sql.Tx, msg protocol.EncryptedMessage) error

// WriteMessages implements protocol.Storage: it stores the messages it does
// not have yet in one transaction, all or none, checking the quota first.
func (s *Store) WriteMessages(ctx context.Context, owner protocol.OwnerID, msgs []protocol.EncryptedMessage) error {
	return s.Write(ctx, owner, msgs, nil)
}

// Write is WriteMessages with a hook for each new message.
func (s *Store) Write(ctx context.Context, owner protocol.OwnerID, msgs []protocol.EncryptedMessage, onNew OnNew) error {
	x, err := s.index(ctx, owner)
	if err != nil {
		return err
	}
	defer x.mu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	blocks, err := s.write(ctx, owner, x, msgs, onNew)
	if err != nil {
		return err
	}
	if blocks != nil {
		x.blocks = blocks
		x.rebuild()
	}
	return nil
}

func (s *Store) write(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, msgs []protocol.EncryptedMessage, onNew OnNew) (_ []block, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: begin: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	insChange, err := s.TxStmt(ctx, tx, `insert into evolu_change (owner, t, change) values (?, ?, ?) on conflict do nothing`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: prepare: %w", err)
	}
	defer insChange.Close()
	var fresh []protocol.EncryptedMessage
	var added int64
	for _, m := range msgs {
		t := m.Timestamp.Bytes()
		res, err := insChange.ExecContext(ctx, owner[:], t[:], m.Change)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: insert change: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			fresh = append(fresh, m)
			added += int64(len(m.Change))
		}
	}
	if len(fresh) == 0 {
		return nil, tx.Commit()
	}
	var stored int64
	usage, err := s.TxStmt(ctx, tx, `select stored_bytes from evolu_owner where owner = ?`)
	if err != nil {
		return nil, err
	}
	err = usage.QueryRowContext(ctx, owner[:]).Scan(&stored)
	if err != nil && err != sql.ErrNoRows {
		return nil, fmt.Errorf("sqlstore: read usage: %w", err)
	}
	if s.cfg.WithinQuota != nil && !s.cfg.WithinQuota(owner, stored+added) {
		return nil, &protocol.QuotaExceededError{OwnerID: owner}
	}
	if _, err := tx.ExecContext(ctx, `insert into evolu_owner (owner, stored_bytes) values (?, ?)
		on conflict (owner) do update set stored_bytes = stored_bytes + excluded.stored_bytes`, owner[:], added); err != nil {
		return nil, fmt.Errorf("sqlstore: update usage: %w", err)
	}
	insTS, err := s.TxStmt(ctx, tx, `insert into evolu_ts (owner, t, fp) values (?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: prepare: %w", err)
	}
	defer insTS.Close()
	ix := blockEditor{blocks: slices.Clone(x.blocks), touched: map[protocol.TimestampBytes]bool{}}
	for _, m := range fresh {
		t := m.Timestamp.Bytes()
		fp := protocol.TimestampFingerprint(t)
		if _, err := insTS.ExecContext(ctx, owner[:], t[:], fp[:]); err != nil {
			return nil, fmt.Errorf("sqlstore: insert timestamp: %w", err)
		}
		if err := ix.insert(ctx, tx, owner, t, fp); err != nil {
			return nil, err
		}
		if onNew != nil {
			if err := onNew(ctx, tx, m); err != nil {
				return nil, err
			}
		}
	}
	if err := ix.persist(ctx, s, tx, owner); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlstore: commit: %w", err)
	}
	return ix.blocks, nil
}

// blockEditor applies inserts to a copy of an owner's blocks and records
// which block rows to rewrite and delete.
type blockEditor struct {
	blocks  []block
	touched map[protocol.TimestampBytes]bool // starts to upsert
	deleted []protocol.TimestampBytes        // starts that no longer exist
}

func (e *blockEditor) insert(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, t protocol.TimestampBytes, fp protocol.Fingerprint) error {
	if len(e.blocks) == 0 {
		e.blocks = append(e.blocks, block{start: t, n: 1, fp: fp})
		e.touched[t] = true
		return nil
	}
	k := sort.Search(len(e.blocks), func(k int) bool { return e.blocks[k].start.Compare(t) > 0 }) - 1
	if k < 0 {
		// Before the first block: it now starts at t.
		k = 0
		e.deleted = append(e.deleted, e.blocks[0].start)
		delete(e.touched, e.blocks[0].start)
		e.blocks[0].start = t
	}
	b := &e.blocks[k]
	b.n++
	b.fp = b.fp.Xor(fp)
	e.touched[b.start] = true
	if b.n <= maxBlock {
		return nil
	}
	return e.split(ctx, tx, owner, k)
}

// split cuts block k in two halves, reading its timestamps.
func (e *blockEditor) split(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, k int) error {
	b := e.blocks[k]
	rows, err := tx.QueryContext(ctx, `select t, fp from evolu_ts where owner = ? and t >= ? order by t limit ?`, owner[:], b.start[:], b.n)
	if err != nil {
		return fmt.Errorf("sqlstore: split: %w", err)
	}
	defer rows.Close()
	half := b.n / 2
	left := block{start: b.start, n: half}
	right := block{n: b.n - half}
	i := 0
	var traw, fraw []byte
	for rows.Next() {
		if err := rows.Scan(&traw, &fraw); err != nil {
			return fmt.Errorf("sqlstore: split: %w", err)
		}
		var f protocol.Fingerprint
		copy(f[:], fraw)
		if i < half {
			left.fp = left.fp.Xor(f)
		} else {
			if i == half {
				copy(right.start[:], traw)
			}
			right.fp = right.fp.Xor(f)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: split: %w", err)
	}
	if i != b.n {
		return fmt.Errorf("sqlstore: split: block of %d has %d rows", b.n, i)
	}
	e.blocks[k] = left
	e.blocks = slices.Insert(e.blocks, k+1, right)
	e.touched[left.start] = true
	e.touched[right.start] = true
	return nil
}

func (e *blockEditor) persist(ctx context.Context, s *Store, tx *sql.Tx, owner protocol.OwnerID) error {
	for _, start := range e.deleted {
		if _, err := tx.ExecContext(ctx, `delete from evolu_block where owner = ? and start = ?`, owner[:], start[:]); err != nil {
			return fmt.Errorf("sqlstore: delete block: %w", err)
		}
	}
	up, err := s.TxStmt(ctx, tx, `insert into evolu_block (owner, start, n, fp) values (?, ?, ?, ?)
		on conflict (owner, start) do update set n = excluded.n, fp = excluded.fp`)
	if err != nil {
		return fmt.Errorf("sqlstore: prepare: %w", err)
	}
	defer up.Close()
	for _, b := range e.blocks {
		if !e.touched[b.start] {
			continue
		}
		if _, err := up.ExecContext(ctx, owner[:], b.start[:], b.n, b.fp[:]); err != nil {
			return fmt.Errorf("sqlstore: write block: %w", err)
		}
	}
	return nil
}
