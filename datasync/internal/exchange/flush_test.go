package exchange

import (
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

var errDisk = errors.New("disk write failed")

// storage is a KV.Persist hook whose failures a test turns on and off.
type storage struct {
	fail    int  // fail this many writes, then recover
	failAll bool // fail every write
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

// flushSetup returns a and b holding doc "d" in sync, b with a staged
// (pending) local edit and a storage hook, and a's next local commit of
// "d" as wire bytes.
func flushSetup(t *testing.T) (c *cluster, a, b *replica, st *storage, commit []byte) {
	c = newCluster(t, 1, "a", "b")
	a, b = c.reps["a"], c.reps["b"]
	_ = a.kv.Set("d", "x", []byte("1"))
	c.send(a, a.sess["b"].Offer())
	c.pump(100)
	st = &storage{}
	b.kv.Persist = st.persist
	if err := b.kv.Stage("d", "mine", []byte("b-edit")); err != nil {
		t.Fatal(err)
	}
	before, _ := a.kv.Version("d")
	_ = a.kv.Set("d", "y", []byte("2"))
	outs := a.sess["b"].Commit("d", before)
	if len(outs) != 1 || outs[0].Frame.Kind != frame.KindDelta {
		t.Fatalf("commit: %s", kinds(outs))
	}
	return c, a, b, st, wire(t, *outs[0].Frame)
}

func storageReports(t *testing.T, r *replica, want int) {
	t.Helper()
	if len(r.reports) != want {
		t.Fatalf("%d reports, want %d: %v", len(r.reports), want, r.reports)
	}
	for _, rep := range r.reports {
		if !errors.Is(rep.Err, ErrEngine) || !errors.Is(rep.Err, engine.ErrStorage) {
			t.Fatalf("report %v is not a storage failure", rep)
		}
	}
}

// §Termination: the flush of b's pending edit fails, the storage recovers,
// and a's change then applies, folding the edit in: b sends exactly one
// version offer (reply:false, partial, naming d), which draws a's
// counter-offer and b's catch-up, and nothing more.
func TestFlushFailureOffersOnce(t *testing.T) {
	c, a, b, st, commit := flushSetup(t)
	st.fail = 1 // the flush fails; the import's write succeeds
	outs := b.sess["a"].Receive(commit)
	if got := kinds(outs); got != "[vv reply=false partial=true n=1]" {
		t.Fatalf("after a recovered flush failure: %s", got)
	}
	if b.kv.Pending("d") {
		t.Fatal("the applied import did not fold the pending edit")
	}
	if v, _ := b.kv.Get("d", "mine"); string(v) != "b-edit" {
		t.Fatal("folded edit lost")
	}
	storageReports(t, b, 1)
	c.send(b, outs)
	if n := c.pump(100); n != 3 {
		t.Fatalf("the offer cost %d frames, want 3 (offer, counter-offer, catch-up)", n)
	}
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
	// Once: the same frame again is already held, and nothing is pending.
	if outs := b.sess["a"].Receive(commit); len(outs) != 0 {
		t.Fatalf("second delivery answered %s", kinds(outs))
	}
	if len(a.reports) != 0 {
		t.Fatalf("a reported %v", a.reports)
	}
}

// §Termination: "a failure still in force fails the import too and no
// offer is sent". Once storage recovers, the next frame flushes the edit
// (the owed delta) and imports, and still no offer is sent.
func TestFlushFailureInForceNoOffer(t *testing.T) {
	c, _, b, st, commit := flushSetup(t)
	st.failAll = true
	if outs := b.sess["a"].Receive(commit); len(outs) != 0 {
		t.Fatalf("with storage failing: %s", kinds(outs))
	}
	if !b.kv.Pending("d") {
		t.Fatal("pending edit lost to a failed flush")
	}
	if _, ok := b.kv.Get("d", "y"); ok {
		t.Fatal("import applied while storage was failing")
	}
	storageReports(t, b, 2) // the flush and the import
	st.failAll = false
	outs := b.sess["a"].Receive(commit)
	if got := kinds(outs); got != "[delta d]" {
		t.Fatalf("after recovery: %s", got)
	}
	c.send(b, outs)
	c.pump(100)
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
}

// Storage failing for local writes: Set reports it and changes nothing.
func TestPersistFailureChangesNothing(t *testing.T) {
	kv, _ := engine.NewKV("a")
	st := &storage{failAll: true}
	kv.Persist = st.persist
	if err := kv.Set("d", "k", []byte("v")); !errors.Is(err, engine.ErrStorage) || kv.Has("d") {
		t.Fatalf("Set with failing storage: %v, has %v", err, kv.Has("d"))
	}
	_ = kv.Stage("d", "k", []byte("v"))
	if _, err := kv.Flush("d"); !errors.Is(err, engine.ErrStorage) || !kv.Pending("d") {
		t.Fatal("failed flush dropped the pending edit")
	}
	if v, _ := kv.Version("d"); len(v) != 0 {
		t.Fatal("failed flush changed the version")
	}
	st.failAll = false
	if before, err := kv.Flush("d"); err != nil || len(before) != 0 || kv.Pending("d") {
		t.Fatalf("flush: %v", err)
	}
	if v, ok := kv.Get("d", "k"); !ok || string(v) != "v" {
		t.Fatal("flushed edit not committed")
	}
}
