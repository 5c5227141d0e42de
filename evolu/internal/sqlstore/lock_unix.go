//go:build unix

package sqlstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock(2) on the database file
// itself (docs/decisions/evolu-shared-database.md). flock locks are
// independent of the POSIX record locks SQLite takes on the same file, so
// they do not disturb SQLite's own locking; the lock is released when the
// returned file is closed or the process ends, however it ends.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path}
		}
		return nil, fmt.Errorf("sqlstore: lock %s: %w", path, err)
	}
	return f, nil
}
