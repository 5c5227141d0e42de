//go:build !js && !wasip1

package devstore

// The "sqlite" database/sql driver, C translated to Go: it does not build
// for js/wasm or wasip1, where the device uses tandem/internal/purestore
// instead (docs/decisions/platforms-builds.md).
import _ "modernc.org/sqlite"
