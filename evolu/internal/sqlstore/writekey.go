package sqlstore

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

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
	_, err = s.db.ExecContext(ctx, s.rebind(`insert into evolu_owner (owner, write_key) values (?, ?)
		on conflict (owner) do update set write_key = excluded.write_key where evolu_owner.write_key is null`), owner[:], key[:])
	if err != nil {
		return false, fmt.Errorf("sqlstore: store write key: %w", err)
	}
	// A concurrent first key may have won: compare with what is stored.
	if err := s.scanRow(ctx, `select write_key from evolu_owner where owner = ?`, []any{owner[:]}, &stored); err != nil {
		return false, fmt.Errorf("sqlstore: read write key: %w", err)
	}
	return subtle.ConstantTimeCompare(stored, key[:]) == 1, nil
}
