package wasmcheck

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ferry-sync/ferry/tandem"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// TestDeviceOnThisTarget: a device writes a record and syncs, a second
// device of the user restored from the backup key reads it, an edit made
// offline survives closing and reopening the device (it was journalled,
// not only held in memory) and reaches the other device on the next sync.
func TestDeviceOnThisTarget(t *testing.T) {
	t.Logf("GOOS=%s GOARCH=%s", runtime.GOOS, runtime.GOARCH)
	ctx := context.Background()
	tmp := t.TempDir()
	srv := memhub.NewServer()
	opts := tandem.Options{Name: "Jesper", Store: func(context.Context) (hub.Store, error) { return srv.Open(), nil }}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sync := func(d *tandem.Device) {
		t.Helper()
		_, err := d.Sync(ctx)
		must(err)
	}

	phoneDir := filepath.Join(tmp, "phone")
	phone, err := tandem.Open(ctx, phoneDir, opts)
	must(err)
	list, err := phone.NewCollection("Groceries")
	must(err)
	milk, err := phone.NewRecord(list, map[string][]byte{"title": []byte("Milk")})
	must(err)
	sync(phone)

	laptop, err := tandem.Restore(ctx, filepath.Join(tmp, "laptop"), phone.ShowBackupKey(), opts)
	must(err)
	defer laptop.Close()
	sync(laptop)
	if rec, err := laptop.Record(list, milk); err != nil || rec.Get("title") != "Milk" {
		t.Fatalf("the restored device reads %v %v", rec, err)
	}

	must(phone.SetString(list, milk, "qty", "2")) // offline: not synced
	must(phone.Close())
	if fi, err := os.Stat(filepath.Join(phoneDir, "device.db")); err != nil || fi.Size() == 0 {
		t.Fatalf("the device's store file: %v %v", fi, err)
	}
	phone, err = tandem.Open(ctx, phoneDir, opts)
	must(err)
	defer phone.Close()
	if rec, err := phone.Record(list, milk); err != nil || rec.Get("qty") != "2" || rec.Get("title") != "Milk" {
		t.Fatalf("after reopening, the device reads %v %v", rec, err)
	}
	sync(phone)
	sync(laptop)
	if rec, err := laptop.Record(list, milk); err != nil || rec.Get("qty") != "2" {
		t.Fatalf("the edit made before reopening reached the other device as %v %v", rec, err)
	}
}
