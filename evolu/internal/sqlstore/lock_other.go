//go:build !unix

package sqlstore

import (
	"fmt"
	"os"
)

// lockFile opens the database file; other systems than Unix take no lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	return f, nil
}
