package loro

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/internal/realtest"
)

// The package's tests share one runtime, compiled through a wazero
// compilation cache in the temp dir (shared with the other packages that
// run the module), so the ~1 s compile is paid once per machine.
var shared struct {
	once sync.Once
	rt   *Runtime
	err  error
}

func cacheDir() string { return filepath.Join(os.TempDir(), "ferry-loro-wazero-cache") }

func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	shared.once.Do(func() {
		shared.rt, shared.err = NewRuntime(context.Background(), RuntimeConfig{CacheDir: cacheDir()})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.rt
}

func newEngine(t testing.TB, peer uint64) *Engine {
	t.Helper()
	e, err := New(context.Background(), testRuntime(t), Options{Peer: peer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// node runs testdata/crosscheck.cjs with the real loro-crdt 1.13.9 that
// scripts/setup.d/35-loro.sh installs, and decodes its answer into out.
func node(t testing.TB, req, out any) {
	t.Helper()
	bin, dir := realtest.Getenv("FERRY_LORO_NODE"), realtest.Getenv("FERRY_LORO_DIR")
	if bin == "" || dir == "" {
		realtest.Unavailable(t, "loro-crdt 1.13.9 for Node 24 not installed (run scripts/setup.d/30-evolu.sh and 35-loro.sh)")
		return
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "testdata/crosscheck.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("node crosscheck: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatalf("node crosscheck answer: %v", err)
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func refFor(name string) attach.Ref {
	return attach.Ref{Hash: testHash, Size: 1234, Name: name, Mime: "image/jpeg"}
}
