package tandem

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// TestFullDisk: on a small tmpfs, writes fail with CodeStorage once the disk
// is full, and every write that returned nil is there after space is freed
// and the device reopened.
func TestFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		if realtest.Required() {
			t.Fatalf("mount tmpfs (the test needs root): %v", err)
		}
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "dev")
	d := openT(t, dir, Options{})
	c, err := d.NewCollection("Big")
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 8<<10)
	var ok []RecordID
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ {
		var id RecordID
		id, werr = d.NewRecord(c, map[string][]byte{"blob": big})
		if werr == nil {
			ok = append(ok, id)
		}
	}
	if werr == nil {
		t.Fatal("1000 writes of 8 KiB fit a 1 MiB disk")
	}
	if CodeOf(werr) != CodeStorage {
		t.Fatalf("write on a full disk = %v, want CodeStorage", werr)
	}
	t.Logf("%d writes before the disk was full: %v", len(ok), werr)
	d.Close()
	// Free space the way a user would: the disk grows (remount bigger).
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=8m"); err != nil {
		t.Fatal(err)
	}
	d = openT(t, dir, Options{})
	defer d.Close()
	for _, id := range ok {
		if _, err := d.Record(c, id); err != nil {
			t.Fatalf("write %s that returned nil is gone: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, secretFile)); err != nil {
		t.Fatal(err)
	}
}
