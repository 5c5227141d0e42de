package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/loro"
	"github.com/ferry-sync/ferry/internal/realtest"
)

// TestPeerTwoProcessesLoro: two "ferry peer run --engine loro" processes
// replicate documents over TCP, and the real loro-crdt 1.13.9 under Node
// reads the documents one of them saved: the same values and version, and
// byte for byte the same snapshot when it exports what it read as Ferry's
// engine does. (Loro's snapshot bytes depend on how a document's history
// was assembled, so a re-export is compared with a re-export, not with the
// saved bytes.)
func TestPeerTwoProcessesLoro(t *testing.T) {
	bin, loroDir := realtest.Getenv("FERRY_LORO_NODE"), realtest.Getenv("FERRY_LORO_DIR")
	if bin == "" || loroDir == "" {
		realtest.Unavailable(t, "loro-crdt 1.13.9 for Node 24 not installed (run scripts/setup.d/30-evolu.sh and 35-loro.sh)")
		return
	}
	dir := t.TempDir()
	pubA := keygen(t, filepath.Join(dir, "a.key"))
	pubB := keygen(t, filepath.Join(dir, "b.key"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a, outA := startPeer(t, "peer", "run", "--engine", "loro", "--key", filepath.Join(dir, "a.key"), "--peer", pubB,
		"--listen", addr, "--state", filepath.Join(dir, "a.state"), "--set", "notes/from-a=hello",
		"--expect", "notes/from-b", "--expect", "todo/milk", "--interval", "100ms", "--linger", "1s", "--for", "60s")
	b, outB := startPeer(t, "peer", "run", "--engine", "loro", "--key", filepath.Join(dir, "b.key"), "--peer", pubA,
		"--connect", addr, "--state", filepath.Join(dir, "b.state"), "--set", "notes/from-b=hi", "--set", "todo/milk=yes",
		"--expect", "notes/from-a", "--interval", "100ms", "--linger", "1s", "--for", "60s")
	errA, errB := a.Wait(), b.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("a: %v\n%s\nb: %v\n%s", errA, outA, errB, outB)
	}
	want := map[string]map[string]string{"notes": {"from-a": "hello", "from-b": "hi"}, "todo": {"milk": "yes"}}
	for name, out := range map[string]*bytes.Buffer{"a": outA, "b": outB} {
		if got := lastJSON(t, out.String()); !jsonEqual(got, want) {
			t.Fatalf("%s printed %v\n%s", name, got, out)
		}
	}

	var st struct {
		Docs map[string]string `json:"docs"`
	} // the state file's documents, base64 snapshots
	raw, err := os.ReadFile(filepath.Join(dir, "a.state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"mode": "read", "snapshots": st.Docs})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "../../datasync/engine/loro/testdata/crosscheck.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(loroDir, "node_modules"))
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var read map[string]struct{ JSON, Snapshot, Version string }
	if err := json.Unmarshal(res, &read); err != nil {
		t.Fatal(err)
	}
	if len(read) != len(want) {
		t.Fatalf("node read %d documents", len(read))
	}
	rt, err := loro.NewRuntime(ctx, loro.RuntimeConfig{CacheDir: filepath.Join(os.TempDir(), "ferry-loro-wazero-cache")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for doc, vals := range want {
		r := read[doc]
		var got map[string]map[string]string
		if err := json.Unmarshal([]byte(r.JSON), &got); err != nil || !jsonEqual(got["data"], vals) {
			t.Errorf("node reads %s as %s", doc, r.JSON)
		}
		saved, _ := base64.StdEncoding.DecodeString(st.Docs[doc])
		e, err := loro.New(ctx, rt, loro.Options{Peer: 99})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ImportSnapshot(doc, saved); err != nil {
			t.Fatal(err)
		}
		snap, _ := e.Snapshot(doc)
		ver, _ := e.Version(doc)
		if r.Snapshot != hex.EncodeToString(snap) || r.Version != hex.EncodeToString(ver) {
			t.Errorf("%s: node and ferry export what they read differently (%d and %d bytes, versions %s and %x)",
				doc, len(r.Snapshot)/2, len(snap), r.Version, ver)
		}
	}
}

// An unknown --engine is refused before anything is created.
func TestPeerRejectsUnknownEngine(t *testing.T) {
	dir := t.TempDir()
	pubB := keygen(t, filepath.Join(dir, "b.key"))
	keygen(t, filepath.Join(dir, "a.key"))
	_, err := run(t, "peer", "run", "--engine", "automerge", "--key", filepath.Join(dir, "a.key"), "--peer", pubB,
		"--listen", "127.0.0.1:0", "--state", filepath.Join(dir, "a.state"))
	if err == nil || !strings.Contains(err.Error(), "--engine") {
		t.Fatalf("unknown engine: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "a.state")); serr == nil {
		t.Fatal("state created for a refused engine")
	}
}

func TestShowValue(t *testing.T) {
	for want, v := range map[string]loro.Value{
		"text":                                   {Kind: loro.Text, Text: "text"},
		"null":                                   {Kind: loro.Null},
		"true":                                   {Kind: loro.Bool, Bool: true},
		"-3":                                     {Kind: loro.Int, Int: -3},
		"1.5":                                    {Kind: loro.Float, Float: 1.5},
		"AAE=":                                   {Kind: loro.Bytes, Bytes: []byte{0, 1}},
		"attachment " + strings.Repeat("ab", 32): {Kind: loro.Attachment, Ref: engine.Ref{Hash: strings.Repeat("ab", 32), Size: 1}},
	} {
		if got := showValue(v); got != want {
			t.Errorf("%+v shown as %q, want %q", v, got, want)
		}
	}
}
