package purestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// FuzzOpen: any file opens as a store or is refused with ErrDamaged, and
// a store that opens reads back without panicking.
func FuzzOpen(f *testing.F) {
	ctx := context.Background()
	seed := filepath.Join(f.TempDir(), "seed.db")
	s, err := Open(ctx, seed)
	if err != nil {
		f.Fatal(err)
	}
	for _, d := range deltas() {
		if err := s.Commit(d); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	b, _ := os.ReadFile(seed)
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 0, 9, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "device.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, path)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("open: %v, want ErrDamaged", err)
			}
			return
		}
		defer s.Close()
		src := s.Source()
		_ = src.Writes(ctx, [16]byte{}, func([]byte, [32]byte) error { return nil })
		_ = src.OtherWrites(ctx, [16]byte{}, func([16]byte, []byte, [32]byte) error { return nil })
		_ = dumpErrs(ctx, s)
	})
}

// dumpErrs reads every table, collecting the errors malformed rows give.
func dumpErrs(ctx context.Context, s *DB) error {
	src := s.Source()
	_, cerr := src.Cursor(ctx)
	return errors.Join(cerr,
		src.Statements(ctx, func(client.SavedStatement) error { return nil }),
		src.Fragments(ctx, func(client.SavedFragment) error { return nil }),
		src.Msgs(ctx, func(client.SavedMsg) error { return nil }),
		src.Outbox(ctx, func(client.SavedOut) error { return nil }),
		src.Held(ctx, func(client.SavedHeld) error { return nil }),
		src.Rotations(ctx, func(client.SavedRotation) error { return nil }))
}
