package loro

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// The exchange tests the KV engine has (datasync/exchange), run over the
// Loro engine: frames carry v = 1 and the reference's entry 1.

var loroCaps = frame.Caps{Encoding.Entry, frame.EntryGroup, frame.EntryMedia}

type xreplica struct {
	name    string
	e       *Engine
	sp      *exchange.Space
	sess    map[string]*exchange.Session
	reports []exchange.Report
}

func newXReplica(t testing.TB, name string, peer uint64) *xreplica {
	r := &xreplica{name: name, e: newEngine(t, peer), sess: map[string]*exchange.Session{}}
	r.sp = &exchange.Space{Engine: r.e, Report: func(rep exchange.Report) { r.reports = append(r.reports, rep) }}
	return r
}

// xnet is a lossy, duplicating, reordering in-memory network.
type xnet struct {
	rng       *rand.Rand
	loss, dup float64
	reorder   bool
	queue     []xmsg
	delivered int
}

type xmsg struct {
	from, to string
	data     []byte
}

func (n *xnet) send(from, to string, data []byte) {
	if n.loss > 0 && n.rng.Float64() < n.loss {
		return
	}
	n.queue = append(n.queue, xmsg{from, to, data})
	if n.dup > 0 && n.rng.Float64() < n.dup {
		n.queue = append(n.queue, xmsg{from, to, data})
	}
}

func (n *xnet) next() (xmsg, bool) {
	if len(n.queue) == 0 {
		return xmsg{}, false
	}
	i := 0
	if n.reorder {
		i = n.rng.IntN(len(n.queue))
	}
	m := n.queue[i]
	n.queue = slices.Delete(n.queue, i, i+1)
	n.delivered++
	return m, true
}

type xcluster struct {
	t       testing.TB
	staging bool // randomHistory stages half its edits
	net     *xnet
	reps    map[string]*xreplica
	ord     []*xreplica
}

func newXCluster(t testing.TB, seed uint64, names ...string) *xcluster {
	c := &xcluster{t: t, net: &xnet{rng: rand.New(rand.NewPCG(seed, 3))}, reps: map[string]*xreplica{}}
	for i, n := range names {
		r := newXReplica(t, n, uint64(i+1))
		c.reps[n] = r
		c.ord = append(c.ord, r)
	}
	for _, r := range c.ord {
		for _, p := range c.ord {
			if p != r {
				r.sess[p.name] = exchange.NewSession(r.sp, exchange.PeerID(p.name), exchange.Options{Caps: loroCaps, MaxRecordBytes: 8 << 20})
			}
		}
	}
	return c
}

func (c *xcluster) send(from *xreplica, outs []exchange.Out) {
	for _, o := range outs {
		if o.Snapshot != nil {
			// The media path, delivered reliably as its own transfer.
			to := c.reps[string(o.To)]
			c.send(to, to.sess[from.name].ImportSnapshot(o.Snapshot.Doc, o.Snapshot.Blob))
			continue
		}
		w, err := frame.Marshal(*o.Frame)
		if err != nil {
			c.t.Fatalf("marshal: %v", err)
		}
		c.net.send(from.name, string(o.To), w)
	}
}

func (c *xcluster) pump(limit int) int {
	n := 0
	for {
		m, ok := c.net.next()
		if !ok {
			return n
		}
		if n++; n > limit {
			c.t.Fatalf("traffic did not stop after %d frames", limit)
		}
		r := c.reps[m.to]
		c.send(r, r.sess[m.from].Receive(m.data))
	}
}

func (c *xcluster) offerAll() {
	for _, r := range c.ord {
		for _, p := range c.ord {
			if p != r {
				c.send(r, r.sess[p.name].Offer())
			}
		}
	}
}

func (c *xcluster) converged() error {
	first := c.ord[0]
	for _, r := range c.ord[1:] {
		if fmt.Sprint(first.e.Docs()) != fmt.Sprint(r.e.Docs()) {
			return fmt.Errorf("%s docs %v, %s docs %v", first.name, first.e.Docs(), r.name, r.e.Docs())
		}
		for _, d := range first.e.Docs() {
			a, _ := first.e.JSON(d)
			b, _ := r.e.JSON(d)
			if string(a) != string(b) {
				return fmt.Errorf("doc %s: %s=%s %s=%s", d, first.name, a, r.name, b)
			}
		}
	}
	return nil
}

func (c *xcluster) edit(r *xreplica, doc, key, value string) {
	before := []byte{}
	if r.e.Has(doc) {
		before, _ = r.e.Version(doc)
	}
	var err error
	if value == "" {
		err = r.e.Delete(doc, key)
	} else {
		err = r.e.Set(doc, key, Value{Kind: Text, Text: value})
	}
	if errors.Is(err, engine.ErrStorage) {
		return // storage refused the edit: there is nothing to commit
	}
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range c.ord {
		if p != r {
			c.send(r, r.sess[p.name].Commit(doc, before))
		}
	}
}

func xpair(t testing.TB) (a, b *xreplica) {
	c := newXCluster(t, 1, "a", "b")
	return c.reps["a"], c.reps["b"]
}

func xwire(t testing.TB, f frame.Frame) []byte {
	t.Helper()
	f.V = Encoding.V
	w, err := frame.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func xkinds(outs []exchange.Out) string {
	s := ""
	for _, o := range outs {
		if o.Frame == nil {
			s += "[media " + o.Snapshot.Doc + "]"
			continue
		}
		s += "[" + string(o.Frame.Kind)
		if o.Frame.Kind == frame.KindOffer {
			s += fmt.Sprintf(" reply=%v partial=%v n=%d", o.Frame.Reply, o.Frame.Partial, len(o.Frame.Docs))
		} else if o.Frame.Doc != "" {
			s += " " + o.Frame.Doc
		}
		s += "]"
	}
	return s
}

func tv(s string) Value { return Value{Kind: Text, Text: s} }

func TestExchangeOfferAsking(t *testing.T) {
	a, b := xpair(t)
	check(t, a.e.Set("stale", "k", tv("new")))
	check(t, a.e.Set("fresh", "k", tv("x")))
	check(t, b.e.Set("fresh", "k", tv("x")))
	check(t, a.e.Create("empty"))
	offer := frame.Frame{Kind: frame.KindOffer, Docs: map[string][]byte{"stale": {}, "fresh": must[[]byte](t)(b.e.Version("fresh")), "empty": {}}}
	if got := xkinds(a.sess["b"].Receive(xwire(t, offer))); got != "[delta fresh][delta stale][vv reply=true partial=false n=3]" {
		t.Fatalf("answer %s", got)
	}
}

func TestExchangeOfferReply(t *testing.T) {
	a, b := xpair(t)
	check(t, a.e.Set("held", "k", tv("v")))
	check(t, b.e.Set("new1", "k", tv("v")))
	check(t, b.e.Set("new2", "k", tv("v")))
	offer := frame.Frame{Kind: frame.KindOffer, Reply: true, Docs: map[string][]byte{
		"held": {}, "new1": must[[]byte](t)(b.e.Version("new1")), "new2": must[[]byte](t)(b.e.Version("new2"))}}
	outs := a.sess["b"].Receive(xwire(t, offer))
	if got := xkinds(outs); got != "[delta held][vv reply=true partial=true n=2]" {
		t.Fatalf("answer %s", got)
	}
	outs = b.sess["a"].Receive(xwire(t, *outs[1].Frame))
	if got := xkinds(outs); got != "[delta new1][delta new2]" {
		t.Fatalf("answer to targeted offer %s", got)
	}
	for _, o := range outs {
		if more := a.sess["b"].Receive(xwire(t, *o.Frame)); len(more) != 0 {
			t.Fatalf("catch-up answered %s", xkinds(more))
		}
	}
	if v, ok := a.e.Get("new2", "k"); !ok || v.Text != "v" {
		t.Fatal("created document left empty")
	}
}

func TestExchangeDeltaTerminal(t *testing.T) {
	a, b := xpair(t)
	check(t, b.e.Set("d", "k", tv("v")))
	d := frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: must[[]byte](t)(b.e.Changes("d", nil))}
	for i := range 2 {
		if outs := a.sess["b"].Receive(xwire(t, d)); len(outs) != 0 {
			t.Fatalf("delta %d answered: %s", i, xkinds(outs))
		}
	}
	bad := frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: []byte("garbage")}
	if outs := a.sess["b"].Receive(xwire(t, bad)); len(outs) != 0 {
		t.Fatalf("unreadable delta answered: %s", xkinds(outs))
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, exchange.ErrUnreadable) {
		t.Fatalf("reports %v", a.reports)
	}
}

// Loro keeps an update whose predecessor is missing pending; the engine
// says so and the exchange sends its targeted offer.
func TestExchangeMissingPredecessor(t *testing.T) {
	a, b := xpair(t)
	check(t, b.e.Set("d", "k1", tv("1")))
	v1 := must[[]byte](t)(b.e.Version("d"))
	check(t, b.e.Set("d", "k2", tv("2")))
	outs := a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: must[[]byte](t)(b.e.Changes("d", v1))}))
	if got := xkinds(outs); got != "[vv reply=true partial=true n=1]" {
		t.Fatalf("answer %s", got)
	}
	outs = b.sess["a"].Receive(xwire(t, *outs[0].Frame))
	if got := xkinds(outs); got != "[delta d]" {
		t.Fatalf("answer to targeted offer %s", got)
	}
	if more := a.sess["b"].Receive(xwire(t, *outs[0].Frame)); len(more) != 0 {
		t.Fatalf("catch-up answered: %s", xkinds(more))
	}
	if v, ok := a.e.Get("d", "k2"); !ok || v.Text != "2" {
		t.Fatal("pending change not applied once its predecessor arrived")
	}
}

// Compaction with need_snap: a fork below a's shallow root draws need_snap,
// and the snapshot it draws is refused and reported; a replica that holds
// the root merges through the same path.
func TestExchangeTrimmedHistory(t *testing.T) {
	a, b := xpair(t)
	for _, v := range []string{"1", "2", "3"} {
		check(t, a.e.Set("d", "x", tv(v)))
	}
	check(t, a.e.Compact("d"))
	check(t, b.e.Set("d", "x", tv("fork")))
	ch := must[[]byte](t)(b.e.Changes("d", must[[]byte](t)(a.e.Version("d"))))
	outs := a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindDelta, Doc: "d", Blob: ch}))
	if got := xkinds(outs); got != "[need_snap d]" {
		t.Fatalf("answer %s", got)
	}
	outs = b.sess["a"].Receive(xwire(t, *outs[0].Frame))
	if got := xkinds(outs); got != "[snap d]" {
		t.Fatalf("answer to need_snap %s", got)
	}
	if more := a.sess["b"].Receive(xwire(t, *outs[0].Frame)); len(more) != 0 {
		t.Fatalf("refused snap answered: %s", xkinds(more))
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, exchange.ErrRefused) {
		t.Fatalf("refused snapshot not reported: %v", a.reports)
	}
}

// A compacted sender answers a peer below its root with a snapshot, and
// the peer converges.
func TestExchangeCompactedSenderSendsSnapshot(t *testing.T) {
	c := newXCluster(t, 2, "a", "b")
	a, b := c.reps["a"], c.reps["b"]
	for i := range 5 {
		check(t, a.e.Set("d", fmt.Sprint(i), tv("v")))
	}
	check(t, a.e.Compact("d"))
	c.send(b, b.sess["a"].Offer())
	if err := c.pumpAndConverge(); err != nil {
		t.Fatal(err)
	}
	if len(a.reports)+len(b.reports) != 0 {
		t.Fatalf("reports %v %v", a.reports, b.reports)
	}
}

func (c *xcluster) pumpAndConverge() error {
	c.pump(10_000)
	c.offerAll()
	c.pump(10_000)
	return c.converged()
}

func TestExchangeSnapTerminal(t *testing.T) {
	a, b := xpair(t)
	check(t, b.e.Set("d", "k", tv("v")))
	snap := must[[]byte](t)(b.e.Snapshot("d"))
	for i, blob := range [][]byte{snap, snap, []byte("junk")} {
		if outs := a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindSnap, Doc: "d", Blob: blob})); len(outs) != 0 {
			t.Fatalf("snap %d answered: %s", i, xkinds(outs))
		}
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, exchange.ErrUnreadable) {
		t.Fatalf("reports %v", a.reports)
	}
}

func TestExchangeNeedSnap(t *testing.T) {
	a, _ := xpair(t)
	check(t, a.e.Set("d", "k", tv("v")))
	if got := xkinds(a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "d"}))); got != "[snap d]" {
		t.Fatalf("answer %s", got)
	}
	if outs := a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "nope"})); len(outs) != 0 || a.e.Has("nope") {
		t.Fatalf("need_snap for an unknown document answered %s / created", xkinds(outs))
	}
}

// Frames of Ferry's KV encoding reach a Loro session as an unknown version.
func TestExchangeKVFramesConsumed(t *testing.T) {
	a, _ := xpair(t)
	w := fmt.Sprintf(`%s{"v":%d,"k":"vv","docs":{"x":""}}`, frame.Prefix, engine.KVEncoding.V)
	if outs := a.sess["b"].Receive([]byte(w)); len(outs) != 0 || a.e.Has("x") || len(a.reports) != 0 {
		t.Fatalf("a KV frame surfaced: %s", xkinds(outs))
	}
}

func TestExchangePartialOfferNoInference(t *testing.T) {
	a, _ := xpair(t)
	check(t, a.e.Set("only-a", "k", tv("v")))
	partial := frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: map[string][]byte{}}
	if outs := a.sess["b"].Receive(xwire(t, partial)); len(outs) != 0 {
		t.Fatalf("partial offer drew %s", xkinds(outs))
	}
	complete := frame.Frame{Kind: frame.KindOffer, Reply: true, Docs: map[string][]byte{}}
	if got := xkinds(a.sess["b"].Receive(xwire(t, complete))); got != "[delta only-a]" {
		t.Fatalf("complete offer drew %s", got)
	}
}

func TestExchangeSplitOffers(t *testing.T) {
	a, b := xpair(t)
	for i := range 300 {
		check(t, a.e.Create(fmt.Sprintf("doc%03d", i)))
	}
	outs := a.sess["b"].Offer()
	if got := xkinds(outs); got != "[vv reply=false partial=true n=128][vv reply=false partial=true n=128][vv reply=false partial=true n=44]" {
		t.Fatalf("300 documents: %s", got)
	}
	check(t, b.e.Set("b-only", "k", tv("v")))
	var names []string
	for _, o := range b.sess["a"].Receive(xwire(t, *outs[2].Frame)) {
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

func TestExchangePeerNamedCeiling(t *testing.T) {
	a, _ := xpair(t)
	a.sp.MaxPeerDocs = 50
	docs := map[string][]byte{}
	for i := range 60 {
		docs[fmt.Sprintf("p%02d", i)] = []byte{}
	}
	a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: docs}))
	if n := len(a.e.Docs()); n != 50 {
		t.Fatalf("%d documents created on a peer's say-so", n)
	}
	if len(a.reports) != 10 || !errors.Is(a.reports[0].Err, exchange.ErrCeiling) {
		t.Fatalf("%d reports", len(a.reports))
	}
	z := newEngine(t, 99)
	check(t, z.Set("late", "k", tv("v")))
	a.sess["b"].Receive(xwire(t, frame.Frame{Kind: frame.KindDelta, Doc: "late", Blob: must[[]byte](t)(z.Changes("late", nil))}))
	if a.e.Has("late") {
		t.Fatal("delta created a document past the ceiling")
	}
}

// A document over 32 KiB takes the media path with entry 3 and converges
// through it; without entry 3 it is reported.
func TestExchangeOversizedDocumentMediaPath(t *testing.T) {
	c := newXCluster(t, 3, "a", "b")
	a, b := c.reps["a"], c.reps["b"]
	vals := map[string]Value{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10 {
		b := make([]byte, 5000) // incompressible, so the snapshot stays over 32 KiB
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		vals[fmt.Sprint(i)] = Value{Kind: Bytes, Bytes: b}
	}
	check(t, a.e.SetMany("big", DefaultCollection, vals))
	need := xwire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "big"})
	outs := a.sess["b"].Receive(need)
	if got := xkinds(outs); got != "[media big]" {
		t.Fatalf("with entry 3: %s", got)
	}
	if len(outs[0].Snapshot.Blob) <= frame.MaxDocumentBytes {
		t.Fatalf("snapshot of %d bytes", len(outs[0].Snapshot.Blob))
	}
	c.send(a, outs)
	c.pump(100)
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
	noMedia := exchange.NewSession(a.sp, "c", exchange.Options{Caps: frame.Caps{Encoding.Entry}, MaxRecordBytes: 1 << 20})
	if outs := noMedia.Receive(need); len(outs) != 0 {
		t.Fatalf("without entry 3: %s", xkinds(outs))
	}
	if len(a.reports) != 1 || !errors.Is(a.reports[0].Err, exchange.ErrTooLarge) {
		t.Fatalf("reports %v", a.reports)
	}
	_ = b
}

// Nothing is sent to a peer that has not advertised entry 1, such as a
// Ferry peer that reads only the KV encoding.
func TestExchangeGatedPeerSentNothing(t *testing.T) {
	a, _ := xpair(t)
	check(t, a.e.Set("d", "k", tv("v")))
	kvOnly := exchange.NewSession(a.sp, "kv", exchange.Options{Caps: frame.Caps{engine.KVEncoding.Entry, frame.EntryGroup, frame.EntryMedia}})
	if outs := kvOnly.Offer(); len(outs) != 0 {
		t.Fatalf("offer sent to a peer without entry 1: %s", xkinds(outs))
	}
	if outs := kvOnly.Commit("d", nil); len(outs) != 0 {
		t.Fatal("commit sent to a peer without entry 1")
	}
}

// Random edits and commits over a lossy, duplicating, reordering network:
// all replicas converge, and a round of offers on the converged space costs
// exactly one offer and one reply per direction. Then one replica compacts
// every document (a shallow snapshot at a point every replica holds) and a
// second round of random edits converges again, through need_snap and
// snapshots where a peer's catch-up would reach below the root.
func TestExchangeRandomizedConvergence(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			c := newXCluster(t, seed, "r0", "r1", "r2", "r3")
			c.randomHistory(rng, 200)
			c.settle()
			compacted := 0
			for _, d := range c.ord[0].e.Docs() {
				before := must[[]byte](t)(c.ord[0].e.JSON(d))
				switch err := c.ord[0].e.Compact(d); {
				case err == nil:
					compacted++
				case !errors.Is(err, ErrCompact):
					t.Fatal(err)
				case string(must[[]byte](t)(c.ord[0].e.JSON(d))) != string(before):
					t.Fatalf("a failed compaction changed %s", d)
				default:
					t.Logf("%s not compacted: %v", d, err)
				}
			}
			if compacted == 0 {
				t.Fatal("no document compacted")
			}
			c.randomHistory(rng, 200)
			c.settle()
		})
	}
}

func (c *xcluster) randomHistory(rng *rand.Rand, steps int) {
	c.net.loss, c.net.dup, c.net.reorder = 0.2, 0.1, true
	for step := range steps {
		r := c.ord[rng.IntN(len(c.ord))]
		switch x := rng.IntN(20); {
		case x < 12:
			val := fmt.Sprint(step)
			if rng.IntN(5) == 0 {
				val = ""
			}
			doc, key := fmt.Sprintf("doc%d", rng.IntN(5)), fmt.Sprintf("k%d", rng.IntN(4))
			if c.staging && rng.IntN(2) == 0 {
				check(c.t, r.e.Stage(doc, key, tv(val)))
				continue
			}
			c.edit(r, doc, key, val)
		case x < 15:
			if p := c.ord[rng.IntN(len(c.ord))]; p != r {
				c.send(r, r.sess[p.name].Offer())
			}
		default:
			for i := rng.IntN(20); i > 0; i-- {
				m, ok := c.net.next()
				if !ok {
					break
				}
				to := c.reps[m.to]
				c.send(to, to.sess[m.from].Receive(m.data))
			}
		}
	}
	c.pump(50_000)
}

// settle heals the network, runs offers until the replicas converge and
// checks the converged round's cost and that nothing was reported.
func (c *xcluster) settle() {
	c.net.loss = 0
	var err error
	for round := 0; round < 6; round++ {
		c.offerAll()
		c.pump(50_000)
		if err = c.converged(); err == nil {
			break
		}
	}
	if err != nil {
		c.t.Fatalf("not converged: %v", err)
	}
	c.net.dup = 0
	c.offerAll()
	if n, want := c.pump(50_000), 2*len(c.ord)*(len(c.ord)-1); n != want {
		c.t.Fatalf("converged round: %d frames, want %d", n, want)
	}
	for _, r := range c.ord {
		for _, rep := range r.reports {
			if !c.staging || !errors.Is(rep.Err, engine.ErrStorage) {
				c.t.Fatalf("%s reported %v", r.name, rep)
			}
		}
	}
}

// TestExchangeRandomizedConvergenceFlakyStorage: the same with storage
// failing a third of its writes while the edits run and half the edits
// staged until a frame naming the document flushes them; once storage
// recovers and the pending edits are flushed, all converge and the
// converged round still costs one offer and one reply per direction.
func TestExchangeRandomizedConvergenceFlakyStorage(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			c := newXCluster(t, seed, "r0", "r1", "r2", "r3")
			c.staging = true
			failing := true
			disk := rand.New(rand.NewPCG(seed, 11))
			for _, r := range c.ord {
				r.e.opts.Persist = func(string, []byte) error {
					if failing && disk.IntN(3) == 0 {
						return errDisk
					}
					return nil
				}
			}
			c.randomHistory(rng, 250)
			failing = false
			for _, r := range c.ord {
				for _, d := range r.e.Docs() {
					if !r.e.Pending(d) {
						continue
					}
					before := must[[]byte](t)(r.e.Flush(d))
					for _, p := range c.ord {
						if p != r {
							c.send(r, r.sess[p.name].Commit(d, before))
						}
					}
				}
			}
			c.settle()
			failures := 0
			for _, r := range c.ord {
				failures += len(r.reports)
			}
			if failures == 0 {
				t.Fatal("storage never failed under the exchange")
			}
			t.Logf("%d storage failures reported", failures)
		})
	}
}

// §Exchange: a document dropped on one side is recreated and refilled by
// the next exchange with a peer that holds it.
func TestExchangeDroppedDocumentComesBack(t *testing.T) {
	c := newXCluster(t, 4, "a", "b")
	a, b := c.reps["a"], c.reps["b"]
	check(t, a.e.Set("d", "k", tv("v")))
	c.send(a, a.sess["b"].Offer())
	c.pump(100)
	a.e.Drop("d")
	if a.e.Has("d") {
		t.Fatal("dropped document still held")
	}
	c.send(b, b.sess["a"].Offer())
	c.pump(100)
	if v, ok := a.e.Get("d", "k"); !ok || v.Text != "v" {
		t.Fatal("dropped document did not come back")
	}
	if err := c.converged(); err != nil {
		t.Fatal(err)
	}
}
