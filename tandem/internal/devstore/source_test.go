package devstore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// Every kept copy equals its row, survives the row's buffer being reused,
// and cannot be grown into the next copy.
func TestArenaKeep(t *testing.T) {
	var a arena
	row := make([]byte, arenaChunk)
	var kept, want [][]byte
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		n := r.IntN(600)
		if i%500 == 0 {
			n = arenaChunk/8 + 1 + r.IntN(1000) // larger than the arena takes
		}
		b := row[:n]
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		k := a.keep(b)
		kept, want = append(kept, k), append(want, bytes.Clone(b))
		if cap(k) != len(k) {
			t.Fatalf("kept copy %d has spare capacity %d", i, cap(k)-len(k))
		}
		_ = append(k, 0xff) // must not write into the arena
	}
	for i := range kept {
		if !bytes.Equal(kept[i], want[i]) {
			t.Fatalf("kept copy %d changed", i)
		}
	}
}

// Scanning switches the page cache and back.
func TestScanning(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	size := func() int {
		var n int
		if err := db.db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := size(); got != cacheWorking {
		t.Fatalf("cache_size %d after Open, want %d", got, cacheWorking)
	}
	if err := db.Scanning(ctx, true); err != nil || size() != cacheScan {
		t.Fatalf("scanning: %v, cache_size %d", err, size())
	}
	if err := db.Scanning(ctx, false); err != nil || size() != cacheWorking {
		t.Fatalf("after scanning: %v, cache_size %d", err, size())
	}
}

// A write row of the wrong shape fails the reading; it is not skipped.
func TestOtherWritesMalformed(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	good := func(scope []byte, id byte) {
		wid := bytes.Repeat([]byte{id}, 32)
		if _, err := db.db.ExecContext(ctx, "INSERT INTO writes(wid, scope, stored) VALUES(?, ?, ?)", wid, scope, []byte("stored bytes")); err != nil {
			t.Fatal(err)
		}
	}
	home, coll := [16]byte{1}, bytes.Repeat([]byte{2}, 16)
	good(home[:], 1)
	good(coll, 2)
	var n int
	err := db.Source().OtherWrites(ctx, home, func(scope [16]byte, b []byte, id [32]byte) error {
		if !bytes.Equal(scope[:], coll) || string(b) != "stored bytes" || id != [32]byte(bytes.Repeat([]byte{2}, 32)) {
			t.Errorf("row read as %x %q %x", scope, b, id)
		}
		n++
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("OtherWrites: %v, %d rows", err, n)
	}
	good(coll[:15], 3)
	if err := db.Source().OtherWrites(ctx, home, func([16]byte, []byte, [32]byte) error { return nil }); err == nil {
		t.Fatal("a row with a 15-byte scope was read")
	}
}

func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
