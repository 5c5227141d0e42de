package loro

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/loro/internal/lorowasm"
)

// fromNode makes a document as peer 2 of the real loro-crdt with steps and
// loads its snapshot into a fresh engine as document "d"; it answers the
// engine and Node's JSON of the document.
func fromNode(t *testing.T, steps []step) (*Engine, string) {
	t.Helper()
	var ans interopAnswer
	node(t, map[string]any{"mode": "interop", "peer": 2, "steps": steps, "import": []string{}}, &ans)
	e := newEngine(t, 3)
	if out, err := e.ImportSnapshot("d", unhex(t, ans.Snapshot)); out != engine.Applied {
		t.Fatalf("import Node's snapshot: %v %v", out, err)
	}
	return e, ans.JSON
}

// TestForeignNonFiniteFloats: a Loro peer may write NaN and ±Infinity,
// which Ferry never writes; the document still reads whole through JSON,
// with those numbers marked as {"$float": "NaN"} and so on (the same
// rendering crosscheck.cjs gives Node's toJSON), and through Get/Values.
func TestForeignNonFiniteFloats(t *testing.T) {
	fl := func(s string) *jv { return &jv{Kind: "float", Value: s} }
	e, nodeJSON := fromNode(t, []step{
		set(2, "nan", fl("NaN")),
		set(2, "inf", fl("Infinity")),
		set(2, "ninf", fl("-Infinity")),
		set(2, "half", &jv{Kind: "float", Value: 1.5}),
	})
	got, err := e.JSON("d")
	if err != nil {
		t.Fatalf("JSON of a document holding NaN/±Inf: %v", err)
	}
	if !sameJSON(t, string(got), nodeJSON) {
		t.Errorf("JSON:\n ferry %s\n node  %s", got, nodeJSON)
	}
	if !strings.Contains(string(got), `"inf":{"$float":"Infinity"}`) {
		t.Errorf("JSON does not mark +Inf: %s", got)
	}
	vals := e.Values("d", DefaultCollection)
	for key, want := range map[string]float64{"inf": math.Inf(1), "ninf": math.Inf(-1)} {
		if v, ok := e.Get("d", key); !ok || v.Kind != Float || v.Float != want {
			t.Errorf("Get %s = %+v %v", key, v, ok)
		}
		if v := vals[key]; v.Kind != Float || v.Float != want {
			t.Errorf("Values[%s] = %+v", key, v)
		}
	}
	if v, ok := e.Get("d", "nan"); !ok || v.Kind != Float || !math.IsNaN(v.Float) {
		t.Errorf("Get nan = %+v %v", v, ok)
	}
	// Ferry still refuses to write one.
	if err := e.Set("d", "x", Value{Kind: Float, Float: math.NaN()}); !errors.Is(err, ErrValue) {
		t.Errorf("writing NaN: %v", err)
	}
}

// TestForeignContainersAreNotValues: nested containers a Loro peer wrote
// (a counter, a text, a list, a map, and a map container shaped like an
// attachment reference) are not values of the model: Values leaves them
// out as GetIn and Ref do, and never reads one as a reference. They still
// replicate and show in JSON.
func TestForeignContainersAreNotValues(t *testing.T) {
	ref := &jv{Kind: "attachment", Hash: testHash, Size: 1234, Name: "p.jpg", Mime: "image/jpeg"}
	e, nodeJSON := fromNode(t, []step{
		set(2, "plain", text("a value")),
		set(2, "realref", ref),
		{Op: "counter", Coll: "data", Key: "cnt"},
		{Op: "textc", Coll: "data", Key: "txt"},
		{Op: "listc", Coll: "data", Key: "lst"},
		{Op: "container", Coll: "data", Key: "nested"},
		{Op: "refmap", Coll: "data", Key: "fakeref", Value: ref},
	})
	if got := string(must[[]byte](t)(e.JSON("d"))); !sameJSON(t, got, nodeJSON) {
		t.Errorf("JSON:\n ferry %s\n node  %s", got, nodeJSON)
	}
	e.mu.Lock()
	live := e.in.HeapLive()
	e.mu.Unlock()
	vals := e.Values("d", DefaultCollection)
	for _, k := range []string{"cnt", "txt", "lst", "nested", "fakeref"} {
		if v, ok := vals[k]; ok {
			t.Errorf("Values reads container %s as %+v", k, v)
		}
		if v, ok := e.Get("d", k); ok {
			t.Errorf("Get reads container %s as %+v", k, v)
		}
		if r, ok := e.Ref("d", k); ok {
			t.Errorf("Ref reads container %s as %+v", k, r)
		}
	}
	if len(vals) != 2 || vals["plain"].Text != "a value" || vals["realref"].Kind != Attachment {
		t.Errorf("Values = %+v, want plain and realref", vals)
	}
	e.mu.Lock()
	leaked := e.in.HeapLive() - live
	e.mu.Unlock()
	if leaked != 0 {
		t.Errorf("reading containers leaked %d JS values", leaked)
	}
}

// TestCollectionNamesLoroRefuses: names with "/" or NUL are refused by
// loro-crdt as root names; Ferry refuses them up front with ErrValue and
// no document is left behind, on every write path.
func TestCollectionNamesLoroRefuses(t *testing.T) {
	bad := []string{"a/b", "/", "a\x00b", "\x00"}
	good := []string{"a.b", "ünï €", strings.Repeat("x", 1024)}
	var takes []bool
	node(t, map[string]any{"mode": "rootnames", "names": append(append([]string{}, bad...), good...)}, &takes)
	for i, n := range append(append([]string{}, bad...), good...) {
		if want := i >= len(bad); takes[i] != want {
			t.Fatalf("loro-crdt takes %q as a root name: %v, the test expects %v", n, takes[i], want)
		}
	}
	e := newEngine(t, 1)
	v := Value{Kind: Int, Int: 1}
	for _, n := range bad {
		for op, err := range map[string]error{
			"SetIn":    e.SetIn("d", n, "k", v),
			"SetMany":  e.SetMany("d", n, map[string]Value{"k": v}),
			"DeleteIn": e.DeleteIn("d", n, "k"),
		} {
			var raw *lorowasm.JSError
			if !errors.Is(err, ErrValue) || errors.As(err, &raw) {
				t.Errorf("%s with collection %q: %v, want the engine's ErrValue", op, n, err)
			}
		}
		if e.Has("d") {
			t.Fatalf("a refused first write with collection %q left a document", n)
		}
	}
	for _, n := range good {
		check(t, e.SetIn("d", n, "k", v))
		if got, ok := e.GetIn("d", n, "k"); !ok || got.Kind != Int || got.Int != 1 {
			t.Errorf("collection %q read back %+v %v", hex.EncodeToString([]byte(n)), got, ok)
		}
	}
}

// TestFailedFirstWriteLeavesNoDocument: a first write whose storage hook
// fails leaves no empty document behind.
func TestFailedFirstWriteLeavesNoDocument(t *testing.T) {
	e, err := New(t.Context(), testRuntime(t), Options{Peer: 1, Persist: func(string, []byte) error {
		return errors.New("disk full")
	}})
	check(t, err)
	t.Cleanup(func() { _ = e.Close(t.Context()) })
	if err := e.Set("d", "k", Value{Kind: Int, Int: 1}); !errors.Is(err, engine.ErrStorage) {
		t.Fatalf("Set with a failing store: %v", err)
	}
	if e.Has("d") || len(e.Docs()) != 0 {
		t.Errorf("a failed first write left documents %v", e.Docs())
	}
}
