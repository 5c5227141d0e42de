// Package filelock takes an exclusive, non-blocking lock on an open file,
// held until it is unlocked or the file is closed (or the process ends,
// however it ends): flock(2) on Unix, LockFileEx on Windows. On targets
// without file locks (js/wasm, wasip1) TryLock succeeds without locking:
// those run one program per store (a browser tab's storage, a WASI
// sandbox's directory). docs/decisions/platforms-builds.md.
package filelock

import "errors"

// ErrLocked means another process holds the lock.
var ErrLocked = errors.New("filelock: another process holds the lock")
