package sqlstore

import (
	"errors"
	"fmt"
	"os"

	"github.com/ferry-sync/ferry/internal/filelock"
)

// lockFile takes an exclusive, non-blocking lock on the database file
// itself (docs/decisions/evolu-shared-database.md): flock(2) on Unix,
// LockFileEx on Windows (internal/filelock), neither of which disturbs
// SQLite's own locking; the lock is released when the returned file is
// closed or the process ends, however it ends.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	if err := filelock.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrLocked) {
			return nil, &LockedError{Path: path}
		}
		return nil, fmt.Errorf("sqlstore: lock %s: %w", path, err)
	}
	return f, nil
}
