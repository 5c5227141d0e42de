package exchange

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
)

// crashEngine is an engine that dies (panics) importing any blob that
// contains poison, and counts the blobs it was handed.
type crashEngine struct {
	engine.Engine
	poison  []byte
	handed  int
	handedP int
}

func (c *crashEngine) check(b []byte) {
	c.handed++
	if bytes.Contains(b, c.poison) {
		c.handedP++
		panic("engine crashed on a poison blob")
	}
}

func (c *crashEngine) Import(doc string, ch []byte) (engine.Outcome, error) {
	c.check(ch)
	return c.Engine.Import(doc, ch)
}

func (c *crashEngine) ImportSnapshot(doc string, s []byte) (engine.Outcome, error) {
	c.check(s)
	return c.Engine.ImportSnapshot(doc, s)
}

// process is one run of a replica whose engine crashes on poison, over a
// ledger that outlives it.
func process(t *testing.T, ledger quarantine.Ledger) (*crashEngine, *Session, *[]Report) {
	kv, err := engine.NewKV("b")
	if err != nil {
		t.Fatal(err)
	}
	eng := &crashEngine{Engine: kv, poison: []byte("POISON")}
	var reports []Report
	sp := &Space{Engine: eng, Ledger: ledger, Report: func(r Report) { reports = append(reports, r) }}
	return eng, NewSession(sp, "a", Options{Caps: kvCaps}), &reports
}

// deliver runs Receive and reports whether the "process" died in it.
func deliver(s *Session, w []byte) (died bool) {
	defer func() {
		if recover() != nil {
			died = true
		}
	}()
	s.Receive(w)
	return false
}

// §Delivery: a blob that ended the process is recorded as in flight; after
// the restart it is refused without reaching the engine, and reported once;
// other blobs, and the same document's other changes, still import.
func TestQuarantineAfterCrash(t *testing.T) {
	a := newReplica(t, "a")
	_ = a.kv.Set("bad", "k", []byte("POISON"))
	_ = a.kv.Set("good", "k", []byte("fine"))
	poison, _ := a.kv.Changes("bad", nil)
	good, _ := a.kv.Changes("good", nil)
	snap, _ := a.kv.Snapshot("bad")
	ledger := &quarantine.Memory{}

	_, s, _ := process(t, ledger)
	if !deliver(s, wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "bad", Blob: poison})) {
		t.Fatal("the engine did not crash")
	}
	if got := ledger.InFlight(); len(got) != 1 || got[0] != quarantine.Digest(poison) {
		t.Fatalf("in flight after the crash: %v", got)
	}
	ledger.Restart()

	eng, s, reports := process(t, ledger)
	for range 3 {
		if deliver(s, wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "bad", Blob: poison})) {
			t.Fatal("the quarantined blob reached the engine again")
		}
	}
	if eng.handedP != 0 || eng.Has("bad") {
		t.Fatalf("quarantined blob handed to the engine %d times", eng.handedP)
	}
	if len(*reports) != 1 || (*reports)[0].Doc != "bad" || !errors.Is((*reports)[0].Err, quarantine.ErrQuarantined) {
		t.Fatalf("reports %v, want one quarantine report for bad", *reports)
	}
	if q := ledger.Quarantined(); len(q) != 1 || q[0].Doc != "bad" {
		t.Fatalf("quarantined %v", q)
	}
	if deliver(s, wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "good", Blob: good})) {
		t.Fatal("good blob crashed")
	}
	if v, ok := eng.Engine.(*engine.KV).Get("good", "k"); !ok || string(v) != "fine" {
		t.Fatal("another blob did not import after the restart")
	}
	if len(ledger.InFlight()) != 0 {
		t.Fatalf("record not cleared after a normal import: %v", ledger.InFlight())
	}
	if n := len(*reports); n != 1 {
		t.Fatalf("%d reports", n)
	}

	// A snap of the same document is other bytes: it is judged on its own
	// (and here crashes too, and is quarantined in turn).
	if !deliver(s, wire(t, frame.Frame{Kind: frame.KindSnap, Doc: "bad", Blob: snap})) {
		t.Fatal("poison snapshot did not crash")
	}
	ledger.Restart()
	eng, s, reports = process(t, ledger)
	s.ImportSnapshot("bad", snap) // the media path goes through the same ledger
	if eng.handedP != 0 || len(*reports) != 1 || !errors.Is((*reports)[0].Err, quarantine.ErrQuarantined) {
		t.Fatalf("media-path snapshot: handed %d, reports %v", eng.handedP, *reports)
	}

	// Released, the blob reaches the engine again.
	if err := ledger.Release(quarantine.Digest(poison)); err != nil {
		t.Fatal(err)
	}
	if !deliver(s, wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "bad", Blob: poison})) {
		t.Fatal("released blob not handed to the engine")
	}
}

// A ledger that cannot record keeps the blob from the engine and reports.
func TestQuarantineLedgerFailure(t *testing.T) {
	a := newReplica(t, "a")
	_ = a.kv.Set("d", "k", []byte("v"))
	ch, _ := a.kv.Changes("d", nil)
	eng, s, reports := process(t, &failingLedger{})
	if outs := s.Receive(wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: ch})); len(outs) != 0 {
		t.Fatalf("answered %s", kinds(outs))
	}
	if eng.handed != 0 || eng.Has("d") || s.space.PeerNamed() != 0 {
		t.Fatal("blob imported without a record")
	}
	if len(*reports) != 1 || !errors.Is((*reports)[0].Err, ErrEngine) {
		t.Fatalf("reports %v", *reports)
	}
}

type failingLedger struct{ quarantine.Memory }

func (*failingLedger) Begin(string, string) error { return errors.New("disk full") }
