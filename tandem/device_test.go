package tandem

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func memStore(srv *memhub.Server) func(context.Context) (hub.Store, error) {
	return func(context.Context) (hub.Store, error) { return srv.Open(), nil }
}

func openT(t *testing.T, dir string, opts Options) *Device {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	d, err := Open(t.Context(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return d
}

func TestRestartIsTheSameDevice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	srv := memhub.NewServer()
	d := openT(t, dir, Options{Name: "Jesper", Store: memStore(srv)})
	key, ok := d.BackupKey()
	if !ok || key == "" {
		t.Fatal("first run gave no backup key")
	}
	devID, uid := d.DeviceID(), d.UserID()
	c, err := d.NewCollection("Groceries")
	if err != nil {
		t.Fatal(err)
	}
	milk, err := d.NewRecord(c, map[string][]byte{"title": []byte("Milk")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// An edit that is never synced must survive the restart.
	if err := d.SetString(c, milk, "qty", "2"); err != nil {
		t.Fatal(err)
	}
	d.Close()

	d = openT(t, dir, Options{Store: memStore(srv)})
	defer d.Close()
	if _, ok := d.BackupKey(); ok {
		t.Fatal("backup key handed out again on a later open")
	}
	if d.DeviceID() != devID || d.UserID() != uid {
		t.Fatal("a restart changed the device ID or the user")
	}
	r, err := d.Record(c, milk)
	if err != nil {
		t.Fatal(err)
	}
	if r.Get("title") != "Milk" || r.Get("qty") != "2" {
		t.Fatalf("record after restart: %+v", r)
	}
	if r.Fields["title"].Values[0].Author.Name != "Jesper" || r.Fields["title"].Values[0].Author.User != uid {
		t.Fatalf("author: %+v", r.Fields["title"].Values[0].Author)
	}
	if st := d.Status(); st.Pending != 1 {
		t.Fatalf("pending after restart = %d, want 1 (the unsynced qty)", st.Pending)
	}
	rep, err := d.Sync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fetched != 0 {
		t.Fatalf("a restart downloaded %d messages again", rep.Fetched)
	}
	if rep.Published != 1 {
		t.Fatalf("published %d, want the one pending edit", rep.Published)
	}
}

func TestOpenOfflineSyncsLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	srv := memhub.NewServer()
	up := false
	store := func(ctx context.Context) (hub.Store, error) {
		if !up {
			return nil, &os.SyscallError{Syscall: "connect", Err: errors.New("connection refused")}
		}
		return srv.Open(), nil
	}
	d := openT(t, dir, Options{Store: store})
	defer d.Close()
	c, err := d.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.NewRecord(c, map[string][]byte{"title": []byte("Paint")}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Sync(t.Context()); CodeOf(err) != CodeOffline {
		t.Fatalf("Sync with the hub down = %v, want CodeOffline", err)
	}
	if !d.Status().Offline {
		t.Fatal("status not offline")
	}
	up = true
	if _, err := d.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := d.Status(); st.Offline || st.Pending != 0 || st.LastSync.IsZero() {
		t.Fatalf("status after the hub came back: %+v", st)
	}
	// A second device of the user finds the list.
	e, err := Restore(t.Context(), filepath.Join(t.TempDir(), "dev2"), d.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.DeviceID() == d.DeviceID() {
		t.Fatal("restored device kept the same device ID")
	}
	if _, err := e.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Records(c)
	if err != nil || len(rs) != 1 || rs[0].Get("title") != "Paint" {
		t.Fatalf("second device: %v %+v", err, rs)
	}
}

func TestSecondProcessIsLockedOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	d := openT(t, dir, Options{})
	defer d.Close()
	if _, err := Open(t.Context(), dir, Options{}); CodeOf(err) != CodeLocked {
		t.Fatalf("second Open = %v, want CodeLocked", err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	d := openT(t, dir, Options{})
	if _, err := d.db.SQL().Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := Open(t.Context(), dir, Options{}); CodeOf(err) != CodeNewerVersion {
		t.Fatalf("Open of a newer schema = %v, want CodeNewerVersion", err)
	}
}

func TestNoMkdirOfMissingParents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing", "dev")
	if _, err := Open(t.Context(), dir, Options{}); CodeOf(err) != CodeInvalid {
		t.Fatalf("Open under a missing parent = %v, want CodeInvalid", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Open created the missing parent")
	}
}
