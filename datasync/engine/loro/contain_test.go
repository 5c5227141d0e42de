package loro

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/internal/realtest"
)

// filled returns an engine holding doc "d" with a few keys, and a valid
// change and snapshot of another replica's edits to it.
func filled(t testing.TB) (e *Engine, change, snap []byte) {
	t.Helper()
	e = newEngine(t, 1)
	check(t, e.Set("d", "k", Value{Kind: Text, Text: "held"}))
	o := newEngine(t, 2)
	for i := range 20 {
		check(t, o.Set("d", fmt.Sprintf("o%d", i), Value{Kind: Text, Text: strings.Repeat("x", i)}))
	}
	return e, must[[]byte](t)(o.Changes("d", nil)), must[[]byte](t)(o.Snapshot("d"))
}

type state struct{ version, json []byte }

func stateOf(t testing.TB, e *Engine) state {
	t.Helper()
	return state{must[[]byte](t)(e.Version("d")), must[[]byte](t)(e.JSON("d"))}
}

func (s state) same(o state) bool {
	return bytes.Equal(s.version, o.version) && bytes.Equal(s.json, o.json)
}

// TestHostileBlobsChangeNothing: garbage, truncated, checksum-broken,
// oversized and wrong-kind blobs from a peer are Unreadable with an error,
// change neither version nor content, and never take the process down.
func TestHostileBlobsChangeNothing(t *testing.T) {
	e, change, snap := filled(t)
	e.opts.MaxBlobBytes = 1 << 20
	flipped := bytes.Clone(change)
	flipped[len(flipped)-3] ^= 0x40
	header := bytes.Clone(change)
	header[20] ^= 0x01
	cases := map[string][]byte{
		"empty":             {},
		"garbage":           []byte("definitely not a loro blob"),
		"magic only":        change[:4],
		"truncated":         change[:len(change)/2],
		"truncated by one":  change[:len(change)-1],
		"checksum broken":   flipped,
		"header broken":     header,
		"oversized":         append(bytes.Clone(change), make([]byte, 1<<20)...),
		"snapshot as delta": snap,
		"trailing bytes":    append(bytes.Clone(change), 0, 1, 2),
	}
	before := stateOf(t, e)
	for name, blob := range cases {
		out, err := e.Import("d", blob)
		if out != engine.Unreadable || err == nil || !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: Import = %v, %v", name, out, err)
		}
		if name != "snapshot as delta" {
			if out, err := e.ImportSnapshot("d", blob); out != engine.Unreadable || err == nil {
				t.Errorf("%s: ImportSnapshot = %v, %v", name, out, err)
			}
		}
		if after := stateOf(t, e); !after.same(before) {
			t.Fatalf("%s changed the document: %s -> %s", name, before.json, after.json)
		}
	}
	if out, err := e.ImportSnapshot("d", change); out != engine.Unreadable || err == nil {
		t.Errorf("delta as snapshot: %v %v", out, err)
	}
	for _, blob := range [][]byte{[]byte("garbage"), change[:10]} {
		if out, _ := e.Import("new", blob); out != engine.Unreadable || e.Has("new") {
			t.Fatalf("an unreadable change made a document: %v", out)
		}
		if out, _ := e.ImportSnapshot("new", blob); out != engine.Unreadable || e.Has("new") {
			t.Fatalf("an unreadable snapshot made a document: %v", out)
		}
	}
	if out, _ := e.Import("d", change); out != engine.Applied {
		t.Fatalf("the intact change after the hostile ones: %v", out)
	}
}

// TestTrapRebuildsFromKeptBytes: a trap discards the instance; every
// document comes back from the bytes the engine kept, and the engine goes
// on working.
func TestTrapRebuildsFromKeptBytes(t *testing.T) {
	e, change, _ := filled(t)
	check(t, e.Set("other", "x", Value{Kind: Bool, Bool: true}))
	if out, _ := e.Import("d", change); out != engine.Applied {
		t.Fatal(out)
	}
	check(t, e.Compact("other"))
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 300 { // past foldBytes: the kept changes fold into a snapshot
		b := make([]byte, 300)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		check(t, e.Set("d", fmt.Sprint("fold", i%50), Value{Kind: Bytes, Bytes: b}))
	}
	before := stateOf(t, e) // Version keeps the local edits, which folds them
	e.mu.Lock()
	folded := len(e.docs["d"].base) > 0 && e.docs["d"].logBytes < foldBytes
	e.mu.Unlock()
	if !folded {
		t.Fatalf("the kept changes never folded: base %d, log %d bytes", len(e.docs["d"].base), e.docs["d"].logBytes)
	}
	otherBefore := must[[]byte](t)(e.JSON("other"))

	e.mu.Lock()
	ctx := context.Background()
	_, err := e.in.Call(ctx, "lorodoc_opCount", 0) // a null LoroDoc: wasm-bindgen throws through the module
	if !errors.Is(err, ErrTrapped) {
		e.mu.Unlock()
		t.Fatalf("null document call: %v", err)
	}
	err = e.trapped(ctx, err)
	e.mu.Unlock()
	if !errors.Is(err, ErrTrapped) {
		t.Fatal(err)
	}
	if _, rebuilds := e.Stats(); rebuilds != 1 {
		t.Fatalf("rebuilds = %d", rebuilds)
	}
	if after := stateOf(t, e); !after.same(before) {
		t.Fatalf("after rebuild %s, before %s", after.json, before.json)
	}

	if got := must[[]byte](t)(e.JSON("other")); !bytes.Equal(got, otherBefore) {
		t.Fatalf("compacted document after rebuild %s, before %s", got, otherBefore)
	}
	check(t, e.Set("d", "after", Value{Kind: Text, Text: "rebuild"}))
	if v, ok := e.Get("d", "after"); !ok || v.Text != "rebuild" {
		t.Fatalf("edit after rebuild: %+v %v", v, ok)
	}
}

// bigChange is a valid change of 4000 keys of 900 bytes (about 3.6 MB).
func bigChange(t testing.TB) []byte {
	big := newEngine(t, 2)
	vals := map[string]Value{}
	for i := range 4000 {
		vals[fmt.Sprintf("key-%05d", i)] = Value{Kind: Text, Text: strings.Repeat(fmt.Sprint(i%10), 900)}
	}
	check(t, big.SetMany("d", DefaultCollection, vals))
	return must[[]byte](t)(big.Changes("d", nil))
}

// TestDeadlineEndsCallAndRecovers: an import that runs past the call
// deadline is ended (the engine is not held), answered Unreadable, and
// the instance is rebuilt with the document as it was.
func TestDeadlineEndsCallAndRecovers(t *testing.T) {
	// 40,000 ops: its import takes several times the deadline, while the
	// test's own small operations take a small fraction of it.
	big := newEngine(t, 2)
	vals := map[string]Value{}
	for i := range 40000 {
		vals[fmt.Sprint("k", i)] = Value{Kind: Int, Int: int64(i)}
	}
	check(t, big.SetMany("d", DefaultCollection, vals))
	change := must[[]byte](t)(big.Changes("d", nil))
	ctx := context.Background()
	rt, err := NewRuntime(ctx, RuntimeConfig{CacheDir: cacheDir(), CallTimeout: 100 * time.Millisecond})
	check(t, err)
	defer rt.Close(ctx)
	e, err := New(ctx, rt, Options{Peer: 1})
	check(t, err)
	check(t, e.Set("d", "k", Value{Kind: Text, Text: "held"}))
	before := stateOf(t, e)
	start := time.Now()
	out, err := e.Import("d", change)
	if out != engine.Unreadable || !errors.Is(err, ErrTrapped) {
		t.Fatalf("import past the deadline: %v %v", out, err)
	}
	if d := time.Since(start); d > realtest.Scale(5*time.Second) {
		t.Fatalf("the deadline did not end the call: %v", d)
	}
	if _, rebuilds := e.Stats(); rebuilds != 1 {
		t.Fatalf("rebuilds %d", rebuilds)
	}
	if after := stateOf(t, e); !after.same(before) {
		t.Fatalf("after the deadline %s, before %s", after.json, before.json)
	}
}

// TestMemoryCapTrapsAndRecovers: a valid change too large for the memory
// cap traps the instance instead of growing memory; the engine answers
// Unreadable, rebuilds, and holds what it held.
func TestMemoryCapTrapsAndRecovers(t *testing.T) {
	change := bigChange(t)
	ctx := context.Background()
	rt, err := NewRuntime(ctx, RuntimeConfig{CacheDir: cacheDir(), MemoryLimitPages: 48}) // 3 MiB
	check(t, err)
	defer rt.Close(ctx)
	e, err := New(ctx, rt, Options{Peer: 1})
	check(t, err)
	check(t, e.Set("d", "k", Value{Kind: Text, Text: "held"}))
	before := stateOf(t, e)
	check(t, e.Set("other", "local", tv("not yet kept"))) // kept lazily, before the import
	out, err := e.Import("d", change)
	if out != engine.Unreadable || !errors.Is(err, ErrTrapped) {
		t.Fatalf("import over the cap: %v %v", out, err)
	}
	mem, rebuilds := e.Stats()
	if rebuilds != 1 || mem > 48<<16 {
		t.Fatalf("rebuilds %d, memory %d", rebuilds, mem)
	}
	if after := stateOf(t, e); !after.same(before) {
		t.Fatalf("after the trap %s, before %s", after.json, before.json)
	}
	if v, ok := e.Get("other", "local"); !ok || v.Text != "not yet kept" {
		t.Fatal("a local edit made before the trap was lost")
	}
}
