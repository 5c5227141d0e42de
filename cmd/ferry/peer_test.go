package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelperPeerProcess is the helper process of TestPeerTwoProcesses (the os/exec pattern): it runs the
// ferry command line given in FERRY_PEER_ARGS. Run on its own it does
// nothing but check that the variable is absent.
func TestHelperPeerProcess(t *testing.T) {
	args := os.Getenv("FERRY_PEER_ARGS")
	if args == "" {
		return
	}
	out, err := run(t, strings.Split(args, "\x1f")...)
	os.Stdout.WriteString(out)
	if err != nil {
		t.Fatal(err)
	}
}

// startPeer starts a ferry command line in a helper process.
func startPeer(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	c := exec.Command(os.Args[0], "-test.run=^TestHelperPeerProcess$", "-test.count=1")
	c.Env = append(os.Environ(), "FERRY_PEER_ARGS="+strings.Join(args, "\x1f"))
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, &out
}

func keygen(t *testing.T, path string) string {
	out, err := run(t, "peer", "keygen", path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// TestPeerTwoProcesses runs two "ferry peer run" processes that sync over
// TCP (Noise IK), each with its own edits, and checks both end holding
// both, and that the state file carries the documents to the next run.
func TestPeerTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	pubA := keygen(t, filepath.Join(dir, "a.key"))
	pubB := keygen(t, filepath.Join(dir, "b.key"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	child := func(args ...string) (*exec.Cmd, *bytes.Buffer) { return startPeer(t, args...) }
	a, outA := child("peer", "run", "--key", filepath.Join(dir, "a.key"), "--peer", pubB, "--listen", addr,
		"--state", filepath.Join(dir, "a.state"), "--set", "notes/from-a=hello", "--expect", "notes/from-b",
		"--interval", "100ms", "--linger", "1s", "--for", "60s")
	b, outB := child("peer", "run", "--key", filepath.Join(dir, "b.key"), "--peer", pubA, "--connect", addr,
		"--set", "notes/from-b=hi", "--set", "todo/milk=yes", "--expect", "notes/from-a",
		"--interval", "100ms", "--linger", "1s", "--for", "60s")
	errA, errB := a.Wait(), b.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("a: %v\n%s\nb: %v\n%s", errA, outA, errB, outB)
	}
	want := map[string]map[string]string{"notes": {"from-a": "hello", "from-b": "hi"}, "todo": {"milk": "yes"}}
	for name, out := range map[string]*bytes.Buffer{"a": outA, "b": outB} {
		got := lastJSON(t, out.String())
		if !jsonEqual(got, want) {
			t.Fatalf("%s printed %v\n%s", name, got, out)
		}
	}
	// The state file brings the documents back without the peer.
	out, err := run(t, "peer", "run", "--key", filepath.Join(dir, "a.key"), "--peer", pubB, "--listen", "127.0.0.1:0",
		"--state", filepath.Join(dir, "a.state"), "--for", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	if got := lastJSON(t, out); !jsonEqual(got, want) {
		t.Fatalf("reloaded state %v", got)
	}
}

func lastJSON(t *testing.T, s string) map[string]map[string]string {
	for _, line := range strings.Split(s, "\n") {
		var m map[string]map[string]string
		if json.Unmarshal([]byte(line), &m) == nil && m != nil {
			return m
		}
	}
	t.Fatalf("no JSON in output:\n%s", s)
	return nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestPeerRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	keygen(t, filepath.Join(dir, "k"))
	if _, err := run(t, "peer", "run", "--key", filepath.Join(dir, "k"), "--peer", "zz", "--listen", "127.0.0.1:0"); err == nil {
		t.Fatal("bad --peer accepted")
	}
	if _, err := run(t, "peer", "run", "--key", filepath.Join(dir, "k"), "--peer", strings.Repeat("ab", 32)); err == nil {
		t.Fatal("neither --listen nor --connect accepted")
	}
	if _, err := run(t, "peer", "keygen", filepath.Join(dir, "k")); err == nil {
		t.Fatal("keygen overwrote a key file")
	}
}
