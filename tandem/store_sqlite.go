//go:build !js && !wasip1

package tandem

import (
	"context"

	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// deviceDB is the device's SQLite store (see deviceStore).
type deviceDB = devstore.DB

func openDeviceDB(ctx context.Context, path string) (*deviceDB, error) {
	return devstore.Open(ctx, path)
}
