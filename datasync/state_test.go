package datasync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// stateNode opens a node on path over a fresh KV engine of actor,
// collecting its reports.
func stateNode(t *testing.T, path, actor string) (*Node, *engine.KV, func() []*Error) {
	t.Helper()
	kv, err := engine.NewKV(actor)
	if err != nil {
		t.Fatal(err)
	}
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reports []*Error
	n, err := Open(path, kv, key, Options{Actor: actor, Report: func(e *Error) {
		mu.Lock()
		reports = append(reports, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return n, kv, func() []*Error { mu.Lock(); defer mu.Unlock(); return append([]*Error(nil), reports...) }
}

// hostileDelta is a KV change claiming actor's change number 2^64−1
// (byte layout of datasync/engine's delta: 'd' 1 | From | To | registers).
func hostileDelta(actor string) []byte {
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	b := []byte{'d', 1, 0}         // From: empty
	b = binary.AppendUvarint(b, 1) // To: one actor
	b = binary.AppendUvarint(str(b, actor), math.MaxUint64)
	b = binary.AppendUvarint(b, 1)              // one register
	b = append(str(b, "x"), 0)                  // key x, a value
	b = binary.AppendUvarint(str(b, "evil"), 5) // value, Lamport 5
	return binary.AppendUvarint(str(b, actor), math.MaxUint64)
}

// Issue 17 point 1 (moved here from cmd/ferry with the state it tests): a
// peer's delta claiming this replica's own writer at 2^64−1 is refused and
// reported, local edits afterwards save, and the state reloads.
func TestStateHostileVersionThenReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.state")
	const actor = "me"
	n, kv, reports := stateNode(t, path, actor)
	_ = kv.Set("notes", "a", []byte("1"))
	s := exchange.NewSession(n.space, "peer", exchange.Options{Caps: frame.Caps{engine.KVEncoding.Entry}})
	w, err := frame.Marshal(frame.Frame{V: engine.KVEncoding.V, Kind: frame.KindDelta, Doc: "notes", Blob: hostileDelta(actor)})
	if err != nil {
		t.Fatal(err)
	}
	s.Receive(w)
	if r := reports(); len(r) != 1 || !errors.Is(r[0], engine.ErrClockRange) || r[0].Doc != "notes" {
		t.Fatalf("reports %v", r)
	}
	if err := kv.Set("notes", "b", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := n.Save(); err != nil {
		t.Fatal(err)
	}
	_, kv2, _ := stateNode(t, path, actor)
	if v, _ := kv2.Get("notes", "b"); string(v) != "2" {
		t.Fatal("local edit lost")
	}
	if _, ok := kv2.Get("notes", "x"); ok {
		t.Fatal("hostile register stored")
	}
}

// The documents peers named are saved, so the ceiling holds across runs.
func TestStateKeepsPeerNamedCeiling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	name := func(n *Node, from, to int) {
		s := exchange.NewSession(n.space, "a", exchange.Options{Caps: frame.Caps{engine.KVEncoding.Entry}})
		docs := map[string][]byte{}
		for i := from; i < to; i++ {
			docs[fmt.Sprintf("p%04d", i)] = []byte{}
			if len(docs) == 100 || i == to-1 {
				w, err := frame.Marshal(frame.Frame{V: engine.KVEncoding.V, Kind: frame.KindOffer, Reply: true, Partial: true, Docs: docs})
				if err != nil {
					t.Fatal(err)
				}
				s.Receive(w)
				docs = map[string][]byte{}
			}
		}
	}
	n, kv, _ := stateNode(t, path, "b")
	_ = kv.Set("mine", "k", []byte("v"))
	name(n, 0, 1000)
	if err := n.Save(); err != nil {
		t.Fatal(err)
	}

	n, kv, reports := stateNode(t, path, "b")
	if n.space.PeerNamed() != 1000 || len(kv.Docs()) != 1001 {
		t.Fatalf("after reload: %d peer-named, %d documents", n.space.PeerNamed(), len(kv.Docs()))
	}
	name(n, 1000, 1100)
	if got := len(kv.Docs()); got != 1+exchange.MaxPeerDocs {
		t.Fatalf("%d documents after the restart, want %d", got, 1+exchange.MaxPeerDocs)
	}
	if r := reports(); len(r) != 1100-exchange.MaxPeerDocs || r[0].Code != CodeCeiling {
		t.Fatalf("%d reports", len(r))
	}
	if err := kv.Set("mine2", "k", []byte("v")); err != nil || !kv.Has("mine2") {
		t.Fatal("local document refused")
	}
}

// A state file in another layout is refused, never read as empty (which
// the next Save would overwrite).
func TestStateOtherLayoutRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	_ = os.WriteFile(path, []byte(`{"notes":"cwE="}`), 0o600)
	kv, _ := engine.NewKV("b")
	key, _ := GenerateKey()
	if _, err := Open(path, kv, key, Options{}); !errors.Is(err, &Error{Code: CodeState}) {
		t.Fatalf("state in another layout: %v, want CodeState", err)
	}
	if _, err := SavedActor(path); !errors.Is(err, &Error{Code: CodeState}) {
		t.Fatalf("SavedActor of another layout: %v", err)
	}
}
