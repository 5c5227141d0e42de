//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows locks are mandatory: a locked range cannot be read or written
// through another handle, even in the same process. So the lock covers one
// byte at an offset no file reaches, never a byte SQLite reads or locks
// (its own locks sit at 1 GiB), and a lock on a database file does not
// stop SQLite from using it.
const (
	lockOffLow  = 0xFFFFFFFF
	lockOffHigh = 0x7FFFFFFF
)

// TryLock takes an exclusive LockFileEx lock on f, or answers ErrLocked.
func TryLock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffLow, OffsetHigh: lockOffHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrLocked
	}
	return err
}

// Unlock releases the lock TryLock took.
func Unlock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffLow, OffsetHigh: lockOffHigh}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
