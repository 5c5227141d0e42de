package tandem

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// A damaged device says so (issue 23 point 5, defect 7).

// damagedDevice makes a device with one synced and one unsynced edit and
// closes it; it returns the directory, the backup key, the collection and
// the unsynced record.
func damagedDevice(t *testing.T) (dir, key string, c CollectionID, rec RecordID, opts Options) {
	t.Helper()
	srv := memhubServer(t)
	opts = Options{Name: "Jesper", Store: memStore(srv), Logger: quiet()}
	dir = filepath.Join(t.TempDir(), "dev")
	d := openT(t, dir, opts)
	c, err := d.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, d)
	if rec, err = d.NewRecord(c, map[string][]byte{"title": []byte("not synced yet")}); err != nil {
		t.Fatal(err)
	}
	key = d.ShowBackupKey()
	d.Close()
	return dir, key, c, rec, opts
}

// A deleted secret is never replaced by a new one; Restore with the
// user's backup key repairs the directory and keeps the unsynced edit.
func TestMissingSecretRepairedByRestore(t *testing.T) {
	dir, key, c, rec, opts := damagedDevice(t)
	secret := filepath.Join(dir, secretFile)
	if err := os.Remove(secret); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), dir, opts)
	if CodeOf(err) != CodeDamaged || !strings.Contains(err.Error(), secret) {
		t.Fatalf("Open without the secret: %v, want CodeDamaged naming %s", err, secret)
	}
	if _, err := os.Stat(secret); !os.IsNotExist(err) {
		t.Fatal("Open wrote a new secret")
	}
	var other [32]byte
	other[0] = 1
	if _, err := Restore(t.Context(), dir, suite.BackupKey(other), opts); CodeOf(err) != CodeWrongIdentity {
		t.Fatalf("Restore with another user's key: %v, want CodeWrongIdentity", err)
	}
	if _, err := os.Stat(secret); !os.IsNotExist(err) {
		t.Fatal("Restore with another user's key wrote a secret")
	}
	d, err := Restore(t.Context(), dir, key, opts)
	if err != nil {
		t.Fatalf("Restore with the user's key: %v", err)
	}
	defer d.Close()
	r, err := d.Record(c, rec)
	if err != nil || r.Get("title") != "not synced yet" {
		t.Fatalf("the unsynced edit after the repair: %+v, %v", r, err)
	}
	if rep := syncT(t, d); rep.Published == 0 {
		t.Fatalf("the unsynced edit was not published after the repair: %+v", rep)
	}
}

// An empty or missing device.db beside the secret is an error naming the
// file, never a fresh device.
func TestEmptyDatabaseIsAnError(t *testing.T) {
	for _, how := range []string{"empty", "missing"} {
		t.Run(how, func(t *testing.T) {
			dir, _, _, _, opts := damagedDevice(t)
			db := filepath.Join(dir, dbFile)
			for _, suffix := range []string{"-wal", "-shm"} {
				os.Remove(db + suffix)
			}
			var err error
			if how == "empty" {
				err = os.Truncate(db, 0)
			} else {
				err = os.Remove(db)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(t.Context(), dir, opts)
			if CodeOf(err) != CodeDamaged || !strings.Contains(err.Error(), db) {
				t.Fatalf("Open with an %s device.db: %v, want CodeDamaged naming %s", how, err, db)
			}
		})
	}
}

// A byte flipped in a stored value on disk: the value is never shown, the
// device says so, reads it again from the hub, and its later edits of the
// record are accepted by the user's other devices.
func TestFlippedByteInStoredValue(t *testing.T) {
	srv := memhubServer(t)
	opts := Options{Name: "Jesper", Store: memStore(srv), Logger: quiet()}
	dir := filepath.Join(t.TempDir(), "a")
	a := openT(t, dir, opts)
	c, err := a.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := a.NewRecord(c, map[string][]byte{"title": []byte("Paint the door")})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, a)
	b, err := Restore(t.Context(), filepath.Join(t.TempDir(), "b"), a.ShowBackupKey(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	syncT(t, b)
	a.Close()
	// Flip one byte of the value where it is stored.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec("UPDATE writes SET stored = replace(stored, CAST('Paint the door' AS BLOB), CAST('Paint the doos' AS BLOB)) WHERE instr(stored, CAST('Paint the door' AS BLOB)) > 0")
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("flipping a byte: %v, %d rows", err, n)
	}
	db.Close()

	a = openT(t, dir, opts)
	defer a.Close()
	if n := a.DamagedOnOpen(); n != 1 {
		t.Fatalf("DamagedOnOpen = %d, want 1", n)
	}
	if r, _ := a.Record(c, rec); r.Get("title") == "Paint the doos" {
		t.Fatal("the damaged value is shown")
	}
	syncT(t, a)
	if r, _ := a.Record(c, rec); r.Get("title") != "Paint the door" {
		t.Fatalf("after a sync the value is %q, want it read again from the hub", r.Get("title"))
	}
	if err := a.SetString(c, rec, "qty", "2"); err != nil {
		t.Fatal(err)
	}
	syncT(t, a)
	rep := syncT(t, b)
	if r, _ := b.Record(c, rec); rep.Rejected != 0 || r.Get("qty") != "2" || r.Get("title") != "Paint the door" {
		t.Fatalf("the other device after the edit: %+v, %+v", rep, r)
	}
	// The damaged row and the copy read again are two rows until Close
	// prunes the earlier (devstore schema 5): the next open finds nothing
	// damaged, one row per write.
	a.Close()
	a = openT(t, dir, opts)
	defer a.Close()
	if n := a.DamagedOnOpen(); n != 0 {
		t.Fatalf("DamagedOnOpen after a Close = %d, want 0: the damaged row outlived its good copy", n)
	}
	if r, _ := a.Record(c, rec); r.Get("title") != "Paint the door" || r.Get("qty") != "2" {
		t.Fatalf("after reopening: %+v", r)
	}
	var rows, ids int
	if err := a.db.SQL().QueryRow("SELECT count(*), count(DISTINCT wid) FROM writes").Scan(&rows, &ids); err != nil || rows != ids {
		t.Fatalf("%d write rows for %d write IDs (%v), want one each", rows, ids, err)
	}
}

// TestFlippedByteInUnsentMessage: an unsent message whose stored bytes
// changed on disk is reported and never sent (before schema 3 it was sent
// as it was read: junk to everyone else, and nothing said on this device).
func TestFlippedByteInUnsentMessage(t *testing.T) {
	srv := memhubServer(t)
	opts := Options{Name: "Jesper", Store: memStore(srv), Logger: quiet()}
	dir := filepath.Join(t.TempDir(), "dev")
	a := openT(t, dir, opts)
	if _, err := a.NewCollection("House"); err != nil { // not synced: its messages wait in the outbox
		t.Fatal(err)
	}
	a.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	var env []byte
	if err := db.QueryRow("SELECT seq, envelope FROM outbox WHERE envelope IS NOT NULL ORDER BY seq LIMIT 1").Scan(&seq, &env); err != nil {
		t.Fatalf("no unsent envelope to damage: %v", err)
	}
	env[len(env)/2] ^= 1
	if _, err := db.Exec("UPDATE outbox SET envelope = ? WHERE seq = ?", env, seq); err != nil {
		t.Fatal(err)
	}
	db.Close()

	a = openT(t, dir, opts)
	defer a.Close()
	if n := a.DamagedOnOpen(); n != 1 {
		t.Fatalf("DamagedOnOpen = %d, want 1", n)
	}
	syncT(t, a)
	syncT(t, a)
	s, err := memStore(srv)(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bodies, err := s.Fetch(t.Context(), hubIDs(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) == 0 {
		t.Fatal("nothing was sent at all: the test shows nothing")
	}
	for _, b := range bodies {
		if bytes.Equal(b.Envelope, env) {
			t.Fatal("the damaged message was sent")
		}
	}
	// Its row is gone: opening again finds nothing damaged.
	a.Close()
	a = openT(t, dir, opts)
	if n := a.DamagedOnOpen(); n != 0 {
		t.Fatalf("DamagedOnOpen after the drop was committed = %d, want 0", n)
	}
}
