package devstore

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// TestOutboxFromSchema2: a database of schema 2 opens as schema 3; its
// outbox rows, which have no checksum, are read as they are, and rows
// written since are checked: one changed on disk is left out and listed.
func TestOutboxFromSchema2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for v := range 2 {
		if _, err := raw.Exec(migrations[v]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = 2", appID)); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("INSERT INTO outbox(seq, channel, envelope, rec, dirty, kind, writes, auto) VALUES(1, 'ch', x'0102', zeroblob(16), 0, 1, NULL, 0)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ver int
	if err := db.db.QueryRow("PRAGMA user_version").Scan(&ver); err != nil || ver != 3 {
		t.Fatalf("schema %d (%v), want 3", ver, err)
	}
	for _, o := range []client.SavedOut{
		{Seq: 2, Channel: "ch", Envelope: []byte("sealed"), Kind: 1},
		{Seq: 3, Channel: "ch", Rec: [16]byte{7}, Dirty: true},
	} {
		if err := db.Commit(&client.Delta{OutAdd: []client.SavedOut{o}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.db.Exec("UPDATE outbox SET envelope = x'736561' || x'6d' || x'6564' WHERE seq = 2"); err != nil { // "seamed"
		t.Fatal(err)
	}
	src := db.Source().(*source)
	var got []uint64
	if err := src.Outbox(t.Context(), func(o client.SavedOut) error {
		got = append(got, o.Seq)
		if o.Seq == 1 && !bytes.Equal(o.Envelope, []byte{1, 2}) {
			t.Errorf("the schema-2 row read back as %x", o.Envelope)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("read back %v, want [1 3]", got)
	}
	if d := src.DamagedOutbox(); len(d) != 1 || d[0] != 2 {
		t.Errorf("DamagedOutbox = %v, want [2]", d)
	}
}
