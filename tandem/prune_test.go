package tandem

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Close prunes the writes table only when enough of it is dead
// (pruneWorth): a hundred superseded writes stay until more join them; then
// one Close leaves one row per kept write. The record reads the same
// either way.
func TestClosePrunesWhenWorthIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	d := openT(t, dir, Options{})
	c, err := d.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := d.NewRecord(c, map[string][]byte{"title": []byte("v0")})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(from, to int) {
		t.Helper()
		for i := from; i <= to; i++ {
			if err := d.SetString(c, rec, "title", fmt.Sprint("v", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rowsAndKept := func() (rows, kept int) {
		t.Helper()
		d.eng.Kept(func([32]byte) { kept++ })
		rows, err := d.db.WriteRows(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return rows, kept
	}
	reopen := func(want string) {
		t.Helper()
		d.Close()
		d = openT(t, dir, Options{})
		if r, err := d.Record(c, rec); err != nil || r.Get("title") != want {
			t.Fatalf("after reopening: %+v, %v; want title %q", r, err, want)
		}
	}

	edit(1, 100)
	rows, kept := rowsAndKept()
	if rows-kept != 100 || pruneWorth(rows, kept, 0) {
		t.Fatalf("%d rows for %d kept writes: want 100 dead, not worth a prune", rows, kept)
	}
	reopen("v100")
	if after, _ := rowsAndKept(); after != rows {
		t.Fatalf("Close pruned %d rows of %d with only 100 dead", rows-after, rows)
	}

	edit(101, 400)
	rows, kept = rowsAndKept()
	if !pruneWorth(rows, kept, 0) {
		t.Fatalf("%d rows for %d kept writes: want a prune", rows, kept)
	}
	reopen("v400")
	defer d.Close()
	if rows, kept := rowsAndKept(); rows != kept {
		t.Fatalf("after a Close worth a prune: %d rows for %d kept writes", rows, kept)
	}
}

// pruneWorth: dead rows must pass both the slack and a sixteenth of what is
// kept; a damaged row found on open always asks for a prune.
func TestPruneWorth(t *testing.T) {
	for _, c := range []struct {
		rows, kept, damaged int
		want                bool
	}{
		{10, 10, 0, false},
		{10, 10, 1, true},
		{10 + pruneSlack, 10, 0, false},
		{11 + pruneSlack, 10, 0, true},
		{100_000 + 6_250, 100_000, 0, false},
		{100_000 + 6_251, 100_000, 0, true},
		{5, 10, 0, false}, // fewer rows than kept writes (an unsaved one): nothing to gain
	} {
		if got := pruneWorth(c.rows, c.kept, c.damaged); got != c.want {
			t.Errorf("pruneWorth(%d, %d, %d) = %v, want %v", c.rows, c.kept, c.damaged, got, c.want)
		}
	}
}
