//go:build !js && !wasip1

package purestore

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/devstore"
)

// TestSameAsDevstore: the same commits give the same rows, in the same
// order, from devstore's SQLite store and from this one, before and after
// reopening.
func TestSameAsDevstore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sq, err := devstore.Open(ctx, filepath.Join(dir, "sqlite.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	path := filepath.Join(dir, "pure.db")
	pu := openPure(t, path)
	for i, d := range deltas() {
		for _, s := range []store{sq, pu} {
			if err := s.Commit(d); err != nil {
				t.Fatal(err)
			}
		}
		if want, got := dump(t, sq), dump(t, pu); !reflect.DeepEqual(got, want) {
			for k := range want {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("%s:\n pure   %#v\n sqlite %#v", k, got[k], want[k])
				}
			}
			t.Fatalf("after commit %d", i)
		}
	}
	kv := map[string][]byte{"uid": {1, 2}, "hub": {}}
	for _, s := range []store{sq, pu} {
		if err := s.SetMeta(ctx, kv); err != nil {
			t.Fatal(err)
		}
	}
	pu.Close()
	pu = openPure(t, path)
	defer pu.Close()
	if want, got := dump(t, sq), dump(t, pu); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopening:\n pure   %v\n sqlite %v", got, want)
	}
	for k := range kv {
		a, _ := sq.Meta(ctx, k)
		b, _ := pu.Meta(ctx, k)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("meta %s: pure %v sqlite %v", k, b, a)
		}
	}
}
