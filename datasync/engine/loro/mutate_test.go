package loro

import (
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// TestMutatedBlobsContained is a property test over blobs that reach
// Loro's decoder: valid changes and snapshots with random bytes flipped,
// inserted or cut and the checksum fixed. Whatever Loro makes of them —
// an error, a trap, an import — the engine does not panic, an Unreadable
// answer changes nothing, and the engine still works afterwards.
func TestMutatedBlobsContained(t *testing.T) {
	e, change, snap := filled(t)
	rng := rand.New(rand.NewPCG(42, 42))
	outcomes := map[engine.Outcome]int{}
	n := 400
	if testing.Short() {
		n = 100
	}
	for i := range n {
		src, asSnap := change, false
		if i%2 == 1 {
			src, asSnap = snap, true
		}
		b := append([]byte{}, src...)
		for range 1 + rng.IntN(4) {
			switch j := 22 + rng.IntN(len(b)-22); rng.IntN(3) {
			case 0:
				b[j] ^= byte(1 << rng.IntN(8))
			case 1:
				b = append(b[:j], append([]byte{byte(rng.Uint32())}, b[j:]...)...)
			default:
				b = append(b[:j], b[j+1:]...)
			}
		}
		b = withChecksum(b)
		before := stateOf(t, e)
		var out engine.Outcome
		var err error
		if asSnap {
			out, err = e.ImportSnapshot("d", b)
		} else {
			out, err = e.Import("d", b)
		}
		outcomes[out]++
		if out == engine.Unreadable && !stateOf(t, e).same(before) {
			t.Fatalf("mutation %d: an unreadable blob changed the document (%v)", i, err)
		}
	}
	_, rebuilds := e.Stats()
	t.Logf("outcomes %v, instance rebuilt %d times", outcomes, rebuilds)
	check(t, e.Set("d", "still", tv("working")))
	if v, ok := e.Get("d", "still"); !ok || v.Text != "working" {
		t.Fatal("the engine stopped working")
	}
}
