package exchange

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// checkOffer marshals every frame of an offer, checks each fits the frame
// bound and the version budget and parses back, and returns the documents
// it names.
func checkOffer(t *testing.T, outs []Out) map[string]bool {
	t.Helper()
	named := map[string]bool{}
	for i, o := range outs {
		w, err := frame.Marshal(*o.Frame)
		if err != nil {
			t.Fatalf("frame %d does not marshal: %v", i, err)
		}
		if len(w) > frame.MaxFrameBytes {
			t.Fatalf("frame %d is %d bytes, over the %d-byte bound", i, len(w), frame.MaxFrameBytes)
		}
		f, err := frame.Parse(w, engine.KVEncoding.V)
		if err != nil {
			t.Fatalf("frame %d does not parse back: %v", i, err)
		}
		if len(outs) > 1 && !f.Partial {
			t.Fatalf("frame %d of a split offer not partial", i)
		}
		for d := range f.Docs {
			named[d] = true
		}
	}
	return named
}

// Issue 17 point 5: names that need JSON escaping ('"', '\\', control
// characters: up to six bytes on the wire for one in the name) are measured
// as encoded, so every frame of the offer fits, and the peer reads all of
// them and creates every document.
func TestOfferNamesNeedingEscapes(t *testing.T) {
	for _, fill := range []string{`"`, `\`, "\x01", "\n", "é\x1f\""} {
		a, b := pair(t)
		for i := range 130 {
			name := fmt.Sprintf("%03d", i) + strings.Repeat(fill, 300/len(fill))
			if err := a.kv.Create(name); err != nil {
				t.Fatal(err)
			}
		}
		outs := a.sess["b"].Offer()
		if named := checkOffer(t, outs); len(named) != 130 {
			t.Fatalf("fill %q: %d of 130 documents offered", fill, len(named))
		}
		for _, o := range outs {
			w, _ := frame.Marshal(*o.Frame)
			b.sess["a"].Receive(w)
		}
		if n := len(b.kv.Docs()); n != 130 || len(b.reports) != 0 {
			t.Fatalf("fill %q: peer holds %d of 130 documents, reports %v", fill, n, b.reports)
		}
	}
}

// bigVersion gives doc in kv a version of about n bytes: one change from
// each of n/70 writers with 64-byte actor names.
func bigVersion(t *testing.T, kv *engine.KV, doc string, n int) {
	t.Helper()
	for i := range n / 70 {
		w, err := engine.NewKV(fmt.Sprintf("%064d", i))
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Set(doc, "k", []byte("v"))
		ch, _ := w.Changes(doc, nil)
		if out, err := kv.Import(doc, ch); out != engine.Applied {
			t.Fatalf("import: %v %v", out, err)
		}
	}
}

// Issue 17 point 6: an offer is split by encoded size whatever the engine's
// versions weigh: more than 32 KiB of version bytes in all goes out as
// several frames, each within the budget. A document whose version alone
// cannot fit any frame is reported, and the offer that omits it is partial.
func TestOfferLargeVersions(t *testing.T) {
	a, b := pair(t)
	for _, d := range []string{"d1", "d2", "d3"} {
		bigVersion(t, a.kv, d, 14_000)
	}
	_ = a.kv.Set("small", "k", []byte("v"))
	outs := a.sess["b"].Offer()
	if named := checkOffer(t, outs); len(named) != 4 || len(outs) < 2 {
		t.Fatalf("%d frames naming %d of 4 documents", len(outs), len(named))
	}
	for _, o := range outs {
		w, _ := frame.Marshal(*o.Frame)
		b.sess["a"].Receive(w)
	}
	if len(b.reports) != 0 || len(b.kv.Docs()) != 4 {
		t.Fatalf("peer: %d documents, reports %v", len(b.kv.Docs()), b.reports)
	}

	bigVersion(t, a.kv, "huge", 40_000)
	outs = a.sess["b"].Offer()
	named := checkOffer(t, outs)
	if named["huge"] || len(named) != 4 {
		t.Fatalf("offer names %v", named)
	}
	for _, o := range outs {
		if !o.Frame.Partial {
			t.Fatal("an offer omitting a document is not partial")
		}
	}
	if len(a.reports) != 1 || a.reports[0].Doc != "huge" || !errors.Is(a.reports[0].Err, ErrOfferTooLarge) {
		t.Fatalf("reports %v", a.reports)
	}
}

// A peer's frame that breaks a bound is never dropped without a report:
// an offer over the version budget, and a frame over the length bound, are
// reported with text that says which bound.
func TestOverBoundFramesReported(t *testing.T) {
	a, _ := pair(t)
	v := strings.Repeat("A", 12_000) // 9,000 bytes each
	var docs []string
	for i := range 4 {
		docs = append(docs, fmt.Sprintf(`"d%d":"%s"`, i, v))
	}
	offer := fmt.Sprintf(`%s{"v":%d,"k":"vv","reply":true,"partial":true,"docs":{%s}}`, frame.Prefix, engine.KVEncoding.V, strings.Join(docs, ","))
	long := fmt.Sprintf(`%s{"v":%d,"k":"need_snap","doc":"%s"}`, frame.Prefix, engine.KVEncoding.V, strings.Repeat("n", frame.MaxFrameBytes))
	for _, w := range []string{offer, long} {
		if outs := a.sess["b"].Receive([]byte(w)); len(outs) != 0 {
			t.Fatal("over-bound frame answered")
		}
	}
	if len(a.reports) != 2 || !errors.Is(a.reports[0].Err, frame.ErrOverBudget) || !errors.Is(a.reports[1].Err, frame.ErrOverBudget) {
		t.Fatalf("reports %v", a.reports)
	}
	if s := a.reports[0].String(); !strings.Contains(s, "offer") || !strings.Contains(s, "version") {
		t.Fatalf("offer report: %s", s)
	}
	if s := a.reports[1].String(); !strings.Contains(s, "frame") || strings.Contains(s, `document ""`) {
		t.Fatalf("length report: %s", s)
	}
	if a.kv.Has("d0") {
		t.Fatal("over-budget offer created documents")
	}
}

// A local document whose name no frame can carry (not UTF-8) is reported
// and left out of a partial offer; the rest of the offer still goes out.
func TestOfferUnsendableNameReported(t *testing.T) {
	a, _ := pair(t)
	_ = a.kv.Set("ok", "k", []byte("v"))
	_ = a.kv.Set("bad\xff", "k", []byte("v"))
	outs := a.sess["b"].Offer()
	if named := checkOffer(t, outs); len(named) != 1 || !named["ok"] || !outs[0].Frame.Partial {
		t.Fatalf("offer %s names %v", kinds(outs), named)
	}
	if len(a.reports) != 1 || a.reports[0].Doc != "bad\xff" {
		t.Fatalf("reports %v", a.reports)
	}
}

// docs/decisions/datasync-counter-offer.md: an offer is answered with one
// reply:true offer even when this replica holds nothing to name.
func TestEmptyCounterOfferSent(t *testing.T) {
	a, _ := pair(t)
	outs := a.sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindOffer, Docs: map[string][]byte{}}))
	if got := kinds(outs); got != "[vv reply=true partial=false n=0]" {
		t.Fatalf("answer %s", got)
	}
}

// docs/decisions/datasync-version-token.md: one bad version token drops
// the whole offer (reported), creating none of the documents it names.
func TestBadVersionTokenDropsFrame(t *testing.T) {
	a, _ := pair(t)
	w := fmt.Sprintf(`%s{"v":%d,"k":"vv","reply":true,"partial":true,"docs":{"good":"AQ==","bad":"AQ"}}`, frame.Prefix, engine.KVEncoding.V)
	if outs := a.sess["b"].Receive([]byte(w)); len(outs) != 0 || a.kv.Has("good") || len(a.reports) != 1 {
		t.Fatalf("answered %s, created good %v, reports %v", kinds(outs), a.kv.Has("good"), a.reports)
	}
}

// A stream of broken frames naming no document is reported once per kind
// per DroppedEvery, not once per frame.
func TestDroppedFramesReportedOncePerKind(t *testing.T) {
	a, _ := pair(t)
	for range 100 {
		a.sess["b"].Receive([]byte(frame.Prefix + `{"v":` + fmt.Sprint(engine.KVEncoding.V) + `,"k":"vv"}`))
		a.sess["b"].Receive([]byte("not a frame"))
	}
	if len(a.reports) != 2 {
		t.Fatalf("%d reports for 200 broken frames of two kinds: %v", len(a.reports), a.reports)
	}
}

// The frame bound holds for catch-up too: a document whose name makes its
// delta and snap longer than frame.MaxFrameBytes takes the media path with
// entry 3, and is reported without it; no frame over the bound is built.
// The size check agrees with frame.Marshal at the edge.
func TestCatchUpFrameBound(t *testing.T) {
	a, _ := pair(t)
	name := strings.Repeat(`"`, 12_000) // 24,000 bytes escaped
	_ = a.kv.Set(name, "k", []byte(strings.Repeat("v", 30_000)))
	if got := kinds(a.sess["b"].catchUp(name, nil)); got != "[media "+name+"]" {
		t.Fatalf("with entry 3: %.40s", got)
	}
	noMedia := NewSession(a.sp, "c", Options{Caps: frame.Caps{engine.KVEncoding.Entry}, MaxRecordBytes: 8 << 20})
	if outs := noMedia.catchUp(name, nil); len(outs) != 0 {
		t.Fatalf("without entry 3: %d frames", len(outs))
	}
	if n := len(a.reports); n != 1 || !errors.Is(a.reports[0].Err, ErrTooLarge) {
		t.Fatalf("reports %v", a.reports)
	}
	s := a.sess["b"]
	for _, doc := range []string{"n", name, strings.Repeat("\x01", 4000)} {
		for n := 0; n <= frame.MaxDocumentBytes+3; n += 1 + n/50 {
			for _, k := range []frame.Kind{frame.KindDelta, frame.KindSnap} {
				w, err := frame.Marshal(frame.Frame{V: engine.KVEncoding.V, Kind: k, Doc: doc, Blob: make([]byte, n)})
				if fits := s.fits(k, doc, n); fits != (err == nil) {
					t.Fatalf("%s of %d bytes, %d-byte name: fits %v, Marshal %d bytes, %v", k, n, len(doc), fits, len(w), err)
				}
			}
		}
	}
}
