package loro

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
)

func xinSync(t *testing.T, n int) *xcluster {
	c := newXCluster(t, 1, "a", "b")
	a := c.reps["a"]
	for i := range n {
		check(t, a.e.Set(fmt.Sprintf("doc%04d", i), "k", tv("value")))
	}
	c.send(a, a.sess["b"].Offer())
	c.pump(1 << 20)
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *xcluster) exchangeCost(from, to string) (frames, offerFrames int) {
	r := c.reps[from]
	outs := r.sess[to].Offer()
	c.send(r, outs)
	return c.pump(1 << 20), len(outs)
}

// 128 documents, one changed: offer, catch-up, reply offer, then silence,
// whichever side starts; and a space of 1,024 documents in sync costs its
// 8 offer frames and their 8 complete 8-frame replies.
func TestExchangeCostsOverLoro(t *testing.T) {
	for _, starter := range []string{"a", "b"} {
		c := xinSync(t, 128)
		check(t, c.reps["a"].e.Set("doc0042", "k", tv("changed")))
		other := map[string]string{"a": "b", "b": "a"}[starter]
		if frames, split := c.exchangeCost(starter, other); frames != 3 || split != 1 {
			t.Fatalf("%s starts: %d frames, offer in %d", starter, frames, split)
		}
		if err := c.converged(); err != nil {
			t.Fatal(err)
		}
	}
	c := xinSync(t, 1024)
	if frames, split := c.exchangeCost("a", "b"); split != 8 || frames != 8+8*8 {
		t.Fatalf("1,024 in sync: %d frames, offer in %d", frames, split)
	}
}

// crashLoro dies (panics) importing any blob that contains poison, as a
// process would on a defect the engine cannot contain.
type crashLoro struct {
	*Engine
	poison []byte
	handed int
}

func (c *crashLoro) Import(doc string, ch []byte) (engine.Outcome, error) {
	if bytes.Contains(ch, c.poison) {
		c.handed++
		panic("engine crashed on a poison blob")
	}
	return c.Engine.Import(doc, ch)
}

// §Delivery over Loro: a Loro change that ended the process is recorded as
// in flight; after the restart it is refused without reaching the engine
// and reported once, while another change still imports.
func TestQuarantineAfterCrashLoro(t *testing.T) {
	a := newEngine(t, 1)
	check(t, a.Set("bad", "k", tv("POISON")))
	check(t, a.Set("good", "k", tv("fine")))
	poison := must[[]byte](t)(a.Changes("bad", nil))
	good := must[[]byte](t)(a.Changes("good", nil))
	if !bytes.Contains(poison, []byte("POISON")) {
		t.Fatal("the change does not carry the marker in clear")
	}
	ledger := &quarantine.Memory{}
	process := func() (*crashLoro, *exchange.Session, *[]exchange.Report) {
		eng := &crashLoro{Engine: newEngine(t, 2), poison: []byte("POISON")}
		var reports []exchange.Report
		sp := &exchange.Space{Engine: eng, Ledger: ledger, Report: func(r exchange.Report) { reports = append(reports, r) }}
		return eng, exchange.NewSession(sp, "a", exchange.Options{Caps: loroCaps}), &reports
	}
	deliver := func(s *exchange.Session, w []byte) (died bool) {
		defer func() { died = recover() != nil }()
		s.Receive(w)
		return false
	}
	bad := xwire(t, frame.Frame{Kind: frame.KindDelta, Doc: "bad", Blob: poison})
	_, s, _ := process()
	if !deliver(s, bad) {
		t.Fatal("the engine did not crash")
	}
	ledger.Restart()
	eng, s, reports := process()
	for range 3 {
		if deliver(s, bad) {
			t.Fatal("the quarantined change reached the engine again")
		}
	}
	if eng.handed != 0 || len(*reports) != 1 || !errors.Is((*reports)[0].Err, quarantine.ErrQuarantined) {
		t.Fatalf("handed %d, reports %v", eng.handed, *reports)
	}
	if deliver(s, xwire(t, frame.Frame{Kind: frame.KindDelta, Doc: "good", Blob: good})) {
		t.Fatal("the good change crashed")
	}
	if v, ok := eng.Get("good", "k"); !ok || v.Text != "fine" {
		t.Fatal("another change did not import after the restart")
	}
}
