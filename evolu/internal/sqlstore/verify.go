package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// ErrIndexDamaged is wrapped by the errors of queries that found the block
// index not matching the rows; the owner's index has then been rebuilt from
// the rows, and the next query is answered from it.
var ErrIndexDamaged = errors.New("sqlstore: block index does not match the rows (rebuilt)")

// Verify checks every owner's block index (evolu_block and the packed
// block rows) against its rows and rebuilds the index of each owner where
// they differ. It returns the owners it rebuilt. Open calls it when the
// database may not have been written by one exclusive Store only
// (docs/decisions/evolu-shared-database.md).
func (s *Store) Verify(ctx context.Context) ([]protocol.OwnerID, error) {
	owners, err := s.allOwners(ctx)
	if err != nil {
		return nil, err
	}
	var rebuilt []protocol.OwnerID
	for _, o := range owners {
		ok, err := s.verifyOwner(ctx, o)
		if err != nil {
			return rebuilt, err
		}
		if ok {
			continue
		}
		if err := s.rebuildOwner(ctx, o); err != nil {
			return rebuilt, err
		}
		rebuilt = append(rebuilt, o)
	}
	return rebuilt, nil
}

func (s *Store) allOwners(ctx context.Context) ([]protocol.OwnerID, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`select distinct owner from evolu_change union select distinct owner from evolu_block`))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: verify: %w", err)
	}
	defer rows.Close()
	var out []protocol.OwnerID
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("sqlstore: verify: %w", err)
		}
		var o protocol.OwnerID
		copy(o[:], raw)
		out = append(out, o)
	}
	return out, rows.Err()
}

// verifyOwner reports whether the owner's blocks and packed rows match its
// rows, streaming the rows once.
func (s *Store) verifyOwner(ctx context.Context, owner protocol.OwnerID) (bool, error) {
	var x ownerIndex
	if err := s.load(ctx, owner, &x); err != nil {
		return false, err
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`select t, fp from evolu_change where owner = ? order by t`), owner[:])
	if err != nil {
		return false, fmt.Errorf("sqlstore: verify: %w", err)
	}
	defer rows.Close()
	for k, b := range x.blocks {
		if b.n < 1 || b.n > maxBlock {
			return false, nil
		}
		r, err := nextBlockRows(rows, b.n)
		if err != nil || r == nil || len(r.ts) != b.n {
			return false, err
		}
		if r.ts[0] != b.start || r.pfx[b.n] != b.fp ||
			k+1 < len(x.blocks) && r.ts[b.n-1].Compare(x.blocks[k+1].start) >= 0 {
			return false, nil
		}
		var packed []byte
		err = s.scanRow(ctx, `select rows from evolu_block_rows where owner = ? and start = ?`, []any{owner[:], b.start[:]}, &packed)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("sqlstore: verify: %w", err)
		}
		if packed != nil && !bytes.Equal(packed, r.pack()) {
			return false, nil
		}
	}
	if rows.Next() { // rows after the last block
		return false, nil
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("sqlstore: verify: %w", err)
	}
	return true, nil
}

// nextBlockRows reads the next rows (t, fp) of rows, up to n; fewer when
// no more are left (nil for none).
func nextBlockRows(rows *sql.Rows, n int) (*blockRows, error) {
	r := &blockRows{ts: make([]protocol.TimestampBytes, 0, n), pfx: make([]protocol.Fingerprint, 1, n+1)}
	var traw, fraw []byte
	for len(r.ts) < n && rows.Next() {
		if err := rows.Scan(&traw, &fraw); err != nil {
			return nil, fmt.Errorf("sqlstore: verify: %w", err)
		}
		var t protocol.TimestampBytes
		var f protocol.Fingerprint
		copy(t[:], traw)
		copy(f[:], fraw)
		r.ts = append(r.ts, t)
		r.pfx = append(r.pfx, r.pfx[len(r.pfx)-1].Xor(f))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: verify: %w", err)
	}
	if len(r.ts) == 0 {
		return nil, nil
	}
	return r, nil
}

// rebuildOwner replaces the owner's block index and usage with what its
// rows make, in one write transaction, and drops the owner's cached block
// rows; the caller forgets a loaded index of the owner.
func (s *Store) rebuildOwner(ctx context.Context, owner protocol.OwnerID) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: rebuild: %w", err)
	}
	defer tx.Rollback()
	if _, err := s.bumpGen(ctx, tx, owner); err != nil {
		return err
	}
	for _, q := range []string{`delete from evolu_block where owner = ?`, `delete from evolu_block_rows where owner = ?`} {
		if _, err := tx.ExecContext(ctx, s.rebind(q), owner[:]); err != nil {
			return fmt.Errorf("sqlstore: rebuild: %w", err)
		}
	}
	if err := s.rebuildBlocks(ctx, tx, owner); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`update evolu_owner set stored_bytes =
		(select coalesce(sum(length(change)), 0) from evolu_change where owner = ?) where owner = ?`), owner[:], owner[:]); err != nil {
		return fmt.Errorf("sqlstore: rebuild: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: rebuild: %w", err)
	}
	s.rows.dropOwner(owner)
	return nil
}

// rebuildBlocks cuts the owner's rows into full blocks and writes them,
// reading rebuildChunk blocks' rows at a time.
func (s *Store) rebuildBlocks(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID) error {
	const rebuildChunk = 64
	var after []byte // greatest timestamp done; nil before the first
	for {
		q, args := `select t, fp from evolu_change where owner = ? order by t limit ?`, []any{owner[:], rebuildChunk * maxBlock}
		if after != nil {
			q, args = `select t, fp from evolu_change where owner = ? and t > ? order by t limit ?`, []any{owner[:], after, rebuildChunk * maxBlock}
		}
		rows, err := tx.QueryContext(ctx, s.rebind(q), args...)
		if err != nil {
			return fmt.Errorf("sqlstore: rebuild: %w", err)
		}
		var blocks []*blockRows
		for {
			r, err := nextBlockRows(rows, maxBlock)
			if err != nil {
				rows.Close()
				return err
			}
			if r == nil {
				break
			}
			blocks = append(blocks, r)
		}
		rows.Close()
		if len(blocks) == 0 {
			return nil
		}
		for _, r := range blocks {
			if err := s.insertBlock(ctx, tx, owner, r); err != nil {
				return err
			}
		}
		last := blocks[len(blocks)-1]
		after = append([]byte(nil), last.ts[len(last.ts)-1][:]...)
	}
}

func (s *Store) insertBlock(ctx context.Context, tx *sql.Tx, owner protocol.OwnerID, r *blockRows) error {
	n := len(r.ts)
	if _, err := tx.ExecContext(ctx, s.rebind(`insert into evolu_block (owner, start, n, fp) values (?, ?, ?, ?)`),
		owner[:], r.ts[0][:], n, r.pfx[n][:]); err != nil {
		return fmt.Errorf("sqlstore: rebuild: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`insert into evolu_block_rows (owner, start, rows) values (?, ?, ?)`),
		owner[:], r.ts[0][:], r.pack()); err != nil {
		return fmt.Errorf("sqlstore: rebuild: %w", err)
	}
	return nil
}

// repair rebuilds the index of owner from its rows after a query found
// them disagreeing (cause), and forgets x (held by the caller). The error
// returned wraps ErrIndexDamaged and fails this one query.
func (s *Store) repair(ctx context.Context, owner protocol.OwnerID, x *ownerIndex, cause error) error {
	s.forget(owner, x)
	if err := s.rebuildOwner(ctx, owner); err != nil {
		return fmt.Errorf("%w: %v; rebuilding failed: %w", ErrIndexDamaged, cause, err)
	}
	return fmt.Errorf("%w: %v", ErrIndexDamaged, cause)
}
