package sqlstore

import (
	"context"
	"fmt"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// OwnerUsage is what one owner stores.
type OwnerUsage struct {
	Owner       protocol.OwnerID
	Changes     int64 // stored messages
	StoredBytes int64 // bytes of their changes, what the quota counts
	HasWriteKey bool
}

// Owners lists the owners that store something or registered a write key,
// by OwnerId bytes.
func (s *Store) Owners(ctx context.Context) ([]OwnerUsage, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`select o.owner, o.stored_bytes, o.write_key is not null,
		coalesce((select sum(b.n) from evolu_block b where b.owner = o.owner), 0)
		from evolu_owner o where o.stored_bytes > 0 or o.write_key is not null order by o.owner`))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: owners: %w", err)
	}
	defer rows.Close()
	var out []OwnerUsage
	for rows.Next() {
		var u OwnerUsage
		var raw []byte
		if err := rows.Scan(&raw, &u.StoredBytes, &u.HasWriteKey, &u.Changes); err != nil {
			return nil, fmt.Errorf("sqlstore: owners: %w", err)
		}
		copy(u.Owner[:], raw)
		out = append(out, u)
	}
	return out, rows.Err()
}

// DeleteOwner deletes everything the owner stores and its write key (a
// later first write registers a new one). It reports whether there was
// anything to delete. Other processes on the database see the deletion by
// the owner's generation, which it increments.
func (s *Store) DeleteOwner(ctx context.Context, owner protocol.OwnerID) (bool, error) {
	x, err := s.index(ctx, owner)
	if err != nil {
		return false, err
	}
	defer x.mu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlstore: delete owner: %w", err)
	}
	defer tx.Rollback()
	if _, err := s.bumpGen(ctx, tx, owner); err != nil {
		return false, err
	}
	var existed bool
	if err := tx.QueryRowContext(ctx, s.rebind(`select stored_bytes > 0 or write_key is not null from evolu_owner where owner = ?`), owner[:]).Scan(&existed); err != nil {
		return false, fmt.Errorf("sqlstore: delete owner: %w", err)
	}
	for _, q := range []string{`delete from evolu_change where owner = ?`,
		`delete from evolu_block where owner = ?`, `delete from evolu_block_rows where owner = ?`,
		`update evolu_owner set stored_bytes = 0, write_key = null where owner = ?`} {
		if _, err := tx.ExecContext(ctx, s.rebind(q), owner[:]); err != nil {
			return false, fmt.Errorf("sqlstore: delete owner: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlstore: delete owner: %w", err)
	}
	s.forget(owner, x)
	s.rows.dropOwner(owner)
	return existed, nil
}
