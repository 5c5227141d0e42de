package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
)

func mustVersion(t testing.TB, r *replica, doc string) []byte {
	t.Helper()
	v, err := r.kv.Version(doc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Row: offer (reply:false) → catch-up for each stale document, then one
// reply:true offer, last.
func TestTableOfferAsking(t *testing.T) {
	a, b := pair(t)
	_ = a.kv.Set("stale", "k", []byte("new"))
	_ = a.kv.Set("fresh", "k", []byte("x"))
	_ = b.kv.Set("fresh", "k", []byte("x")) // b's own write: a lacks it, b lacks a's
	_ = a.kv.Create("empty")
	offer := frame.Frame{Kind: frame.KindOffer, Docs: map[string][]byte{"stale": {}, "fresh": mustVersion(t, b, "fresh"), "empty": {}}}
	outs := a.sess["b"].Receive(wire(t, offer))
	got := kinds(outs)
	if got != "[delta fresh][delta stale][vv reply=true partial=false n=3]" {
		t.Fatalf("answer %s", got)
	}
}

// Row: offer (reply:true) → catch-up, plus one targeted offer naming
// exactly the documents it created (reply, partial); never another offer.
func TestTableOfferReply(t *testing.T) {
	a, b := pair(t)
	_ = a.kv.Set("held", "k", []byte("v"))
	_ = b.kv.Set("new1", "k", []byte("v"))
	_ = b.kv.Set("new2", "k", []byte("v"))
	offer := frame.Frame{Kind: frame.KindOffer, Reply: true, Docs: map[string][]byte{
		"held": {}, "new1": mustVersion(t, b, "new1"), "new2": mustVersion(t, b, "new2")}}
	outs := a.sess["b"].Receive(wire(t, offer))
	if got := kinds(outs); got != "[delta held][vv reply=true partial=true n=2]" {
		t.Fatalf("answer %s", got)
	}
	tgt := outs[1].Frame
	if _, ok := tgt.Docs["new1"]; !ok || len(tgt.Docs["new1"]) != 0 {
		t.Fatalf("targeted offer %v", tgt.Docs)
	}
	if !a.kv.Has("new1") || !a.kv.Has("new2") {
		t.Fatal("documents named in the offer were not created")
	}
	// The targeted offer draws catch-up and nothing further.
	outs = b.sess["a"].Receive(wire(t, *tgt))
	if got := kinds(outs); got != "[delta new1][delta new2]" {
		t.Fatalf("answer to targeted offer %s", got)
	}
	for _, o := range outs {
		a.sess["b"].Receive(wire(t, *o.Frame))
	}
	if v, _ := a.kv.Get("new2", "k"); string(v) != "v" {
		t.Fatal("created document left empty")
	}
	// A reply offer that creates nothing draws no offer at all.
	same := frame.Frame{Kind: frame.KindOffer, Reply: true, Docs: map[string][]byte{}}
	for _, d := range a.kv.Docs() {
		same.Docs[d] = mustVersion(t, a, d)
	}
	if outs := a.sess["b"].Receive(wire(t, same)); len(outs) != 0 {
		t.Fatalf("reply offer in sync answered with %s", kinds(outs))
	}
}

// Rows: delta that applies, is already held, or is unreadable → nothing;
// the unreadable one is reported.
func TestTableDeltaTerminal(t *testing.T) {
	a, b := pair(t)
	_ = b.kv.Set("d", "k", []byte("v"))
	ch, _ := b.kv.Changes("d", nil)
	d := frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: ch}
	if outs := a.sess["b"].Receive(wire(t, d)); len(outs) != 0 {
		t.Fatalf("applied delta answered: %s", kinds(outs))
	}
	if outs := a.sess["b"].Receive(wire(t, d)); len(outs) != 0 {
		t.Fatalf("held delta answered: %s", kinds(outs))
	}
	bad := frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: []byte("garbage")}
	if outs := a.sess["b"].Receive(wire(t, bad)); len(outs) != 0 {
		t.Fatalf("unreadable delta answered: %s", kinds(outs))
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, ErrUnreadable) || a.reports[0].Doc != "d" {
		t.Fatalf("reports %v", a.reports)
	}
}

// Row: delta held behind a missing predecessor → one targeted offer
// (reply:true, partial:true) for that document.
func TestTableDeltaMissingPredecessor(t *testing.T) {
	a, b := pair(t)
	_ = b.kv.Set("d", "k1", []byte("1"))
	v1 := mustVersion(t, b, "d")
	_ = b.kv.Set("d", "k2", []byte("2"))
	ch, _ := b.kv.Changes("d", v1)
	outs := a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: ch}))
	if got := kinds(outs); got != "[vv reply=true partial=true n=1]" {
		t.Fatalf("answer %s", got)
	}
	// The targeted offer draws the catch-up, and that draws nothing.
	outs = b.sess["a"].Receive(wire(t, *outs[0].Frame))
	if got := kinds(outs); got != "[delta d]" {
		t.Fatalf("answer to targeted offer %s", got)
	}
	if outs := a.sess["b"].Receive(wire(t, *outs[0].Frame)); len(outs) != 0 {
		t.Fatalf("catch-up answered: %s", kinds(outs))
	}
	if v, _ := a.kv.Get("d", "k2"); string(v) != "2" {
		t.Fatal("not converged")
	}
}

// Row: delta needing trimmed history → need_snap for that document; the
// snap it draws is answered with nothing, even when refused (and reported).
func TestTableDeltaTrimmedHistory(t *testing.T) {
	a, b := pair(t)
	for _, v := range []string{"1", "2", "3"} {
		_ = a.kv.Set("d", "x", []byte(v))
	}
	_ = a.kv.Delete("d", "x")
	_ = a.kv.Compact("d")
	_ = b.kv.Set("d", "x", []byte("fork"))
	ch, _ := b.kv.Changes("d", mustVersion(t, a, "d"))
	outs := a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: ch}))
	if got := kinds(outs); got != "[need_snap d]" {
		t.Fatalf("answer %s", got)
	}
	outs = b.sess["a"].Receive(wire(t, *outs[0].Frame))
	if got := kinds(outs); got != "[snap d]" {
		t.Fatalf("answer to need_snap %s", got)
	}
	if outs := a.sess["b"].Receive(wire(t, *outs[0].Frame)); len(outs) != 0 {
		t.Fatalf("refused snap answered: %s", kinds(outs))
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, ErrRefused) {
		t.Fatalf("refused snapshot not reported: %v", a.reports)
	}
}

// Row: snap → nothing, in every outcome (applied, held, unreadable).
func TestTableSnapTerminal(t *testing.T) {
	a, b := pair(t)
	_ = b.kv.Set("d", "k", []byte("v"))
	snap, _ := b.kv.Snapshot("d")
	for i, blob := range [][]byte{snap, snap, []byte("junk")} {
		if outs := a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindSnap, Doc: "d", Blob: blob})); len(outs) != 0 {
			t.Fatalf("snap %d answered: %s", i, kinds(outs))
		}
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, ErrUnreadable) {
		t.Fatalf("reports %v", a.reports)
	}
}

// Row: need_snap → one snap, and only for a document already held.
func TestTableNeedSnap(t *testing.T) {
	a, _ := pair(t)
	_ = a.kv.Set("d", "k", []byte("v"))
	if got := kinds(a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "d"}))); got != "[snap d]" {
		t.Fatalf("answer %s", got)
	}
	if outs := a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "nope"})); len(outs) != 0 || a.kv.Has("nope") {
		t.Fatalf("need_snap for an unknown document answered %s / created", kinds(outs))
	}
}

// A frame of a version this session does not read is consumed: no answer,
// no report, no state.
func TestUnknownVersionConsumed(t *testing.T) {
	a, _ := pair(t)
	for _, w := range []string{
		frame.Prefix + `{"v":1,"k":"vv","docs":{"x":""}}`, // reference encoding: not ours
		frame.Prefix + `{"v":2,"k":"vv","docs":{"x":""}}`,
		frame.Prefix + `{"v":3,"k":"mystery"`,
	} {
		if outs := a.sess["b"].Receive([]byte(w)); len(outs) != 0 {
			t.Fatalf("%s answered", w)
		}
	}
	if a.kv.Has("x") || len(a.reports) != 0 {
		t.Fatal("unknown version surfaced")
	}
}

// §Exchange: a document absent from a complete offer is sent whole; absent
// from a partial one, it is not (no inference from partial).
func TestPartialOfferNoInference(t *testing.T) {
	a, _ := pair(t)
	_ = a.kv.Set("only-a", "k", []byte("v"))
	partial := frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: map[string][]byte{}}
	if outs := a.sess["b"].Receive(wire(t, partial)); len(outs) != 0 {
		t.Fatalf("partial offer drew %s", kinds(outs))
	}
	complete := frame.Frame{Kind: frame.KindOffer, Reply: true, Docs: map[string][]byte{}}
	if got := kinds(a.sess["b"].Receive(wire(t, complete))); got != "[delta only-a]" {
		t.Fatalf("complete offer drew %s", got)
	}
}

// §Bounds: an offer of more than 128 documents splits, every frame partial;
// each frame of it is answered with the complete list (never trimmed to the
// names the frame carried), and a space of 128 never splits.
func TestSplitOffersAndUntrimmedAnswers(t *testing.T) {
	a, b := pair(t)
	for i := range 128 {
		_ = a.kv.Create(fmt.Sprintf("doc%03d", i))
	}
	if outs := a.sess["b"].Offer(); len(outs) != 1 || outs[0].Frame.Partial {
		t.Fatalf("128 documents: %s", kinds(outs))
	}
	for i := 128; i < 300; i++ {
		_ = a.kv.Create(fmt.Sprintf("doc%03d", i))
	}
	outs := a.sess["b"].Offer()
	if got := kinds(outs); got != "[vv reply=false partial=true n=128][vv reply=false partial=true n=128][vv reply=false partial=true n=44]" {
		t.Fatalf("300 documents: %s", got)
	}
	_ = b.kv.Set("b-only", "k", []byte("v"))
	ans := b.sess["a"].Receive(wire(t, *outs[2].Frame))
	var names []string
	for _, o := range ans {
		if o.Frame.Kind == frame.KindOffer {
			for n := range o.Frame.Docs {
				names = append(names, n)
			}
		}
	}
	if len(names) != 45 || !strings.Contains(fmt.Sprint(names), "b-only") {
		t.Fatalf("answer to the last split frame names %d documents", len(names))
	}
}

// §Bounds: at most 1024 documents on a peer's say-so, reported past it;
// local creation is not limited.
func TestPeerNamedCeiling(t *testing.T) {
	a, _ := pair(t)
	docs := map[string][]byte{}
	for i := range 1100 {
		docs[fmt.Sprintf("p%04d", i)] = []byte{}
		if len(docs) == 100 || i == 1099 {
			a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: docs}))
			docs = map[string][]byte{}
		}
	}
	if n := len(a.kv.Docs()); n != MaxPeerDocs || a.sp.PeerNamed() != MaxPeerDocs {
		t.Fatalf("%d documents created on a peer's say-so", n)
	}
	if len(a.reports) != 1100-MaxPeerDocs || !errors.Is(a.reports[0].Err, ErrCeiling) {
		t.Fatalf("%d reports", len(a.reports))
	}
	// A delta naming an unfamiliar document counts too.
	b2 := newReplica(t, "z")
	_ = b2.kv.Set("late", "k", []byte("v"))
	ch, _ := b2.kv.Changes("late", nil)
	a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindDelta, Doc: "late", Blob: ch}))
	if a.kv.Has("late") {
		t.Fatal("delta created a document past the ceiling")
	}
	for i := range 10 {
		if err := a.kv.Set(fmt.Sprintf("local%d", i), "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.kv.Docs()) != MaxPeerDocs+10 {
		t.Fatal("local documents limited by the peer ceiling")
	}
}

// §Bounds: 32 KiB of document bytes, checked before decoding; reported.
func TestBudgetReported(t *testing.T) {
	a, _ := pair(t)
	blob := strings.Repeat("A", (frame.MaxDocumentBytes/3+2)*4)
	w := fmt.Sprintf(`%s{"v":%d,"k":"delta","doc":"big","blob":"%s"}`, frame.Prefix, engine.KVEncoding.V, blob)
	if outs := a.sess["b"].Receive([]byte(w)); len(outs) != 0 || a.kv.Has("big") {
		t.Fatal("over-budget delta answered or stored")
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, frame.ErrOverBudget) {
		t.Fatalf("reports %v", a.reports)
	}
}

// §Documents too large for a frame: a document whose catch-up does not fit
// takes the media path with entry 3 on 1:1, and is reported without it.
func TestOversizedDocument(t *testing.T) {
	a, _ := pair(t)
	for i := range 10 {
		_ = a.kv.Set("big", fmt.Sprint(i), make([]byte, 5000))
	}
	need := wire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "big"})
	if got := kinds(a.sess["b"].Receive(need)); got != "[media big]" {
		t.Fatalf("with entry 3: %s", got)
	}
	noMedia := NewSession(a.sp, "c", Options{Caps: frame.Caps{engine.KVEncoding.Entry}, MaxRecordBytes: 1 << 20})
	if outs := noMedia.Receive(need); len(outs) != 0 {
		t.Fatalf("without entry 3: %s", kinds(outs))
	}
	small := NewSession(a.sp, "d", Options{Caps: kvCaps, MaxRecordBytes: 40000})
	if outs := small.Receive(need); len(outs) != 0 {
		t.Fatalf("over the record bound: %s", kinds(outs))
	}
	if len(a.reports) != 2 || !errors.Is(a.reports[0].Err, ErrTooLarge) || !errors.Is(a.reports[1].Err, ErrTooLarge) {
		t.Fatalf("reports %v", a.reports)
	}
}

// §Frames: nothing is sent to a peer that has not advertised the entry.
func TestGatedPeerSentNothing(t *testing.T) {
	a, _ := pair(t)
	_ = a.kv.Set("d", "k", []byte("v"))
	ref := NewSession(a.sp, "ref", Options{Caps: frame.Caps{frame.EntryDocuments, frame.EntryMedia}})
	if outs := ref.Offer(); len(outs) != 0 {
		t.Fatalf("offer sent to a peer without the encoding's entry: %s", kinds(outs))
	}
	if outs := ref.Commit("d", nil); len(outs) != 0 {
		t.Fatal("commit sent to a peer without the encoding's entry")
	}
}

// §Termination: the optional flush of unsent local edits happens once, on
// the next frame naming the document, and is not repeated.
func TestFlushOnce(t *testing.T) {
	a, b := pair(t)
	before := []byte{}
	_ = a.kv.Set("d", "k", []byte("v"))
	a.sess["b"].Unsent("d", before)
	_ = b.kv.Create("d")
	ns := wire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "other"})
	if outs := a.sess["b"].Receive(ns); len(outs) != 0 {
		t.Fatal("flush on a frame not naming the document")
	}
	offer := wire(t, frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: map[string][]byte{"d": mustVersion(t, a, "d")}})
	if got := kinds(a.sess["b"].Receive(offer)); got != "[delta d]" {
		t.Fatalf("flush: %s", got)
	}
	if outs := a.sess["b"].Receive(offer); len(outs) != 0 {
		t.Fatalf("flushed twice: %s", kinds(outs))
	}
}

// §Exchange: deletion is not represented; a document dropped on one side is
// recreated and refilled by the next exchange with a peer that holds it.
func TestDroppedDocumentComesBack(t *testing.T) {
	c := newCluster(t, 1, "a", "b")
	a, b := c.reps["a"], c.reps["b"]
	_ = a.kv.Set("d", "k", []byte("v"))
	c.send(a, a.sess["b"].Offer())
	c.pump(100)
	a.kv.Drop("d")
	c.send(b, b.sess["a"].Offer())
	c.pump(100)
	if v, ok := a.kv.Get("d", "k"); !ok || string(v) != "v" {
		t.Fatal("dropped document did not come back")
	}
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
}

// Rows: need_blob → the bytes over the media path, or one blob_gone, or
// nothing; blob_gone → nothing.
func TestTableBlobFrames(t *testing.T) {
	a, _ := pair(t)
	store := &attach.MemStore{}
	fetch := &attach.Fetcher{Store: store, Version: engine.KVEncoding.V}
	sent := 0
	hold := &attach.Holder{Store: store, Version: engine.KVEncoding.V,
		Send: func(context.Context, string, media.Purpose, []byte) error { sent++; return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); hold.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	s := NewSession(a.sp, "b", Options{Caps: kvCaps, Blobs: &attach.Carriage{Fetcher: fetch, Holder: hold}})
	missing := attach.Hash([]byte("missing"))
	outs := s.Receive(wire(t, frame.Frame{Kind: frame.KindNeedBlob, Hash: missing}))
	if got := kinds(outs); got != "[blob_gone]" || outs[0].Frame.Hash != missing || outs[0].To != "b" {
		t.Fatalf("need_blob for a blob not held: %s", got)
	}
	held := []byte("held")
	_ = store.Put(attach.Hash(held), held)
	if outs := s.Receive(wire(t, frame.Frame{Kind: frame.KindNeedBlob, Hash: attach.Hash(held)})); len(outs) != 0 {
		t.Fatalf("need_blob for a held blob answered with frames: %s", kinds(outs))
	}
	hold.Wait()
	if sent != 1 {
		t.Fatalf("%d transfers", sent)
	}
	_, _ = fetch.Fetch(missing)
	if outs := s.Receive(wire(t, frame.Frame{Kind: frame.KindBlobGone, Hash: missing})); len(outs) != 0 {
		t.Fatalf("blob_gone answered: %s", kinds(outs))
	}
	if !errors.Is(fetch.Status(missing), attach.ErrGone) {
		t.Fatal("blob_gone did not reach the fetcher")
	}
	// A peer without entry 3 is sent no blob_gone.
	noMedia := NewSession(a.sp, "c", Options{Caps: frame.Caps{engine.KVEncoding.Entry}, Blobs: &attach.Carriage{Fetcher: fetch, Holder: hold}})
	if outs := noMedia.Receive(wire(t, frame.Frame{Kind: frame.KindNeedBlob, Hash: attach.Hash([]byte("y"))})); len(outs) != 0 {
		t.Fatal("blob_gone sent to a peer without entry 3")
	}
	noMedia.Receive(wire(t, frame.Frame{Kind: frame.KindNeedBlob, Hash: attach.Hash(held)}))
	hold.Wait()
	if sent != 1 {
		t.Fatal("bytes sent over the media path to a peer without entry 3")
	}
}

// Issue 17 point 8: "v":"1" (or any v that is not a JSON integer) is an
// unknown version: a need_snap sent that way is consumed and not answered.
func TestQuotedVersionNotActedOn(t *testing.T) {
	a, _ := pair(t)
	_ = a.kv.Set("notes", "k", []byte("v"))
	for _, v := range []string{fmt.Sprintf(`"%d"`, engine.KVEncoding.V), fmt.Sprintf(`%d.0`, engine.KVEncoding.V)} {
		w := frame.Prefix + `{"v":` + v + `,"k":"need_snap","doc":"notes"}`
		if outs := a.sess["b"].Receive([]byte(w)); len(outs) != 0 {
			t.Fatalf("v=%s answered with %s", v, kinds(outs))
		}
	}
	if len(a.reports) != 0 {
		t.Fatalf("unknown version surfaced: %v", a.reports)
	}
	w := frame.Prefix + fmt.Sprintf(`{"v":%d,"k":"need_snap","doc":"notes"}`, engine.KVEncoding.V)
	if got := kinds(a.sess["b"].Receive([]byte(w))); got != "[snap notes]" {
		t.Fatalf("integer v drew %s", got)
	}
}
