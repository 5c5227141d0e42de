package exchange

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// TestRandomizedConvergence: several replicas make random edits and local
// commits while the network loses, duplicates and reorders frames and
// partitions come and go; anti-entropy offers run at random. Once the
// partitions heal, all replicas converge, and a final round of offers on the
// converged space costs exactly one offer and one reply per direction:
// traffic stops by itself because no answer restarts an exchange.
func TestRandomizedConvergence(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { convergeOnce(t, seed, false) })
	}
}

// TestRandomizedConvergenceFlakyStorage is the same with storage that fails
// a third of its writes while the edits run, and half the edits staged
// (pending until a frame naming the document flushes them): the optional
// flush and the version offer after a recovered flush failure are sent
// along the way, and the converged round still costs exactly one offer and
// one reply per direction.
func TestRandomizedConvergenceFlakyStorage(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	folds := 0
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { folds += convergeOnce(t, seed, true) })
	}
	t.Logf("%d version offers after recovered flush failures", folds)
	if folds == 0 {
		t.Fatal("no version offer after a recovered flush failure was ever sent")
	}
}

// convergeOnce runs one randomized history and returns how many version
// offers after a recovered flush failure were sent.
func convergeOnce(t *testing.T, seed uint64, flaky bool) int {
	rng := rand.New(rand.NewPCG(seed, 7))
	names := []string{"r0", "r1", "r2", "r3", "r4"}
	c := newCluster(t, seed, names...)
	c.net.Loss, c.net.Dup, c.net.Reorder = 0.25, 0.15, true
	failing := flaky
	if flaky {
		disk := rand.New(rand.NewPCG(seed, 11))
		for _, r := range c.ord {
			r.kv.Persist = func(string, []byte) error {
				if failing && disk.IntN(3) == 0 {
					return errDisk
				}
				return nil
			}
		}
	}
	for step := 0; step < 400; step++ {
		r := c.ord[rng.IntN(len(c.ord))]
		switch x := rng.IntN(20); {
		case x < 12:
			val := fmt.Sprint(step)
			if rng.IntN(5) == 0 {
				val = "" // deletion
			}
			doc, key := fmt.Sprintf("doc%d", rng.IntN(8)), fmt.Sprintf("k%d", rng.IntN(5))
			if flaky && rng.IntN(2) == 0 {
				_ = r.kv.Stage(doc, key, []byte(val)) // an empty value stages a write of ""
				continue
			}
			c.edit(r, doc, key, val)
		case x < 15:
			p := c.ord[rng.IntN(len(c.ord))]
			if p != r {
				c.send(r, r.sess[p.name].Offer())
			}
		case x < 16:
			c.net.Partition(names[rng.IntN(5)], names[rng.IntN(5)])
		case x < 17:
			c.net.Heal()
		default:
			for i := rng.IntN(30); i > 0; i-- {
				m, ok := c.net.Next()
				if !ok {
					break
				}
				to := c.reps[m.To]
				c.send(to, to.sess[m.From].Receive(m.Data))
			}
		}
	}
	c.pump(50_000) // lossy traffic drains by itself
	if flaky {
		// Storage recovers; every edit still pending is flushed and
		// committed, as the application would.
		failing = false
		for _, r := range c.ord {
			for _, d := range r.kv.Docs() {
				if !r.kv.Pending(d) {
					continue
				}
				before, err := r.kv.Flush(d)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range c.ord {
					if p != r {
						c.send(r, r.sess[p.name].Commit(d, before))
					}
				}
			}
		}
	}
	c.net.Heal()
	c.net.Loss = 0
	var err error
	for round := 0; round < 6; round++ {
		c.offerAll()
		c.pump(50_000)
		if err = c.converged(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("not converged after healing: %v", err)
	}
	c.net.Dup = 0
	before := c.net.Delivered
	c.offerAll()
	n := c.pump(50_000)
	if want := 2 * len(names) * (len(names) - 1); n != want || c.net.InFlight() != 0 {
		t.Fatalf("converged round: %d frames (delivered %d→%d), want %d", n, before, c.net.Delivered, want)
	}
	for _, r := range c.ord {
		for _, rep := range r.reports {
			if !flaky || !errors.Is(rep.Err, engine.ErrStorage) {
				t.Fatalf("%s reported %q", r.name, rep.Err)
			}
		}
	}
	return c.foldOffers
}
