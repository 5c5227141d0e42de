package tandem

import (
	"context"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// deviceStore is what a Device needs of its database: the seam between
// the device and its two stores, chosen by build tags — devstore's SQLite
// file (store_sqlite.go) wherever modernc.org/sqlite builds, purestore's
// pure-Go log (store_pure.go) on js/wasm and wasip1. deviceDB is the
// chosen store's type; both files check it against this interface.
// docs/decisions/platforms-builds.md.
type deviceStore interface {
	client.Journal
	Meta(ctx context.Context, k string) ([]byte, error)
	SetMeta(ctx context.Context, kv map[string][]byte) error
	Scanning(ctx context.Context, on bool) error
	Source() client.Source
	Prune(ctx context.Context, keep func(id [32]byte) bool) (int, error)
	WriteRows(ctx context.Context) (int, error)
	Close() error
}

var _ deviceStore = (*deviceDB)(nil)
