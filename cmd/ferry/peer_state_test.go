package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/exchange"
	"github.com/ferry-sync/ferry/datasync/frame"
	"github.com/ferry-sync/ferry/datasync/quarantine"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestPeerQuarantine: a "ferry peer run --state" process that died
// importing a peer's blob leaves its in-flight record in STATE.quarantine;
// the next run refuses that blob, reports it on stderr, and still imports
// the peer's other documents.
func TestPeerQuarantine(t *testing.T) {
	dir := t.TempDir()
	pubA := keygen(t, filepath.Join(dir, "a.key"))
	pubB := keygen(t, filepath.Join(dir, "b.key"))
	state := filepath.Join(dir, "b.state")

	// The delta a's replica (actor: its key's first 8 bytes) sends for
	// its one edit to notes, and the record a b process that died
	// importing it left behind: Begin without End.
	kv, _ := engine.NewKV(pubA[:16])
	_ = kv.Set("notes", "bad", []byte("boom"))
	ch, _ := kv.Changes("notes", nil)
	l, err := quarantine.OpenDir(quarantineDir(state))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(quarantine.Digest(ch), "notes"); err != nil {
		t.Fatal(err)
	}

	// a's state names the actor the delta above was made with.
	stateA := filepath.Join(dir, "a.state")
	if err := os.WriteFile(stateA, []byte(`{"docs":{},"peer_named":[],"actor":"`+pubA[:16]+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	a, outA := startPeer(t, "peer", "run", "--key", filepath.Join(dir, "a.key"), "--peer", pubB, "--listen", addr,
		"--state", stateA, "--set", "notes/bad=boom", "--set", "todo/ok=yes", "--expect", "todo/from-b",
		"--interval", "100ms", "--linger", "1s", "--for", "60s")
	b, outB := startPeer(t, "peer", "run", "--key", filepath.Join(dir, "b.key"), "--peer", pubA, "--connect", addr,
		"--state", state, "--set", "todo/from-b=hi", "--expect", "todo/ok",
		"--interval", "100ms", "--linger", "1s", "--for", "60s")
	errA, errB := a.Wait(), b.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("a: %v\n%s\nb: %v\n%s", errA, outA, errB, outB)
	}
	got := lastJSON(t, outB.String())
	if got["todo"]["ok"] != "yes" {
		t.Fatalf("b did not import the peer's other document: %v\n%s", got, outB)
	}
	if _, ok := got["notes"]["bad"]; ok {
		t.Fatalf("b imported the quarantined blob: %v", got)
	}
	if n := strings.Count(outB.String(), "quarantined"); n != 1 {
		t.Fatalf("b reported the quarantined blob %d times (want once):\n%s", n, outB)
	}
	if v := lastJSON(t, outA.String()); v["todo"]["from-b"] != "hi" {
		t.Fatalf("a: %v", v)
	}
	if left, _ := os.ReadDir(filepath.Join(quarantineDir(state), "inflight")); len(left) != 0 {
		t.Fatalf("%d blobs left in flight after a clean run", len(left))
	}
}

// TestPeerStateKeepsPeerNamedCeiling: the documents peers named are saved
// with --state, so the 1,024-document ceiling still holds after a restart
// (and local documents are still not subject to it).
func TestPeerStateKeepsPeerNamedCeiling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	open := func() (*engine.KV, *exchange.Space, *[]exchange.Report) {
		kv, _ := engine.NewKV("b")
		var reports []exchange.Report
		sp := &exchange.Space{Engine: kv, Report: func(r exchange.Report) { reports = append(reports, r) }}
		if err := loadPeerState(sp, kv, path); err != nil {
			t.Fatal(err)
		}
		return kv, sp, &reports
	}
	name := func(sp *exchange.Space, from, to int) {
		s := exchange.NewSession(sp, "a", exchange.Options{Caps: frame.Caps{engine.KVEncoding.Entry}})
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
	kv, sp, _ := open()
	_ = kv.Set("mine", "k", []byte("v"))
	name(sp, 0, 1000)
	if err := savePeerState(sp, kv, path); err != nil {
		t.Fatal(err)
	}

	kv, sp, reports := open()
	if sp.PeerNamed() != 1000 || len(kv.Docs()) != 1001 {
		t.Fatalf("after reload: %d peer-named, %d documents", sp.PeerNamed(), len(kv.Docs()))
	}
	name(sp, 1000, 1100)
	if n := len(kv.Docs()); n != 1+exchange.MaxPeerDocs {
		t.Fatalf("%d documents after the restart, want %d", n, 1+exchange.MaxPeerDocs)
	}
	if len(*reports) != 1100-exchange.MaxPeerDocs || !errors.Is((*reports)[0].Err, exchange.ErrCeiling) {
		t.Fatalf("%d reports", len(*reports))
	}
	if err := kv.Set("mine2", "k", []byte("v")); err != nil || !kv.Has("mine2") {
		t.Fatal("local document refused")
	}
}

// A state file in another layout is refused, never read as empty (which
// would then be saved over the documents it holds).
func TestPeerStateOtherLayoutRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	_ = os.WriteFile(path, []byte(`{"notes":"cwE="}`), 0o600)
	kv, _ := engine.NewKV("b")
	if err := loadPeerState(&exchange.Space{Engine: kv}, kv, path); err == nil {
		t.Fatal("state in another layout loaded")
	}
}
