package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// FuzzKVImportReordered: three writers edit one document as the fuzzer
// says; each edit's change (computed from the writer's previous version, so
// later changes build on earlier ones) reaches two receivers, one in the
// order made and one in the fuzzer's order with repeats, and the fuzzer's
// raw bytes are imported too. Both receivers converge to the same state,
// and every state they reach reads back from its own snapshot and stamps
// the next local edit as before.
func FuzzKVImportReordered(f *testing.F) {
	f.Add([]byte{0, 5, 9, 2, 14, 3}, uint64(1), []byte{})
	f.Add([]byte{1, 1, 1, 4, 4, 8, 8, 12}, uint64(7), []byte{'d', 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, prog []byte, seed uint64, raw []byte) {
		if len(prog) > 48 {
			prog = prog[:48]
		}
		writers := []*KV{newKV(t, "w0"), newKV(t, "w1"), newKV(t, "w2")}
		var changes [][]byte
		for i, op := range prog {
			w := writers[int(op>>2)%len(writers)]
			before := []byte{}
			if w.Has("d") {
				before = must(w.Version("d"))
			}
			key := fmt.Sprint("k", op>>4)
			if op&3 == 3 {
				_ = w.Delete("d", key)
			} else {
				_ = w.Set("d", key, []byte{byte(i)})
			}
			changes = append(changes, must(w.Changes("d", before)))
		}
		inOrder, shuffled := newKV(t, "r1"), newKV(t, "r2")
		for _, ch := range changes {
			importChecked(t, inOrder, ch)
		}
		rng := rand.New(rand.NewPCG(seed, 17))
		order := append([][]byte{}, changes...)
		for i := 0; i < len(changes)/3; i++ {
			order = append(order, changes[rng.IntN(len(changes))])
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, ch := range order {
			importChecked(t, shuffled, ch)
		}
		if len(changes) > 0 && fmt.Sprint(inOrder.Values("d")) != fmt.Sprint(shuffled.Values("d")) {
			t.Fatalf("reordered delivery diverged: %v vs %v", inOrder.Values("d"), shuffled.Values("d"))
		}
		importChecked(t, shuffled, raw)
		_, _ = shuffled.ImportSnapshot("d", raw)
		for _, k := range []*KV{inOrder, shuffled} {
			if !k.Has("d") {
				continue
			}
			r := newKV(t, k.actor)
			if _, err := r.ImportSnapshot("d", must(k.Snapshot("d"))); err != nil {
				t.Fatalf("own snapshot does not read back: %v", err)
			}
			_ = k.Set("d", "next", []byte("v"))
			_ = r.Set("d", "next", []byte("v"))
			if string(must(r.Snapshot("d"))) != string(must(k.Snapshot("d"))) {
				t.Fatal("the next edit differs after a reload")
			}
		}
	})
}

// importChecked imports ch and checks the outcome's contract: an error
// only with Unreadable (or a local failure), and no state change unless
// it applied or was held behind a missing predecessor.
func importChecked(t *testing.T, k *KV, ch []byte) {
	t.Helper()
	var before []byte
	if k.Has("d") {
		before = must(k.Snapshot("d"))
	}
	out, err := k.Import("d", ch)
	if (out == Unreadable) != (err != nil) {
		t.Fatalf("outcome %v with error %v", out, err)
	}
	if out != Applied && before != nil && string(must(k.Snapshot("d"))) != string(before) {
		t.Fatalf("%v changed the document", out)
	}
}
