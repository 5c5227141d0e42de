package exchange

import (
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// FuzzSessionReceive: any bytes from a peer are answered without panicking,
// with a bounded number of well-formed frames of the session's version.
func FuzzSessionReceive(f *testing.F) {
	a, b := pair(f)
	_ = b.kv.Set("d", "k", []byte("v"))
	ch, _ := b.kv.Changes("d", nil)
	snap, _ := b.kv.Snapshot("d")
	for _, fr := range []frame.Frame{
		{Kind: frame.KindOffer, Docs: map[string][]byte{"d": {}, "e": {1}}},
		{Kind: frame.KindDelta, Doc: "d", Blob: ch},
		{Kind: frame.KindSnap, Doc: "d", Blob: snap},
		{Kind: frame.KindNeedSnap, Doc: "d"},
	} {
		f.Add(wire(f, fr))
	}
	_ = a
	f.Fuzz(func(t *testing.T, in []byte) {
		a, _ := pair(t)
		_ = a.kv.Set("d", "k", []byte("mine"))
		outs := a.sess["b"].Receive(in)
		if len(outs) > 2+len(a.kv.Docs()) {
			t.Fatalf("%d answers to one frame", len(outs))
		}
		for _, o := range outs {
			if o.Frame == nil {
				continue
			}
			if o.Frame.V != engine.KVEncoding.V {
				t.Fatalf("answer in version %d", o.Frame.V)
			}
			if _, err := frame.Marshal(*o.Frame); err != nil {
				t.Fatalf("answer does not marshal: %v", err)
			}
		}
	})
}
