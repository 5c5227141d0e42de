package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestTryLockExcludesAnotherProcess: while one process holds the lock, a
// second one (this test binary run again) gets ErrLocked; once it is
// released, the second one gets it.
func TestTryLockExcludesAnotherProcess(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no file locks on this target")
	}
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := TryLock(f); err != nil {
		t.Fatal(err)
	}
	if out, err := other(t, path); err != nil || out != "locked" {
		t.Fatalf("second process while held: %q %v", out, err)
	}
	if err := Unlock(f); err != nil {
		t.Fatal(err)
	}
	if out, err := other(t, path); err != nil || out != "free" {
		t.Fatalf("second process after unlock: %q %v", out, err)
	}
}

func other(t *testing.T, path string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLock$")
	cmd.Env = append(os.Environ(), "FILELOCK_HELPER="+path)
	out, err := cmd.Output()
	return string(out), err
}

// TestHelperLock is the second process of TestTryLockExcludesAnotherProcess.
func TestHelperLock(t *testing.T) {
	path := os.Getenv("FILELOCK_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	switch err := TryLock(f); {
	case errors.Is(err, ErrLocked):
		os.Stdout.WriteString("locked")
	case err == nil:
		os.Stdout.WriteString("free")
	default:
		t.Fatal(err)
	}
	os.Exit(0)
}
