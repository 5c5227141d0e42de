package lorowasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/ferry-sync/ferry/internal/realtest"
)

func testRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := NewRuntime(context.Background(), Config{CacheDir: filepath.Join(os.TempDir(), "ferry-loro-wazero-cache")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// shippedGlue reads the JS glue of the installed loro-crdt 1.13.9.
func shippedGlue(t *testing.T) (js, wasm []byte) {
	t.Helper()
	dir := realtest.Getenv("FERRY_LORO_DIR")
	if dir == "" {
		realtest.Unavailable(t, "loro-crdt 1.13.9 not installed (run scripts/setup.d/35-loro.sh)")
		return nil, nil
	}
	pkg := filepath.Join(dir, "node_modules", "loro-crdt", "nodejs")
	js, err := os.ReadFile(filepath.Join(pkg, "loro_wasm.js"))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err = os.ReadFile(filepath.Join(pkg, "loro_wasm_bg.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return js, wasm
}

var exportRE = regexp.MustCompile(`(?m)^module\.exports\.(__wbg_\w+|__wbindgen_\w+) = function`)

// TestGlueCoversShippedImports: the imports the package's own JS glue
// provides, the imports the embedded module declares and the imports the
// Go glue handles are the same set, so a version bump (Loro renames the
// hash-suffixed imports between releases) fails here instead of trapping
// at run time.
func TestGlueCoversShippedImports(t *testing.T) {
	js, wasm := shippedGlue(t)
	if sha256.Sum256(wasm) != sha256.Sum256(WasmBytes()) {
		t.Fatal("the installed package's wasm is not the embedded module")
	}
	var shipped []string
	for _, m := range exportRE.FindAllSubmatch(js, -1) {
		shipped = append(shipped, string(m[1]))
	}
	sort.Strings(shipped)
	imports := testRuntime(t).ImportNames()
	handled, refusedNames := GlueNames()
	if len(shipped) != 112 || !slices.Equal(shipped, imports) {
		t.Fatalf("JS glue provides %d imports, module declares %d; differ: %v", len(shipped), len(imports), diff(shipped, imports))
	}
	if !slices.Equal(imports, handled) {
		t.Fatalf("Go glue handles %d imports, module declares %d; differ: %v", len(handled), len(imports), diff(imports, handled))
	}
	for _, name := range refusedNames {
		if !bytes.Contains(js, []byte("module.exports."+name+" = ")) {
			t.Errorf("refused import %s is not in the shipped glue", name)
		}
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, "-"+x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, "+"+x)
		}
	}
	return out
}

// TestHeapDoesNotLeak: a round of the engine's calls leaves no JS values
// behind on the heap.
func TestHeapDoesNotLeak(t *testing.T) {
	ctx := context.Background()
	in, err := testRuntime(t).NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		d, err := in.NewDoc(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b"} {
			if err := in.MapSet(ctx, d, "data", k, "v"); err != nil {
				t.Fatal(err)
			}
		}
		_ = in.Commit(ctx, d)
		u, _ := in.ExportUpdates(ctx, d, nil)
		v, _ := in.OplogVersion(ctx, d)
		_, _ = in.ExportUpdates(ctx, d, v)
		_, _ = in.ExportSnapshot(ctx, d)
		_, _ = in.ExportShallowSnapshot(ctx, d)
		_, _ = in.DecodeBlobMeta(ctx, u)
		_, _ = in.DecodeBlobMeta(ctx, []byte("garbage"))
		d2, _ := in.NewDoc(ctx, 8)
		_, _ = in.Import(ctx, d2, u)
		_, _ = in.Import(ctx, d2, []byte("garbage"))
		_, _ = in.ToJSON(ctx, d2)
		_ = in.FreeDoc(ctx, d)
		_ = in.FreeDoc(ctx, d2)
	}
	round()
	base := in.HeapLive()
	for range 20 {
		round()
	}
	if got := in.HeapLive(); got > base {
		t.Fatalf("heap holds %d values after 20 rounds, %d after one", got, base)
	}
	if in.Broken() != nil {
		t.Fatal(in.Broken())
	}
}

// TestUnhandledImportRefused: a module import the glue has no entry for
// (as after a Loro bump renames one) fails runtime creation with
// ErrUnhandledImport instead of trapping later.
func TestUnhandledImportRefused(t *testing.T) {
	ctx := context.Background()
	table := glue()
	delete(table, "__wbg_now_829357f5fa91c9dd")
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(os.TempDir(), "ferry-loro-wazero-cache"))
	if err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer rt.Close(ctx)
	r := &Runtime{rt: rt, cfg: Config{CallTimeout: DefaultCallTimeout}}
	if err := r.init(ctx, table); !errors.Is(err, ErrUnhandledImport) || !strings.Contains(err.Error(), "__wbg_now_829357f5fa91c9dd") {
		t.Fatalf("init without one import: %v", err)
	}
}

// TestTrapBreaksInstance: a wasm trap proper (the module told to read past
// its memory) ends the call with ErrTrapped and leaves the instance
// refusing every later call, so its caller rebuilds instead of going on
// with a corrupt one.
func TestTrapBreaksInstance(t *testing.T) {
	ctx := context.Background()
	in, err := testRuntime(t).NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := in.NewDoc(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.Call(ctx, "lorodoc_import", uint64(in.retptr), uint64(d.ptr), 0xFFFFFF00, 0xFF)
	if !errors.Is(err, ErrTrapped) || in.Broken() == nil {
		t.Fatalf("import of bytes past the end of memory: %v", err)
	}
	if _, err := in.OplogVersion(ctx, d); !errors.Is(err, ErrTrapped) {
		t.Fatalf("a broken instance answered: %v", err)
	}
}
