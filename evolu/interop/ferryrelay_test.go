package interop

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ferryBinary builds cmd/ferry once per test process.
var ferryBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ferry-interop-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ferry")
	root, err := filepath.Abs("../..")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ferry")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err: err, out: string(out)}
	}
	return bin, nil
})

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build ./cmd/ferry: " + e.err.Error() + "\n" + e.out }

// startFerryRelayProcess runs `ferry relay --addr 127.0.0.1:<free port> --db
// <tmp>/relay.db` as its own process (so its peak RSS is measured like the
// TS relay's) and waits until it accepts connections.
func startFerryRelayProcess(t testing.TB) *relayProc {
	t.Helper()
	return startFerryRelayProcessIn(t, t.TempDir())
}

// startFerryRelayProcessIn is startFerryRelayProcess with its database in
// dir, which may hold the database of an earlier run (a restarted relay).
func startFerryRelayProcessIn(t testing.TB, dir string) *relayProc {
	t.Helper()
	bin, err := ferryBinary()
	if err != nil {
		t.Fatal(err)
	}
	port := freeLoopbackPort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "relay", "--addr", addr, "--db", filepath.Join(dir, "relay.db"))
	cmd.Dir = dir
	r := &relayProc{cmd: cmd, Port: port, URL: "ws://" + addr}
	cmd.Stdout = r
	cmd.Stderr = r
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ferry relay: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	var stopErr error
	r.stop = func() error {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM) // graceful shutdown
			select {
			case stopErr = <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				stopErr = <-exited
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = r.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return r
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("ferry relay exited: %v\n%s", err, r.Stderr())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ferry relay does not listen on %s: %s", addr, r.Stderr())
		}
	}
}

// withTimeout is a context for one test step.
func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
