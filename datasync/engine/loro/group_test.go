package loro

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// TestGroupRandomizedConvergenceLoro is the exchange's group convergence
// test over the Loro engine: members commit to the roster and run
// addressed anti-entropy at random under a small promotion bound; after a
// final round of offers every member holds the same documents.
func TestGroupRandomizedConvergenceLoro(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 3))
		names := []string{"a", "b", "c", "d"}
		reps := map[string]*xreplica{}
		for i, n := range names {
			r := newXReplica(t, n, uint64(i+1))
			g := exchange.NewGroup(Encoding.Entry, 4)
			for _, p := range names {
				if p != n {
					g.SetMember(exchange.PeerID(p), loroCaps)
					r.sess[p] = exchange.NewSession(r.sp, exchange.PeerID(p), exchange.Options{Caps: loroCaps, Group: g})
				}
			}
			reps[n] = r
		}
		type msg struct {
			from, to string
			data     []byte
		}
		var queue []msg
		send := func(from string, outs []exchange.Out) {
			for _, o := range outs {
				w, err := frame.Marshal(*o.Frame)
				if err != nil {
					t.Fatal(err)
				}
				for _, to := range names { // "" is the whole roster
					if to != from && (o.To == "" || string(o.To) == to) {
						queue = append(queue, msg{from, to, w})
					}
				}
			}
		}
		pump := func() {
			for n := 0; len(queue) > 0; n++ {
				if n > 100_000 {
					t.Fatal("group traffic did not stop")
				}
				m := queue[0]
				queue = queue[1:]
				send(m.to, reps[m.to].sess[m.from].Receive(m.data))
			}
		}
		for step := range 150 {
			who := names[rng.IntN(4)]
			if rng.IntN(3) == 0 {
				if peer := names[rng.IntN(4)]; peer != who {
					send(who, reps[who].sess[peer].Offer())
				}
			} else {
				r := reps[who]
				doc := fmt.Sprintf("doc%d", rng.IntN(4))
				before := []byte{}
				if r.e.Has(doc) {
					before = must[[]byte](t)(r.e.Version(doc))
				}
				check(t, r.e.Set(doc, fmt.Sprintf("k%d", rng.IntN(3)), tv(fmt.Sprint(step))))
				for _, s := range r.sess { // any one session of the group carries the commit
					send(who, s.Commit(doc, before))
					break
				}
			}
			if rng.IntN(4) == 0 {
				pump()
			}
		}
		pump()
		for _, x := range names {
			for _, y := range names {
				if x != y {
					send(x, reps[x].sess[y].Offer())
					pump()
				}
			}
		}
		for _, x := range names[1:] {
			a, b := reps["a"], reps[x]
			if fmt.Sprint(a.e.Docs()) != fmt.Sprint(b.e.Docs()) {
				t.Fatalf("seed %d: %s holds %v, a %v", seed, x, b.e.Docs(), a.e.Docs())
			}
			for _, d := range a.e.Docs() {
				if ja, jb := must[[]byte](t)(a.e.JSON(d)), must[[]byte](t)(b.e.JSON(d)); string(ja) != string(jb) {
					t.Fatalf("seed %d: %s differs on %s: %s vs %s", seed, x, d, jb, ja)
				}
			}
			if len(b.reports) != 0 {
				t.Fatalf("seed %d: %s reported %v", seed, x, b.reports)
			}
		}
	}
}
