package tandem

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// Two devices move from Dovecot to Cyrus (§12.4): after SetHub on both,
// everything is on the new hub and they keep syncing with each other.
func TestHubLossDovecotToCyrus(t *testing.T) {
	old := dovecotHub(t, "ken")
	neu, _, _, _ := cyrusJMAP(t, "ivan")
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Hub: old})
	defer a.Close()
	c, _ := a.NewCollection("Moving")
	x, _ := a.NewRecord(c, map[string][]byte{"title": []byte("box 1")})
	syncT(t, a)
	b, err := Restore(t.Context(), filepath.Join(t.TempDir(), "b"), a.ShowBackupKey(), Options{Hub: old, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	syncT(t, b)
	b.SetString(c, x, "title", "box 1 (fragile)")

	// The old hub is gone; both devices are told the new one.
	for _, d := range []*Device{a, b} {
		if err := d.SetHub(t.Context(), neu); err != nil {
			t.Fatal(err)
		}
	}
	syncT(t, a)
	syncT(t, b)
	syncT(t, a)
	ra, _ := a.Record(c, x)
	if ra.Get("title") != "box 1 (fragile)" {
		t.Fatalf("A after the move: %+v", ra)
	}
	y, _ := a.NewRecord(c, map[string][]byte{"title": []byte("box 2")})
	syncT(t, a)
	syncT(t, b)
	if rb, err := b.Record(c, y); err != nil || rb.Get("title") != "box 2" {
		t.Fatalf("B after the move: %v %+v", err, rb)
	}
	// A third device starting on the new hub finds everything.
	n, err := Restore(t.Context(), filepath.Join(t.TempDir(), "n"), a.ShowBackupKey(), Options{Hub: neu, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	syncT(t, n)
	if !bytesEqual(stateOf(t, n, c), stateOf(t, a, c)) {
		t.Fatal("the new hub lacks part of the collection")
	}
}

// A refused credential: Sync and Run give CodeAuth with the §13.3 message
// and local data stays.
func TestCredentialRejected(t *testing.T) {
	good := dovecotHub(t, "ken")
	bad := IMAPHub(good.d.Host, good.d.Port, good.d.User, "wrong")
	d := openT(t, filepath.Join(t.TempDir(), "d"), Options{Hub: bad})
	defer d.Close()
	c, _ := d.NewCollection("Mine")
	id, _ := d.NewRecord(c, map[string][]byte{"title": []byte("kept")})
	_, err := d.Sync(t.Context())
	var e *Error
	if CodeOf(err) != CodeAuth || !errors.As(err, &e) || e.Message != msgAuth {
		t.Fatalf("Sync with a wrong password = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := d.Run(ctx); CodeOf(err) != CodeAuth {
		t.Fatalf("Run with a wrong password = %v, want CodeAuth", err)
	}
	if r, err := d.Record(c, id); err != nil || r.Get("title") != "kept" {
		t.Fatalf("local data after the refusal: %v %+v", err, r)
	}
}
