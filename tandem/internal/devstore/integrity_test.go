package devstore

import (
	"bytes"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// oldSchema makes a database of schema version v, as that version of
// this package left it, and returns its path and a raw handle to fill it.
func oldSchema(t *testing.T, v int) (string, *sql.DB) {
	path := filepath.Join(t.TempDir(), "device.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for i := range v {
		if _, err := raw.Exec(migrations[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", appID, v)); err != nil {
		t.Fatal(err)
	}
	return path, raw
}

// openCurrent opens path, which it must bring to Version.
func openCurrent(t *testing.T, path string) *DB {
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	var ver int
	if err := db.db.QueryRow("PRAGMA user_version").Scan(&ver); err != nil || ver != Version {
		db.Close()
		t.Fatalf("schema %d (%v), want %d", ver, err, Version)
	}
	return db
}

// TestOutboxFromSchema2: a database of schema 2 opens at Version; its
// outbox rows, which have no checksum, are read as they are, and rows
// written since are checked: one changed on disk is left out and listed.
func TestOutboxFromSchema2(t *testing.T) {
	path, raw := oldSchema(t, 2)
	if _, err := raw.Exec("INSERT INTO outbox(seq, channel, envelope, rec, dirty, kind, writes, auto) VALUES(1, 'ch', x'0102', zeroblob(16), 0, 1, NULL, 0)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db := openCurrent(t, path)
	defer db.Close()
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

// TestWritesFromSchema3: a database of schema 3 (writes clustered by
// their IDs) opens at Version with every write row kept as it was — its
// checksum too, so a row damaged before the migration is still refused —
// and, from schema 5 on, a write stored again adds a row (Prune keeps the
// later).
func TestWritesFromSchema3(t *testing.T) {
	path, raw := oldSchema(t, 3)
	home, other := [16]byte{1}, [16]byte{2}
	rows := []struct {
		id     [32]byte
		scope  [16]byte
		stored []byte
		sum    []byte
	}{
		{[32]byte{9}, home, []byte("nine"), rowSum([32]byte{9}, home, []byte("nine"))},
		{[32]byte{3}, home, []byte("three"), rowSum([32]byte{3}, home, []byte("thre3"))}, // damaged
		{[32]byte{5}, other, []byte("five"), rowSum([32]byte{5}, other, []byte("five"))},
		{[32]byte{7}, other, []byte("seven"), nil}, // from before checksums
	}
	for _, r := range rows {
		if _, err := raw.Exec("INSERT INTO writes(wid, scope, stored, crc) VALUES(?, ?, ?, ?)", r.id[:], r.scope[:], r.stored, r.sum); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	db := openCurrent(t, path)
	defer db.Close()
	read := func() map[[32]byte]string {
		src := db.Source().(*source)
		got := map[[32]byte]string{}
		if err := src.Writes(t.Context(), home, func(b []byte, id [32]byte) error {
			got[id] = string(b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := src.OtherWrites(t.Context(), home, func(_ [16]byte, b []byte, id [32]byte) error {
			got[id] = string(b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if d := src.DamagedWrites(); len(d) != 1 || d[0] != ([32]byte{3}) {
			t.Errorf("DamagedWrites = %x, want the one damaged row", d)
		}
		return got
	}
	want := map[[32]byte]string{{9}: "nine", {5}: "five", {7}: "seven"}
	if got := read(); !maps.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
	var n int
	if err := db.db.QueryRow("SELECT count(*) FROM writes").Scan(&n); err != nil || n != 4 {
		t.Fatalf("%d rows after the migration (%v), want 4", n, err)
	}
	if _, err := db.db.Exec("INSERT INTO writes(wid, scope, stored) VALUES(?, ?, ?)", make([]byte, 32), home[:], []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.Exec("INSERT INTO writes(wid, scope, stored) VALUES(?, ?, ?)", make([]byte, 32), home[:], []byte("y")); err != nil {
		t.Fatalf("a second row with the same write ID: %v", err)
	}
	if _, err := db.Prune(t.Context(), func([32]byte) bool { return true }); err != nil {
		t.Fatal(err)
	}
	var last string
	if err := db.db.QueryRow("SELECT stored FROM writes WHERE wid = ?", make([]byte, 32)).Scan(&last); err != nil || last != "y" {
		t.Fatalf("after Prune the write reads %q (%v), want the later row", last, err)
	}
}

// TestWritesFromSchema4: a database of schema 4 opens at Version with its
// write rows in the same arrival order (seq), so a write stored again after
// the migration is the later row, the one Prune keeps.
func TestWritesFromSchema4(t *testing.T) {
	path, raw := oldSchema(t, 4)
	home := [16]byte{1}
	for _, id := range []byte{9, 3, 5} {
		stored := []byte{id, id}
		if _, err := raw.Exec("INSERT INTO writes(wid, scope, stored, crc) VALUES(?, ?, ?, ?)", []byte{31: id}, home[:], stored, rowSum([32]byte{31: id}, home, stored)); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db := openCurrent(t, path)
	defer db.Close()
	var order []byte
	if err := db.Source().Writes(t.Context(), home, func(b []byte, id [32]byte) error {
		order = append(order, id[31])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(order, []byte{9, 3, 5}) {
		t.Fatalf("read back in the order %v, want [9 3 5]", order)
	}
	again := []byte("again")
	if _, err := db.db.Exec("INSERT INTO writes(wid, scope, stored, crc) VALUES(?, ?, ?, ?)", []byte{31: 9}, home[:], again, rowSum([32]byte{31: 9}, home, again)); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Prune(t.Context(), func([32]byte) bool { return true }); err != nil || n != 1 {
		t.Fatalf("Prune deleted %d rows (%v), want the earlier row of write 9", n, err)
	}
	var got []byte
	if err := db.db.QueryRow("SELECT stored FROM writes WHERE wid = ?", []byte{31: 9}).Scan(&got); err != nil || !bytes.Equal(got, again) {
		t.Fatalf("write 9 reads %q (%v), want the later row", got, err)
	}
}
