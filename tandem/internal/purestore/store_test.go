package purestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// store is what the tests read of devstore and purestore alike.
type store interface {
	client.Journal
	Source() client.Source
	Meta(ctx context.Context, k string) ([]byte, error)
	SetMeta(ctx context.Context, kv map[string][]byte) error
	Close() error
}

// deltas exercises every kind of change a Delta carries but writes (which
// need signed records; the wasmcheck test stores real ones): appends,
// upserts of the message index that keep its order and channel, held
// messages replaced (moving to the end), outbox adds and deletes, rotation
// upserts changing only the step, the cursor set and cleared.
func deltas() []*client.Delta {
	id := func(i int) hub.ID { return hub.ID(fmt.Sprintf("m%02d", i)) }
	coll := func(b byte) client.CollectionID { return client.CollectionID{b, 1} }
	var ds []*client.Delta
	for i := range 6 {
		d := &client.Delta{HLC: suite.HLC{Millis: uint64(1000 + i), Counter: uint16(i)}}
		d.Statements = []client.SavedStatement{{Collection: coll(byte(i)), Origin: [32]byte{byte(i)}, Payload: []byte{1, byte(i)}}}
		d.Fragments = []client.SavedFragment{{Collection: coll(byte(i)), Payload: []byte{2, byte(i)}}, {Collection: coll(9), Payload: []byte{}}}
		d.Msgs = []client.SavedMsg{
			{ID: id(i), Channel: "ch", State: client.MsgTodo, Kind: 1, Writes: []byte{}},
			{ID: id(0), Channel: "other", State: client.MsgState(i % 3), Hash: [32]byte{byte(i)}, Rec: [16]byte{3}, Writes: make([]byte, 32*i)},
			{ID: id(7), Channel: "ch", State: client.MsgRefused, Size: int64(900_000 + i), FirstSeen: time.UnixMilli(int64(7000 + i))},
		}
		d.OutAdd = []client.SavedOut{{Seq: uint64(10 - i), Channel: "o", Envelope: []byte{byte(i)}, Kind: 2}, {Seq: uint64(20 + i), Channel: "d", Rec: [16]byte{byte(i)}, Dirty: true}, {Seq: uint64(30 + i), Channel: "o", Envelope: []byte{7}, Kind: 3, Auto: true}}
		d.HeldAdd = []client.SavedHeld{{ID: id(i % 2), Channel: "h", Envelope: []byte{byte(i)}, FirstSeen: time.UnixMilli(int64(5000 + i))}}
		d.Rotations = []client.SavedRotation{{Collection: coll(1), Step: i - 2, Payload: []byte{byte(i)}, Key: [32]byte{byte(i)}, Inventory: []byte{4}, OldEpoch: [32]byte{5}, OldKey: [32]byte{6}}}
		switch i {
		case 2:
			d.Gone = []hub.ID{id(1)}
			d.OutDel = []uint64{9, 21}
			d.CursorSet, d.Cursor = true, hub.Cursor("c2")
		case 3:
			d.HeldDel = []hub.ID{id(1)}
			d.RotationsDone = []client.CollectionID{coll(1)}
		case 4:
			d.CursorSet = true // cleared
		case 5:
			d.CursorSet, d.Cursor = true, hub.Cursor("c5")
		}
		ds = append(ds, d)
	}
	return ds
}

// dump reads everything a Source gives but writes.
func dump(t *testing.T, s store) map[string]any {
	t.Helper()
	ctx := context.Background()
	src := s.Source()
	out := map[string]any{}
	var sts []client.SavedStatement
	var frs []client.SavedFragment
	var msgs []client.SavedMsg
	var outs []client.SavedOut
	var held []client.SavedHeld
	var rots []client.SavedRotation
	for name, err := range map[string]error{
		"statements": src.Statements(ctx, func(x client.SavedStatement) error { sts = append(sts, x); return nil }),
		"fragments":  src.Fragments(ctx, func(x client.SavedFragment) error { frs = append(frs, x); return nil }),
		"msgs":       src.Msgs(ctx, func(x client.SavedMsg) error { msgs = append(msgs, x); return nil }),
		"outbox":     src.Outbox(ctx, func(x client.SavedOut) error { outs = append(outs, x); return nil }),
		"held":       src.Held(ctx, func(x client.SavedHeld) error { held = append(held, x); return nil }),
		"rotations":  src.Rotations(ctx, func(x client.SavedRotation) error { rots = append(rots, x); return nil }),
	} {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	cur, err := src.Cursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hlc, err := s.Meta(ctx, "hlc")
	if err != nil {
		t.Fatal(err)
	}
	for i := range held {
		held[i].FirstSeen = held[i].FirstSeen.UTC()
	}
	for i := range msgs {
		if !msgs[i].FirstSeen.IsZero() {
			msgs[i].FirstSeen = msgs[i].FirstSeen.UTC()
		}
	}
	out["statements"], out["fragments"], out["msgs"], out["outbox"] = sts, frs, msgs, outs
	out["held"], out["rotations"], out["cursor"], out["hlc"] = held, rots, cur, hlc
	return out
}

func openPure(t *testing.T, path string) *DB {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTornLastCommitIsCutOff: a crash part way through appending a commit
// loses that commit whole, and the store goes on from the one before.
func TestTornLastCommitIsCutOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.db")
	s := openPure(t, path)
	ds := deltas()
	for _, d := range ds[:3] {
		if err := s.Commit(d); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	full, _ := os.ReadFile(path)
	ref := openPure(t, filepath.Join(t.TempDir(), "ref.db"))
	for _, d := range ds[:2] {
		if err := ref.Commit(d); err != nil {
			t.Fatal(err)
		}
	}
	want := dump(t, ref)
	ref.Close()
	twoSize := fileSize(t, filepath.Join(filepath.Dir(ref.path), "ref.db"))
	for _, cut := range []int64{twoSize + 3, twoSize + 11, twoSize + 12, int64(len(full)) - 1} {
		if err := os.WriteFile(path, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		s := openPure(t, path)
		if got := dump(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("cut at %d: %v, want %v", cut, got, want)
		}
		if err := s.Commit(ds[2]); err != nil { // and goes on
			t.Fatal(err)
		}
		s.Close()
		if s = openPure(t, path); len(dump(t, s)["statements"].([]client.SavedStatement)) != 3 {
			t.Errorf("cut at %d: the commit after the cut did not hold", cut)
		}
		s.Close()
	}
}

// TestDamageBeforeTheEndIsRefused: a flipped byte in a commit before the
// last is damage, not a torn append: the store refuses to open.
func TestDamageBeforeTheEndIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.db")
	s := openPure(t, path)
	for _, d := range deltas() {
		if err := s.Commit(d); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	good, _ := os.ReadFile(path)
	// The first batch's length (which must not pass for a torn tail and
	// cut off every later commit), its payload, its header check.
	for _, at := range []int{1, 12, 9} {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(context.Background(), path); !errors.Is(err, ErrDamaged) {
			t.Errorf("open with byte %d damaged: %v", at, err)
		}
	}
}

// TestFailedCommitChangesNothing: a commit the file refuses leaves the
// rows as they were.
func TestFailedCommitChangesNothing(t *testing.T) {
	s := openPure(t, filepath.Join(t.TempDir(), "device.db"))
	ds := deltas()
	if err := s.Commit(ds[0]); err != nil {
		t.Fatal(err)
	}
	want := dump(t, s)
	s.f.Close() // the next write fails
	if err := s.Commit(ds[1]); err == nil {
		t.Fatal("commit to a closed file succeeded")
	}
	if got := dump(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("after a failed commit: %v, want %v", got, want)
	}
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestPruneKeepsListedWrites: Prune drops the writes keep does not list,
// durably, and reads of a scope see only what is left.
func TestPruneKeepsListedWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "device.db")
	s := openPure(t, path)
	scope := [16]byte{7}
	var tx txn
	for i := range 10 {
		id := [32]byte{byte(i)}
		tx.put(s, tWrites, string(id[:]), append(scope[:], byte(i)), false)
	}
	if err := s.commit(&tx); err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(ctx, func(id [32]byte) bool { return id[0]%2 == 0 })
	if err != nil || n != 5 {
		t.Fatalf("prune: %d %v", n, err)
	}
	s.Close()
	s = openPure(t, path)
	defer s.Close()
	var kept []byte
	err = s.Source().Writes(ctx, scope, func(stored []byte, id [32]byte) error {
		if len(stored) != 1 || stored[0] != id[0] {
			t.Errorf("write %d stored as %v", id[0], stored)
		}
		kept = append(kept, id[0])
		return nil
	})
	if err != nil || !bytes.Equal(kept, []byte{0, 2, 4, 6, 8}) {
		t.Errorf("after prune and reopen: %v %v", kept, err)
	}
	if err := s.Source().OtherWrites(ctx, scope, func([16]byte, []byte, [32]byte) error {
		t.Error("a write of another scope")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
