//go:build !unix && !windows

package filelock

import "os"

// TryLock takes no lock: this target has no file locks (see the package
// comment).
func TryLock(*os.File) error { return nil }

// Unlock does nothing.
func Unlock(*os.File) error { return nil }
