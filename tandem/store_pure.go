//go:build js || wasip1

package tandem

import (
	"context"

	"github.com/ferry-sync/ferry/tandem/internal/purestore"
)

// deviceDB is the device's pure-Go store where SQLite does not build
// (see deviceStore).
type deviceDB = purestore.DB

func openDeviceDB(ctx context.Context, path string) (*deviceDB, error) {
	return purestore.Open(ctx, path)
}
