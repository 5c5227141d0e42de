package devstore

import (
	"bytes"
	"maps"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/suite/suitetest"
)

// signedWrites signs n assigns of different records in scope.
func signedWrites(t *testing.T, scope [16]byte, n int) []*record.Write {
	t.Helper()
	return signedWritesN(t, scope, n)
}

func signedWritesN(t testing.TB, scope [16]byte, n int) []*record.Write {
	st := record.NewState(record.NewValidator(record.Rules{Scope: scope}))
	wr := &record.Writer{Key: suite.NewIdentity([32]byte{1}).SignKey, Device: suite.DeviceID{4}, Clock: record.NewClock(suite.HLC{}, nil), Ref: [32]byte{5}}
	var ws []*record.Write
	for i := range n {
		w, _, err := st.Build(wr, record.Change{Record: [16]byte{byte(i), byte(i >> 8), byte(i >> 16)}, Field: "title", Op: suite.OpAssign, Value: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws
}

// Every committed write comes back with its bytes; a write listed twice in
// one commit is one row; one stored again later is a second row, read back
// again (the state keeps one), until Prune leaves one row per write.
func TestCommitWritesOnce(t *testing.T) {
	scope := [16]byte{7}
	for _, n := range []int{1, 31, 70} {
		db := openTest(t)
		ws := signedWrites(t, scope, n)
		twice := append(append([]*record.Write{ws[0]}, ws...), ws[n-1])
		if err := db.Commit(&client.Delta{Writes: twice}); err != nil {
			t.Fatal(err)
		}
		if rows := countRows(t, db); rows != n {
			t.Fatalf("%d writes listed %d times in one commit: %d rows", n, len(twice), rows)
		}
		again := min(n, 3)
		if err := db.Commit(&client.Delta{Writes: ws[:again]}); err != nil {
			t.Fatal(err)
		}
		if rows := countRows(t, db); rows != n+again {
			t.Fatalf("%d writes, %d stored again: %d rows", n, again, rows)
		}
		if got, err := db.Prune(t.Context(), func([32]byte) bool { return true }); err != nil || got != again {
			t.Fatalf("Prune deleted %d rows (%v), want %d", got, err, again)
		}
		got := map[[32]byte][]byte{}
		if err := db.Source().Writes(t.Context(), scope, func(b []byte, id [32]byte) error {
			if got[id] != nil {
				t.Errorf("write %x read twice after Prune", id[:4])
			}
			got[id] = bytes.Clone(b)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("%d writes: read back %d", n, len(got))
		}
		for _, w := range ws {
			if want := record.AppendStored(nil, w); !bytes.Equal(got[w.ID()], want) {
				t.Fatalf("%d writes: write %x read back changed", n, w.ID())
			}
		}
	}
}

// Prune keeps, of a write stored twice, the later row (a smaller signature
// that replaced the kept one, or a good copy after a damaged row), and
// deletes every row of a write keep does not list.
func TestPruneKeepsLatestRow(t *testing.T) {
	db := openTest(t)
	scope := [16]byte{7}
	put := func(id byte, stored string) {
		t.Helper()
		wid := [32]byte{id}
		if _, err := db.db.Exec("INSERT INTO writes(wid, scope, stored, crc) VALUES(?, ?, ?, ?)", wid[:], scope[:], []byte(stored), rowSum(wid, scope, []byte(stored))); err != nil {
			t.Fatal(err)
		}
	}
	put(1, "one, first")
	put(2, "two")
	put(1, "one, again")
	put(3, "three, first")
	put(3, "three, again")
	put(1, "one, last")
	n, err := db.Prune(t.Context(), func(id [32]byte) bool { return id != [32]byte{3} })
	if err != nil || n != 4 {
		t.Fatalf("Prune deleted %d rows (%v), want 4", n, err)
	}
	got := map[[32]byte]string{}
	if err := db.Source().Writes(t.Context(), scope, func(b []byte, id [32]byte) error {
		got[id] = string(b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[[32]byte]string{{1}: "one, last", {2}: "two"}
	if !maps.Equal(got, want) {
		t.Fatalf("after Prune: %q, want %q", got, want)
	}
	if n, err := db.Prune(t.Context(), func([32]byte) bool { return true }); err != nil || n != 0 {
		t.Fatalf("a second Prune deleted %d rows (%v)", n, err)
	}
}

func countRows(t *testing.T, db *DB) int {
	t.Helper()
	var rows int
	if err := db.db.QueryRow("SELECT count(*) FROM writes").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// A write listed twice in one commit with different bytes (its kept copy
// replaced by a smaller signature before the commit) is stored as its last
// listing: the copy the state keeps.
func TestCommitKeepsLastListing(t *testing.T) {
	scope := [16]byte{7}
	db := openTest(t)
	w := signedWrites(t, scope, 1)[0]
	body := w.Body()
	si, err := body.SigInput()
	if err != nil {
		t.Fatal(err)
	}
	v := record.NewValidator(record.Rules{Scope: scope})
	again, err := v.Validate(&body, suitetest.SignWithNonce(suite.NewIdentity([32]byte{1}).SignKey, si, 3), w.Epoch())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(&client.Delta{Writes: []*record.Write{w, again}}); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	if err := db.Source().Writes(t.Context(), scope, func(b []byte, _ [32]byte) error {
		got = append(got, bytes.Clone(b))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !bytes.Equal(got[0], record.AppendStored(nil, again)) {
		t.Fatalf("read back %d rows; want one, the last listing's bytes", len(got))
	}
}
