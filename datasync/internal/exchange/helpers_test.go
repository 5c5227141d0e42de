package exchange

import (
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
)

// kvCaps are the entries a Ferry peer advertises.
var kvCaps = frame.Caps{engine.KVEncoding.Entry, frame.EntryGroup, frame.EntryMedia}

type replica struct {
	name    string
	kv      *engine.KV
	sp      *Space
	sess    map[string]*Session
	reports []Report
}

func newReplica(t testing.TB, name string) *replica {
	t.Helper()
	kv, err := engine.NewKV(name)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, kv: kv, sess: map[string]*Session{}}
	r.sp = &Space{Engine: kv, Report: func(rep Report) { r.reports = append(r.reports, rep) }}
	return r
}

// cluster is replicas of one space, each with a session to every other,
// over an in-memory network.
type cluster struct {
	t    testing.TB
	net  *testnet.Network
	reps map[string]*replica
	ord  []*replica
	// foldOffers counts the version offers sent after a recovered flush
	// failure: the only offers that are reply:false, partial and name one
	// document (a full offer of this few documents never splits).
	foldOffers int
}

func newCluster(t testing.TB, seed uint64, names ...string) *cluster {
	c := &cluster{t: t, net: testnet.NewNetwork(seed), reps: map[string]*replica{}}
	for _, n := range names {
		r := newReplica(t, n)
		c.reps[n] = r
		c.ord = append(c.ord, r)
	}
	for _, r := range c.ord {
		for _, p := range c.ord {
			if p != r {
				r.sess[p.name] = NewSession(r.sp, PeerID(p.name), Options{Caps: kvCaps, MaxRecordBytes: 8 << 20})
			}
		}
	}
	return c
}

func (c *cluster) send(from *replica, outs []Out) {
	for _, o := range outs {
		if o.Frame == nil {
			c.t.Fatalf("unexpected media transfer %v", o.Snapshot.Doc)
		}
		if f := o.Frame; f.Kind == frame.KindOffer && !f.Reply && f.Partial && len(f.Docs) == 1 {
			c.foldOffers++
		}
		w, err := frame.Marshal(*o.Frame)
		if err != nil {
			c.t.Fatalf("marshal: %v", err)
		}
		c.net.Send(from.name, string(o.To), w)
	}
}

// pump delivers until nothing is in flight and returns how many frames were
// delivered; more than limit means traffic does not stop.
func (c *cluster) pump(limit int) int {
	n := 0
	for {
		m, ok := c.net.Next()
		if !ok {
			return n
		}
		n++
		if n > limit {
			c.t.Fatalf("traffic did not stop after %d frames", limit)
		}
		r := c.reps[m.To]
		c.send(r, r.sess[m.From].Receive(m.Data))
	}
}

func (c *cluster) offerAll() {
	for _, r := range c.ord {
		for _, p := range c.ord {
			if p != r {
				c.send(r, r.sess[p.name].Offer())
			}
		}
	}
}

func (c *cluster) converged() error {
	first := c.ord[0]
	for _, r := range c.ord[1:] {
		if fmt.Sprint(first.kv.Docs()) != fmt.Sprint(r.kv.Docs()) {
			return fmt.Errorf("%s docs %v, %s docs %v", first.name, first.kv.Docs(), r.name, r.kv.Docs())
		}
		for _, d := range first.kv.Docs() {
			a, b := first.kv.Values(d), r.kv.Values(d)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Errorf("doc %s: %s=%v %s=%v", d, first.name, a, r.name, b)
			}
		}
	}
	return nil
}

// edit makes a local edit on r and sends its local commit to every peer.
func (c *cluster) edit(r *replica, doc, key, value string) {
	before := []byte{}
	if r.kv.Has(doc) {
		before, _ = r.kv.Version(doc)
	}
	var err error
	if value == "" {
		err = r.kv.Delete(doc, key)
	} else {
		err = r.kv.Set(doc, key, []byte(value))
	}
	if err != nil {
		return // storage refused the edit: there is nothing to commit
	}
	for _, p := range c.ord {
		if p != r {
			c.send(r, r.sess[p.name].Commit(doc, before))
		}
	}
}

// pair returns two fresh replicas with sessions to each other, for the
// table tests that call Receive by hand.
func pair(t testing.TB) (a, b *replica) {
	c := newCluster(t, 1, "a", "b")
	return c.reps["a"], c.reps["b"]
}

func wire(t testing.TB, f frame.Frame) []byte {
	t.Helper()
	f.V = engine.KVEncoding.V
	w, err := frame.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func kinds(outs []Out) string {
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
