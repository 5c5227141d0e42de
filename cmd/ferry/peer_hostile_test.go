package main

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/exchange"
	"github.com/ferry-sync/ferry/datasync/frame"
)

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

// Issue 17 point 1, end to end in ferry peer's state handling: a peer's
// delta claiming this replica's own writer at 2^64−1 is refused and
// reported, local edits afterwards save, and the state reloads (before,
// "ferry peer run" then refused to start: document "notes": unreadable).
func TestPeerHostileVersionThenReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.state")
	const actor = "me"
	kv, _ := engine.NewKV(actor)
	var reports []exchange.Report
	sp := &exchange.Space{Engine: kv, Report: func(r exchange.Report) { reports = append(reports, r) }}
	if err := loadPeerState(sp, kv, path); err != nil {
		t.Fatal(err)
	}
	_ = kv.Set("notes", "a", []byte("1"))
	s := exchange.NewSession(sp, "peer", exchange.Options{Caps: frame.Caps{engine.KVEncoding.Entry}})
	w, err := frame.Marshal(frame.Frame{V: engine.KVEncoding.V, Kind: frame.KindDelta, Doc: "notes", Blob: hostileDelta(actor)})
	if err != nil {
		t.Fatal(err)
	}
	s.Receive(w)
	if len(reports) != 1 || !errors.Is(reports[0].Err, engine.ErrClockRange) {
		t.Fatalf("reports %v", reports)
	}
	if err := kv.Set("notes", "b", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := savePeerStateAs(sp, kv, path, actor); err != nil {
		t.Fatal(err)
	}
	kv2, _ := engine.NewKV(actor)
	if err := loadPeerState(&exchange.Space{Engine: kv2}, kv2, path); err != nil {
		t.Fatalf("state does not reload: %v", err)
	}
	if v, _ := kv2.Get("notes", "b"); string(v) != "2" {
		t.Fatal("local edit lost")
	}
	if _, ok := kv2.Get("notes", "x"); ok {
		t.Fatal("hostile register stored")
	}
}
