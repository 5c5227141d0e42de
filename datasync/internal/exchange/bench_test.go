package exchange

import (
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// inSync returns two replicas holding the same n documents.
func inSync(tb testing.TB, n int) *cluster {
	c := newCluster(tb, 1, "a", "b")
	a := c.reps["a"]
	for i := range n {
		_ = a.kv.Set(fmt.Sprintf("doc%04d", i), "k", []byte("value"))
	}
	c.send(a, a.sess["b"].Offer())
	c.pump(1 << 20)
	if err := c.converged(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// exchangeCost runs one exchange started by from's offer to the other
// replica and returns frames, bytes and offer frames delivered.
func exchangeCost(c *cluster, from, to string) (frames, bytes, offerFrames int) {
	r := c.reps[from]
	sent0, bytes0 := c.net.Sent, c.net.Bytes
	outs := r.sess[to].Offer()
	offerFrames = len(outs)
	c.send(r, outs)
	c.pump(1 << 20)
	return c.net.Sent - sent0, c.net.Bytes - bytes0, offerFrames
}

// TestThreeFramesForOneChange: 128 documents, one changed: offer, catch-up,
// reply offer, then silence (the goal), whichever side starts.
func TestThreeFramesForOneChange(t *testing.T) {
	for _, starter := range []string{"a", "b"} {
		c := inSync(t, 128)
		_ = c.reps["a"].kv.Set("doc0042", "k", []byte("changed"))
		other := map[string]string{"a": "b", "b": "a"}[starter]
		frames, _, split := exchangeCost(c, starter, other)
		if frames != 3 || split != 1 {
			t.Fatalf("%s starts: %d frames, offer in %d", starter, frames, split)
		}
		if err := c.converged(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInSyncCostIsBounded: a space in sync costs exactly its offer and the
// reply offers it draws: for 1,024 documents, 8 offer frames, each answered
// by a complete 8-frame reply offer, and nothing else.
func TestInSyncCostIsBounded(t *testing.T) {
	c := inSync(t, 1024)
	frames, _, split := exchangeCost(c, "a", "b")
	if split != 8 || frames != 8+8*8 {
		t.Fatalf("%d frames, offer in %d", frames, split)
	}
}

func BenchmarkConverge128OneChanged(b *testing.B) {
	var frames, bytes int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		c := inSync(b, 128)
		_ = c.reps["a"].kv.Set("doc0042", "k", fmt.Appendf(nil, "changed %d", i))
		b.StartTimer()
		frames, bytes, _ = exchangeCost(c, "b", "a")
	}
	b.ReportMetric(float64(frames), "frames/op")
	b.ReportMetric(float64(bytes), "wire-bytes/op")
}

func Benchmark1024InSync(b *testing.B) {
	c := inSync(b, 1024)
	var frames, bytes, split int
	for b.Loop() {
		frames, bytes, split = exchangeCost(c, "a", "b")
	}
	b.ReportMetric(float64(frames), "frames/op")
	b.ReportMetric(float64(split), "offer-frames")
	b.ReportMetric(float64(bytes), "wire-bytes/op")
}

// BenchmarkAnchorOfferCodec is the anchor for the exchange benchmarks: the
// cost of marshalling and parsing the 128-document offer alone.
func BenchmarkAnchorOfferCodec(b *testing.B) {
	c := inSync(b, 128)
	f := *c.reps["a"].sess["b"].Offer()[0].Frame
	for b.Loop() {
		w, _ := frame.Marshal(f)
		if _, err := frame.Parse(w, f.V); err != nil {
			b.Fatal(err)
		}
	}
}
