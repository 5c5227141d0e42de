package relay

import (
	"context"
	"fmt"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
)

// OwnerUsage is what one owner stores in a relay's database.
type OwnerUsage struct {
	OwnerID     protocol.OwnerID
	Changes     int64 // stored messages
	StoredBytes int64 // bytes of their changes, what quotas count
	HasWriteKey bool
}

// openAdmin opens the relay database at db for an operator's command:
// SQLite without the relay's lock (reads are safe while it runs) unless
// exclusive, or Postgres.
func openAdmin(ctx context.Context, db string, exclusive bool) (*sqlstore.Store, error) {
	cfg := sqlstore.Config{Kind: sqlstore.KindRelay, MustExist: true, Exclusive: exclusive}
	if isPostgres(db) {
		st, err := sqlstore.OpenPostgres(ctx, db, cfg)
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		return st, nil
	}
	st, err := sqlstore.Open(ctx, db, cfg, "")
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return st, nil
}

// ListOwners lists the owners stored in the relay database db (a SQLite
// file, also while its relay runs, or a postgres:// URL), by OwnerId bytes.
func ListOwners(ctx context.Context, db string) ([]OwnerUsage, error) {
	st, err := openAdmin(ctx, db, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	us, err := st.Owners(ctx)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	out := make([]OwnerUsage, len(us))
	for i, u := range us {
		out[i] = OwnerUsage{OwnerID: u.Owner, Changes: u.Changes, StoredBytes: u.StoredBytes, HasWriteKey: u.HasWriteKey}
	}
	return out, nil
}

// DeleteOwner deletes everything the owner stores in the relay database
// db, and its write key, and reports whether there was anything. A SQLite
// database must not be in use by a relay (an error matching
// ErrDatabaseInUse); relays on a Postgres database keep running and see
// the deletion at the owner's next request.
func DeleteOwner(ctx context.Context, db string, owner protocol.OwnerID) (bool, error) {
	st, err := openAdmin(ctx, db, true)
	if err != nil {
		return false, err
	}
	defer st.Close()
	ok, err := st.DeleteOwner(ctx, owner)
	if err != nil {
		return false, fmt.Errorf("relay: %w", err)
	}
	return ok, nil
}
