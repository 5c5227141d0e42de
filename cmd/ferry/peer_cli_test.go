package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync"
	"github.com/ferry-sync/ferry/datasync/engine"
)

// ferryBin builds the ferry binary once per test process: the CLI cases
// run it as a subprocess, exit codes and all. It is written beside the
// test binary, in the work directory "go test" removes when it is done.
var ferryBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(os.Args[0]), "ferry-cli-test")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// proc is a running ferry binary.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

// ferry starts the built binary with args; it is killed when the test ends.
func ferry(t *testing.T, args ...string) *proc {
	t.Helper()
	bin, err := ferryBin()
	if err != nil {
		t.Fatalf("building ferry: %v", err)
	}
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	return p
}

// wait waits for the process (at most a minute: a bound on a failing
// test) and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("ferry %v still running\nstderr:\n%s", p.cmd.Args[1:], &p.stderr)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// ok waits for a successful exit and returns the JSON it printed.
func (p *proc) ok(t *testing.T) map[string]map[string]string {
	t.Helper()
	if code := p.wait(t); code != 0 {
		t.Fatalf("ferry %v exited %d\nstderr:\n%s", p.cmd.Args[1:], code, &p.stderr)
	}
	return lastJSON(t, p.stdout.String())
}

type keys struct{ dir, a, b, pubA, pubB string }

func newKeys(t *testing.T) keys {
	dir := t.TempDir()
	k := keys{dir: dir, a: filepath.Join(dir, "a.key"), b: filepath.Join(dir, "b.key")}
	k.pubA, k.pubB = keygen(t, k.a), keygen(t, k.b)
	return k
}

// waitListening waits until p prints that it listens.
func waitListening(t *testing.T, p *proc) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(p.stderr.String(), "listening on") {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("listener exited: %s", &p.stderr)
		default:
		}
	}
	t.Fatal("listener never listened")
}

// Issue 17 point 2: one listener serves two sequential connections, then
// two concurrent ones (each dialer only finishes once it has the other's
// edit, which reaches it through the listener while both links are up),
// all in one space.
func TestPeerListenerServesManyConnections(t *testing.T) {
	k := newKeys(t)
	addr := freeAddr(t)
	l := ferry(t, "peer", "run", "--key", k.a, "--peer", k.pubB, "--listen", addr, "--set", "notes/l=L",
		"--expect", "notes/d1", "--expect", "notes/d2", "--expect", "notes/d3", "--expect", "notes/d4",
		"--interval", "100ms", "--linger", "5s", "--for", "50s") // lingers while d3 and d4 trade edits through it
	waitListening(t, l)
	dialer := func(name string, expect ...string) *proc {
		args := []string{"peer", "run", "--key", k.b, "--peer", k.pubA, "--connect", addr, "--set", "notes/" + name + "=" + name,
			"--interval", "100ms", "--linger", "300ms", "--for", "30s"}
		for _, e := range expect {
			args = append(args, "--expect", e)
		}
		return ferry(t, args...)
	}
	for _, name := range []string{"d1", "d2"} {
		if got := dialer(name, "notes/l").ok(t); got["notes"]["l"] != "L" {
			t.Fatalf("%s got %v", name, got)
		}
	}
	d3, d4 := dialer("d3", "notes/d4"), dialer("d4", "notes/d3")
	if got := d3.ok(t); got["notes"]["d4"] != "d4" {
		t.Fatalf("d3 got %v", got)
	}
	if got := d4.ok(t); got["notes"]["d3"] != "d3" {
		t.Fatalf("d4 got %v", got)
	}
	got := l.ok(t)
	for _, d := range []string{"d1", "d2", "d3", "d4"} {
		if got["notes"][d] != d {
			t.Fatalf("listener missing %s: %v", d, got)
		}
	}
	if n := strings.Count(l.stderr.String(), "connected to"); n < 4 {
		t.Fatalf("listener saw %d connections:\n%s", n, &l.stderr)
	}
	if !strings.Contains(l.stderr.String(), "documents sent") {
		t.Fatalf("no progress lines:\n%s", &l.stderr)
	}
}

// Issue 17 point 2: a dialer whose link ends redials, and reaches the
// listener restarted on the same address.
func TestPeerDialerRedials(t *testing.T) {
	k := newKeys(t)
	addr := freeAddr(t)
	l1 := ferry(t, "peer", "run", "--key", k.a, "--peer", k.pubB, "--listen", addr, "--set", "notes/first=1",
		"--expect", "notes/d", "--interval", "100ms", "--linger", "200ms", "--for", "30s")
	waitListening(t, l1)
	d := ferry(t, "peer", "run", "--key", k.b, "--peer", k.pubA, "--connect", addr, "--set", "notes/d=d",
		"--expect", "notes/second", "--interval", "100ms", "--linger", "300ms", "--for", "40s")
	l1.ok(t)
	l2 := ferry(t, "peer", "run", "--key", k.a, "--peer", k.pubB, "--listen", addr, "--set", "notes/second=2",
		"--expect", "notes/d", "--interval", "100ms", "--linger", "1s", "--for", "30s")
	if got := d.ok(t); got["notes"]["second"] != "2" || got["notes"]["first"] != "1" {
		t.Fatalf("dialer got %v\n%s", got, &d.stderr)
	}
	l2.ok(t)
	if n := strings.Count(d.stderr.String(), "connected to"); n != 2 {
		t.Fatalf("dialer connected %d times:\n%s", n, &d.stderr)
	}
}

// fails runs ferry and checks it exits 1 (ferry's code for a failure)
// with a line containing want.
func fails(t *testing.T, want string, args ...string) *proc {
	t.Helper()
	return failsWith(t, 1, want, args...)
}

// failsWith runs ferry and checks it exits with code (1: a failure, 2: the
// command line was wrong) and a line containing want.
func failsWith(t *testing.T, code int, want string, args ...string) *proc {
	t.Helper()
	p := ferry(t, args...)
	if got := p.wait(t); got != code {
		t.Fatalf("ferry %v exited %d, want %d\nstderr:\n%s", args, got, code, &p.stderr)
	}
	if !strings.Contains(p.stderr.String(), want) {
		t.Fatalf("ferry %v: stderr lacks %q:\n%s", args, want, &p.stderr)
	}
	if strings.Count(strings.TrimSpace(p.stderr.String()), "\n") > 20 {
		t.Fatalf("ferry %v: a wall of text:\n%s", args, &p.stderr)
	}
	return p
}

// Issue 17 point 11: bad input and failures exit non-zero and say what
// happened, and nothing is created before the inputs are checked.
func TestPeerFailuresExitNonZero(t *testing.T) {
	k := newKeys(t)
	run := func(extra ...string) []string {
		return append([]string{"peer", "run", "--key", k.a, "--peer", k.pubB}, extra...)
	}
	dead := freeAddr(t)
	missing := filepath.Join(k.dir, "missing", "s.state")
	for _, c := range []struct {
		code int // 1: it could not; 2: the command line was wrong
		want string
		args []string
	}{
		{1, "cannot reach " + dead, run("--connect", dead, "--for", "1500ms")},
		{2, "own public key", []string{"peer", "run", "--key", k.a, "--peer", k.pubA, "--listen", "127.0.0.1:0", "--for", "1s"}},
		{2, "--expect \"nokey\"", run("--listen", "127.0.0.1:0", "--expect", "nokey", "--state", missing)},
		{2, "--expect \"notes/\"", run("--listen", "127.0.0.1:0", "--expect", "notes/")},
		{2, "--for 0s", run("--listen", "127.0.0.1:0", "--for", "0")},
		{2, "--for -1s", run("--listen", "127.0.0.1:0", "--for", "-1s")},
		{2, "--interval 0s", run("--listen", "127.0.0.1:0", "--interval", "0")},
		{2, "--interval -1s", run("--listen", "127.0.0.1:0", "--interval", "-1s")},
		{1, "does not exist", run("--listen", "127.0.0.1:0", "--for", "1s", "--state", missing)},
		{1, "--expect not met: notes/never", run("--listen", "127.0.0.1:0", "--for", "1s", "--expect", "notes/never")},
		{2, "exactly one of", run("--for", "1s")},
		{2, "--peer is not", []string{"peer", "run", "--key", k.a, "--peer", "zz", "--listen", "127.0.0.1:0"}},
		{1, "cannot be read", []string{"peer", "run", "--key", filepath.Join(k.dir, "nope"), "--peer", k.pubB, "--listen", "127.0.0.1:0"}},
	} {
		failsWith(t, c.code, c.want, c.args...)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed run created %s", filepath.Dir(missing))
	}
}

// Issue 17 point 11: a port that answers with something else than a
// ferry peer, and a listener that refuses our key, end the dialer with a
// non-zero exit and a line saying so; the listener logs its refusal once
// per key per minute, however often that key tries.
func TestPeerHandshakeFailures(t *testing.T) {
	k := newKeys(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			c.Close()
		}
	}()
	fails(t, "not a ferry peer", "peer", "run", "--key", k.b, "--peer", k.pubA, "--connect", ln.Addr().String(), "--for", "20s")

	// The listener expects key c; b connects, knowing the listener's key.
	pubC := keygen(t, filepath.Join(k.dir, "c.key"))
	addr := freeAddr(t)
	l := ferry(t, "peer", "run", "--key", k.a, "--peer", pubC, "--listen", addr, "--for", "20s")
	waitListening(t, l)
	fails(t, "refused our key", "peer", "run", "--key", k.b, "--peer", k.pubA, "--connect", addr, "--for", "20s")
	b, _ := loadPeerKey(k.b)
	kv, _ := engine.NewKV("b")
	nb, err := datasync.Open("", kv, b, datasync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pubA, _ := datasync.ParsePublicKey(k.pubA)
	for range 30 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := nb.Connect(ctx, addr, pubA); err == nil {
			t.Fatal("listener accepted a key that is not --peer")
		}
		cancel()
	}
	time.Sleep(200 * time.Millisecond) // let the listener log what it logs
	if n := strings.Count(l.stderr.String(), "refused a connection from key "+k.pubB); n != 1 {
		t.Fatalf("listener logged %d refusals of one key (want 1):\n%s", n, &l.stderr)
	}
}

// Issue 17 point 11: keygen prints the public key of an existing key file
// with --show, and refuses to overwrite one, saying how to print it.
func TestPeerKeygenShow(t *testing.T) {
	k := newKeys(t)
	if got := strings.TrimSpace(ferryOK(t, "peer", "keygen", "--show", k.a)); got != k.pubA {
		t.Fatalf("--show printed %q, want %q", got, k.pubA)
	}
	fails(t, "--show", "peer", "keygen", k.a)
}

func ferryOK(t *testing.T, args ...string) string {
	t.Helper()
	p := ferry(t, args...)
	if code := p.wait(t); code != 0 {
		t.Fatalf("ferry %v exited %d: %s", args, code, &p.stderr)
	}
	return p.stdout.String()
}
