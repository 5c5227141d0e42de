package loro

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
)

// jv is a value as the cross-check corpus writes it (crosscheck.cjs reads
// the same shape).
type jv struct {
	Kind  string `json:"kind"`
	Value any    `json:"value,omitempty"`
	Hash  string `json:"hash,omitempty"`
	Size  int64  `json:"size,omitempty"`
	Name  string `json:"name,omitempty"`
	Mime  string `json:"mime,omitempty"`
}

func (v jv) value() Value {
	switch v.Kind {
	case "null":
		return Value{Kind: Null}
	case "bool":
		return Value{Kind: Bool, Bool: v.Value.(bool)}
	case "int":
		return Value{Kind: Int, Int: int64(v.Value.(float64))}
	case "float":
		return Value{Kind: Float, Float: v.Value.(float64)}
	case "text":
		return Value{Kind: Text, Text: v.Value.(string)}
	case "bytes":
		b, _ := hex.DecodeString(v.Value.(string))
		return Value{Kind: Bytes, Bytes: b}
	case "attachment":
		return Value{Kind: Attachment, Ref: attach.Ref{Hash: v.Hash, Size: v.Size, Name: v.Name, Mime: v.Mime}}
	}
	panic("unknown kind " + v.Kind)
}

type step struct {
	Op      string  `json:"op"`
	Peer    uint64  `json:"peer,omitempty"`
	From    uint64  `json:"from,omitempty"`
	To      uint64  `json:"to,omitempty"`
	Coll    string  `json:"coll,omitempty"`
	Key     string  `json:"key,omitempty"`
	Value   *jv     `json:"value,omitempty"`
	Entries [][]any `json:"entries,omitempty"`
}

type scenario struct {
	Name  string   `json:"name"`
	Peers []uint64 `json:"peers"`
	Steps []step   `json:"steps"`
}

type record struct {
	Update   string   `json:"update,omitempty"`
	Snapshot string   `json:"snapshot,omitempty"`
	Trimmed  bool     `json:"trimmed,omitempty"`
	Versions []string `json:"versions"`
}

type final struct {
	Snapshot string `json:"snapshot"`
	Updates  string `json:"updates"`
	JSON     string `json:"json"`
}

type result struct {
	Steps []record `json:"steps"`
	Final []final  `json:"final"`
}

const testHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func text(s string) *jv { return &jv{Kind: "text", Value: s} }

func set(peer uint64, key string, v *jv) step {
	return step{Op: "set", Peer: peer, Coll: "data", Key: key, Value: v}
}

func syncStep(from, to uint64) step { return step{Op: "sync", From: from, To: to} }

// corpus is the operations both sides run.
func corpus() []scenario {
	values := scenario{Name: "value kinds", Peers: []uint64{1, 2}, Steps: []step{
		set(1, "null", &jv{Kind: "null"}),
		set(1, "bool", &jv{Kind: "bool", Value: true}),
		set(1, "int", &jv{Kind: "int", Value: float64(-42)}),
		set(1, "maxint", &jv{Kind: "int", Value: float64(MaxSafeInt)}),
		set(1, "float", &jv{Kind: "float", Value: 1.5}),
		set(1, "tiny", &jv{Kind: "float", Value: -2.5e-300}),
		set(1, "text", text("héllo, wörld ✓")),
		set(1, "bytes", &jv{Kind: "bytes", Value: "00ff10"}),
		set(1, "ref", &jv{Kind: "attachment", Hash: testHash, Size: 4096, Name: "photo.jpg", Mime: "image/jpeg"}),
		set(1, "bare", &jv{Kind: "attachment", Hash: testHash, Size: 1}),
		{Op: "set", Peer: 1, Coll: "other", Key: "k", Value: text("second collection")},
		{Op: "del", Peer: 1, Coll: "data", Key: "bool"},
		syncStep(1, 2),
		syncStep(2, 1),
	}}
	concurrent := scenario{Name: "concurrent edits", Peers: []uint64{7, 9, 11}, Steps: []step{
		set(7, "a", text("7a")),
		set(9, "a", text("9a")),
		set(11, "b", text("11b")),
		syncStep(7, 9),
		set(9, "c", text("9c")),
		syncStep(9, 11),
		set(11, "a", text("11a after 9")),
		{Op: "del", Peer: 7, Coll: "data", Key: "a"},
		syncStep(11, 7), syncStep(7, 9), syncStep(9, 11), syncStep(11, 9), syncStep(7, 11), syncStep(9, 7),
	}}
	var many [][]any
	for i := range 50 {
		many = append(many, []any{fmt.Sprintf("k%03d", i), text(strings.Repeat("v", i))})
	}
	compaction := scenario{Name: "compaction", Peers: []uint64{3, 4, 5}, Steps: []step{
		{Op: "batch", Peer: 3, Coll: "data", Entries: many},
		set(3, "k001", text("overwritten")),
		{Op: "del", Peer: 3, Coll: "data", Key: "k002"},
		syncStep(3, 4),
		{Op: "compact", Peer: 3},
		set(3, "after", text("compaction")),
		syncStep(3, 4),
		syncStep(3, 5), // trimmed: 5 is below the shallow root
		{Op: "snap", From: 3, To: 5},
		set(5, "from5", text("x")),
		syncStep(5, 3),
	}}
	return []scenario{values, concurrent, compaction, randomScenario(5, 160)}
}

// randomScenario is a seeded random history over four peers: sets of every
// kind, deletions, batches and pairwise syncs in random order, ending in a
// sync between every pair.
func randomScenario(seed uint64, steps int) scenario {
	rng := rand.New(rand.NewPCG(seed, 9))
	peers := []uint64{21, 22, 23, 24}
	sc := scenario{Name: fmt.Sprintf("random %d", seed), Peers: peers}
	val := func(i int) *jv {
		switch rng.IntN(5) {
		case 0:
			return &jv{Kind: "int", Value: float64(rng.IntN(1000) - 500)}
		case 1:
			return &jv{Kind: "float", Value: float64(i) + 0.5}
		case 2:
			return &jv{Kind: "bool", Value: rng.IntN(2) == 0}
		case 3:
			return &jv{Kind: "bytes", Value: fmt.Sprintf("%04x", i)}
		}
		return text(fmt.Sprint("v", i))
	}
	for i := range steps {
		p := peers[rng.IntN(len(peers))]
		key := fmt.Sprint("k", rng.IntN(8))
		switch x := rng.IntN(10); {
		case x < 5:
			sc.Steps = append(sc.Steps, set(p, key, val(i)))
		case x < 6:
			sc.Steps = append(sc.Steps, step{Op: "del", Peer: p, Coll: "data", Key: key})
		case x < 7:
			sc.Steps = append(sc.Steps, step{Op: "batch", Peer: p, Coll: "data",
				Entries: [][]any{{key + "a", val(i)}, {key + "b", val(i)}}})
		default:
			q := peers[rng.IntN(len(peers))]
			if q != p {
				sc.Steps = append(sc.Steps, syncStep(p, q))
			}
		}
	}
	for _, p := range peers { // and everyone converges
		for _, q := range peers {
			if p != q {
				sc.Steps = append(sc.Steps, syncStep(p, q))
			}
		}
	}
	return sc
}

// runGo runs sc on Ferry's engine, recording what crosscheck.cjs records.
func runGo(t *testing.T, sc scenario) result {
	engines := map[uint64]*Engine{}
	for _, p := range sc.Peers {
		engines[p] = newEngine(t, p)
		check(t, engines[p].Create("d"))
	}
	var res result
	for i, s := range sc.Steps {
		var rec record
		switch s.Op {
		case "set":
			check(t, engines[s.Peer].SetIn("d", s.Coll, s.Key, s.Value.value()))
		case "del":
			check(t, engines[s.Peer].DeleteIn("d", s.Coll, s.Key))
		case "batch":
			vals := map[string]Value{}
			for _, kv := range s.Entries {
				vals[kv[0].(string)] = kv[1].(*jv).value()
			}
			check(t, engines[s.Peer].SetMany("d", s.Coll, vals))
		case "sync":
			src, dst := engines[s.From], engines[s.To]
			ch, err := src.Changes("d", must[[]byte](t)(dst.Version("d")))
			if errors.Is(err, engine.ErrTrimmed) {
				rec.Trimmed = true
				break
			}
			rec.Update = hex.EncodeToString(must[[]byte](t)(ch, err))
			if out, err := dst.Import("d", ch); err != nil || out == engine.Unreadable {
				t.Fatalf("%s step %d: import %v %v", sc.Name, i, out, err)
			}
		case "snap":
			snap := must[[]byte](t)(engines[s.From].Snapshot("d"))
			rec.Snapshot = hex.EncodeToString(snap)
			if out, err := engines[s.To].ImportSnapshot("d", snap); out != engine.Applied {
				t.Fatalf("%s step %d: import snapshot %v %v", sc.Name, i, out, err)
			}
		case "compact":
			e := engines[s.Peer]
			check(t, e.Compact("d"))
			e.mu.Lock()
			rec.Snapshot = hex.EncodeToString(e.docs["d"].base)
			e.mu.Unlock()
		}
		for _, p := range sc.Peers {
			v := must[[]byte](t)(engines[p].Version("d"))
			if _, err := decodeVV(v); err != nil {
				t.Fatalf("%s step %d: Loro's version %x does not decode in Go: %v", sc.Name, i, v, err)
			}
			rec.Versions = append(rec.Versions, hex.EncodeToString(v))
		}
		res.Steps = append(res.Steps, rec)
	}
	for _, p := range sc.Peers {
		e := engines[p]
		res.Final = append(res.Final, final{
			Snapshot: hex.EncodeToString(must[[]byte](t)(e.Snapshot("d"))),
			Updates:  hex.EncodeToString(allUpdates(t, e, "d")),
			JSON:     string(must[[]byte](t)(e.JSON("d"))),
		})
	}
	return res
}

// TestGoldenAgainstNode: for every scenario of the corpus, the real
// loro-crdt 1.13.9 under Node and Ferry's engine produce byte-identical
// updates, snapshots and version vectors after every step, and the same
// JSON.
func TestGoldenAgainstNode(t *testing.T) {
	sc := corpus()
	var want []result
	node(t, map[string]any{"mode": "corpus", "scenarios": sc}, &want)
	if len(want) != len(sc) {
		t.Fatalf("node answered %d scenarios, want %d", len(want), len(sc))
	}
	for i, s := range sc {
		got := runGo(t, s)
		for j := range s.Steps {
			g, w := got.Steps[j], want[i].Steps[j]
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s step %d (%s):\n go   %+v\n node %+v", s.Name, j, s.Steps[j].Op, g, w)
			}
		}
		for j := range s.Peers {
			g, w := got.Final[j], want[i].Final[j]
			if g.Snapshot != w.Snapshot || g.Updates != w.Updates {
				t.Errorf("%s peer %d: final snapshot/updates differ", s.Name, s.Peers[j])
			}
			if !sameJSON(t, g.JSON, w.JSON) {
				t.Errorf("%s peer %d: json\n go   %s\n node %s", s.Name, s.Peers[j], g.JSON, w.JSON)
			}
			if strings.HasPrefix(s.Name, "random") && g.JSON != got.Final[0].JSON {
				t.Errorf("%s: peer %d did not converge", s.Name, s.Peers[j])
			}
		}
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("json %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("json %q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// allUpdates is export({mode: "update"}), which Changes refuses for a
// compacted document.
func allUpdates(t testing.TB, e *Engine, name string) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := e.ctx()
	defer cancel()
	return must[[]byte](t)(e.in.ExportUpdates(ctx, e.docs[name].h, nil))
}
