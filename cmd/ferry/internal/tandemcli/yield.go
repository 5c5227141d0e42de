package tandemcli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A tandem device is open in one process at a time. ferry sync --watch
// keeps it open, so another ferry command on the same profile asks it to
// step aside: it writes DIR/yield.PID while it waits for and uses the
// device, and the watcher closes the device while such a file exists
// (docs/decisions/cli-profiles.md).
const (
	yieldPrefix = "yield."
	yieldStale  = time.Minute // a request older than this is from a process that died
)

// requestYield writes this process's request; the returned func removes it.
func requestYield(dir string) func() {
	p := filepath.Join(dir, fmt.Sprintf("%s%d", yieldPrefix, os.Getpid()))
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return func() {}
	}
	return func() { os.Remove(p) }
}

// yieldRequested reports whether another process waits for the device.
func yieldRequested(dir string) bool {
	ms, _ := filepath.Glob(filepath.Join(dir, yieldPrefix+"*"))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil && time.Since(fi.ModTime()) < yieldStale {
			return true
		}
	}
	return false
}
