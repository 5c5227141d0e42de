package loro

import (
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

var errDisk = errors.New("disk write failed")

// storage is a Persist hook whose failures a test turns on and off.
type storage struct {
	fail    int
	failAll bool
}

func (st *storage) persist(string, []byte) error {
	if st.failAll {
		return errDisk
	}
	if st.fail > 0 {
		st.fail--
		return errDisk
	}
	return nil
}

// TestFlusherContract: staged edits are in no version, change or snapshot
// until Flush commits them as one change; a failed flush keeps them staged.
func TestFlusherContract(t *testing.T) {
	e := newEngine(t, 1)
	check(t, e.Set("d", "k", tv("v")))
	v0 := must[[]byte](t)(e.Version("d"))
	check(t, e.Stage("d", "s", tv("staged")))
	check(t, e.StageDelete("d", "k"))
	if !e.Pending("d") || string(must[[]byte](t)(e.Version("d"))) != string(v0) {
		t.Fatal("a staged edit changed the version or is not pending")
	}
	if _, ok := e.Get("d", "s"); ok {
		t.Fatal("a staged edit reads back before Flush")
	}
	st := &storage{failAll: true}
	e.opts.Persist = st.persist
	if _, err := e.Flush("d"); !errors.Is(err, engine.ErrStorage) || !e.Pending("d") {
		t.Fatalf("failed flush: %v, pending %v", err, e.Pending("d"))
	}
	if string(must[[]byte](t)(e.Version("d"))) != string(v0) {
		t.Fatal("a failed flush changed the version")
	}
	st.failAll = false
	before, err := e.Flush("d")
	if err != nil || string(before) != string(v0) || e.Pending("d") {
		t.Fatalf("flush: %x %v pending %v", before, err, e.Pending("d"))
	}
	if v, ok := e.Get("d", "s"); !ok || v.Text != "staged" {
		t.Fatal("flushed edit missing")
	}
	if _, ok := e.Get("d", "k"); ok {
		t.Fatal("flushed deletion missing")
	}
	o := newEngine(t, 2)
	if out, _ := o.Import("d", must[[]byte](t)(e.Changes("d", v0))); out != engine.MissingPredecessor {
		t.Fatalf("the flushed change alone: %v", out) // it builds on v0, which o lacks
	}
}

// flushSetup: a and b hold "d" in sync, b with a staged edit and a storage
// hook, and a's next local commit of "d" as wire bytes.
func flushSetup(t *testing.T) (c *xcluster, a, b *xreplica, st *storage, commit []byte) {
	c = newXCluster(t, 1, "a", "b")
	a, b = c.reps["a"], c.reps["b"]
	check(t, a.e.Set("d", "x", tv("1")))
	c.send(a, a.sess["b"].Offer())
	c.pump(100)
	st = &storage{}
	b.e.opts.Persist = st.persist
	check(t, b.e.Stage("d", "mine", tv("b-edit")))
	before := must[[]byte](t)(a.e.Version("d"))
	check(t, a.e.Set("d", "y", tv("2")))
	outs := a.sess["b"].Commit("d", before)
	if len(outs) != 1 || outs[0].Frame.Kind != frame.KindDelta {
		t.Fatalf("commit: %s", xkinds(outs))
	}
	return c, a, b, st, xwire(t, *outs[0].Frame)
}

func storageReports(t *testing.T, r *xreplica, want int) {
	t.Helper()
	if len(r.reports) != want {
		t.Fatalf("%d reports, want %d: %v", len(r.reports), want, r.reports)
	}
	for _, rep := range r.reports {
		if !errors.Is(rep.Err, exchange.ErrEngine) || !errors.Is(rep.Err, engine.ErrStorage) {
			t.Fatalf("report %v is not a storage failure", rep)
		}
	}
}

// §Termination over Loro: the flush of b's pending edit fails, storage
// recovers, a's change applies folding the edit in, and b sends exactly
// one version offer, which costs three frames in all.
func TestExchangeFlushFailureOffersOnce(t *testing.T) {
	c, a, b, st, commit := flushSetup(t)
	st.fail = 1
	outs := b.sess["a"].Receive(commit)
	if got := xkinds(outs); got != "[vv reply=false partial=true n=1]" {
		t.Fatalf("after a recovered flush failure: %s", got)
	}
	if b.e.Pending("d") {
		t.Fatal("the applied import did not fold the pending edit")
	}
	if v, ok := b.e.Get("d", "mine"); !ok || v.Text != "b-edit" {
		t.Fatal("folded edit lost")
	}
	storageReports(t, b, 1)
	c.send(b, outs)
	if n := c.pump(100); n != 3 {
		t.Fatalf("the offer cost %d frames, want 3", n)
	}
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
	if outs := b.sess["a"].Receive(commit); len(outs) != 0 {
		t.Fatalf("second delivery answered %s", xkinds(outs))
	}
	if len(a.reports) != 0 {
		t.Fatalf("a reported %v", a.reports)
	}
}

// A failure still in force fails the import too and no offer is sent; once
// storage recovers the next frame flushes the edit and imports.
func TestExchangeFlushFailureInForceNoOffer(t *testing.T) {
	c, _, b, st, commit := flushSetup(t)
	st.failAll = true
	if outs := b.sess["a"].Receive(commit); len(outs) != 0 {
		t.Fatalf("with storage failing: %s", xkinds(outs))
	}
	if !b.e.Pending("d") {
		t.Fatal("pending edit lost to a failed flush")
	}
	if _, ok := b.e.Get("d", "y"); ok {
		t.Fatal("import applied while storage was failing")
	}
	storageReports(t, b, 2)
	st.failAll = false
	outs := b.sess["a"].Receive(commit)
	if got := xkinds(outs); got != "[delta d]" {
		t.Fatalf("after recovery: %s", got)
	}
	c.send(b, outs)
	c.pump(100)
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
}

// The optional flush of unsent local edits happens once, on the next frame
// naming the document.
func TestExchangeFlushOnce(t *testing.T) {
	a, b := xpair(t)
	check(t, a.e.Set("d", "k", tv("v")))
	a.sess["b"].Unsent("d", []byte{})
	check(t, b.e.Create("d"))
	if outs := a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "other"})); len(outs) != 0 {
		t.Fatal("flush on a frame not naming the document")
	}
	offer := xwire(t, frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: map[string][]byte{"d": must[[]byte](t)(a.e.Version("d"))}})
	if got := xkinds(a.sess["b"].Receive(offer)); got != "[delta d]" {
		t.Fatalf("flush: %s", got)
	}
	if outs := a.sess["b"].Receive(offer); len(outs) != 0 {
		t.Fatalf("flushed twice: %s", xkinds(outs))
	}
}
