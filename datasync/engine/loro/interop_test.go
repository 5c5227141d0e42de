package loro

import (
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

type interopAnswer struct {
	Update    string `json:"update"`
	JSON      string `json:"json"`
	Version   string `json:"version"`
	Snapshot  string `json:"snapshot"`
	FreshJSON string `json:"freshJson"`
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInteropWithNode: concurrent edits on a Ferry replica and a loro-crdt
// replica under Node converge both ways; a document written by Ferry reads
// in Node with the same JSON, and one written by Node reads in Ferry with
// the same JSON.
func TestInteropWithNode(t *testing.T) {
	g := newEngine(t, 1)
	check(t, g.Set("d", "a", Value{Kind: Text, Text: "from go"}))
	check(t, g.Set("d", "b", Value{Kind: Int, Int: 7}))
	check(t, g.SetRef("d", "photo", refFor("photo.jpg")))
	check(t, g.Delete("d", "b"))
	goUpdate := must[[]byte](t)(g.Changes("d", nil))
	goSnap := must[[]byte](t)(g.Snapshot("d"))
	goJSON := string(must[[]byte](t)(g.JSON("d")))

	var ans interopAnswer
	node(t, map[string]any{
		"mode": "interop", "peer": 2,
		"steps": []step{
			set(2, "a", text("from node")),
			set(2, "c", &jv{Kind: "bytes", Value: "cafe"}),
			{Op: "del", Coll: "data", Key: "b"},
			{Op: "container", Coll: "data", Key: "nested"}, // not a DATA_V1 value
		},
		"import":   []string{hex.EncodeToString(goUpdate)},
		"snapshot": hex.EncodeToString(goSnap),
	}, &ans)

	if !sameJSON(t, ans.FreshJSON, goJSON) {
		t.Errorf("Ferry's document in Node: %s, in Ferry: %s", ans.FreshJSON, goJSON)
	}
	if out, err := g.Import("d", unhex(t, ans.Update)); out != engine.Applied {
		t.Fatalf("import Node's update: %v %v", out, err)
	}
	if got := string(must[[]byte](t)(g.JSON("d"))); !sameJSON(t, got, ans.JSON) {
		t.Errorf("not converged:\n ferry %s\n node  %s", got, ans.JSON)
	}
	gv := mustVV(must[[]byte](t)(g.Version("d")))
	nv := mustVV(unhex(t, ans.Version))
	if !reflect.DeepEqual(gv, nv) || len(gv) != 2 {
		t.Errorf("versions: ferry %v node %v", gv, nv)
	}
	fresh := newEngine(t, 3)
	if out, err := fresh.ImportSnapshot("d", unhex(t, ans.Snapshot)); out != engine.Applied {
		t.Fatalf("import Node's snapshot: %v %v", out, err)
	}
	if got := string(must[[]byte](t)(fresh.JSON("d"))); !sameJSON(t, got, ans.JSON) {
		t.Errorf("Node's document in Ferry: %s, in Node: %s", got, ans.JSON)
	}
	if v, ok := fresh.Get("d", "c"); !ok || v.Kind != Bytes || hex.EncodeToString(v.Bytes) != "cafe" {
		t.Errorf("Node's bytes value read back as %+v %v", v, ok)
	}
	if r, ok := fresh.Ref("d", "photo"); !ok || r != refFor("photo.jpg") {
		t.Errorf("Ferry's reference read back through Node as %+v %v", r, ok)
	}
	// A nested container replicates (it is in the JSON) but reads as absent.
	fresh.mu.Lock()
	live := fresh.in.HeapLive()
	fresh.mu.Unlock()
	for range 3 {
		if v, ok := fresh.Get("d", "nested"); ok {
			t.Errorf("nested container read as %+v", v)
		}
	}
	if _, ok := fresh.Values("d", DefaultCollection)["nested"]; ok {
		t.Error("nested container listed among the values")
	}
	fresh.mu.Lock()
	leaked := fresh.in.HeapLive() - live
	fresh.mu.Unlock()
	if leaked != 0 {
		t.Errorf("reading a container leaked %d JS values", leaked)
	}
}
