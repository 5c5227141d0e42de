package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
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
	// The ledger's record of a blob in flight: STATE.quarantine/inflight/
	// <first 16 bytes of its SHA-256, hex>, holding the document's name
	// (docs/decisions/datasync-quarantine.md).
	sum := sha256.Sum256(ch)
	inflight := filepath.Join(quarantineDir(state), "inflight")
	if err := os.MkdirAll(inflight, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inflight, hex.EncodeToString(sum[:16])), []byte("notes"), 0o600); err != nil {
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
