package exchange

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/attach"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
)

// groupCluster is the members of one group space over a simulated group
// message path.
type groupCluster struct {
	t    *testing.T
	net  *testnet.GroupNet
	reps map[string]*replica
	grp  map[string]*Group
}

func newGroupCluster(t *testing.T, bound int, window uint64, caps map[string]frame.Caps, names ...string) *groupCluster {
	c := &groupCluster{t: t, net: testnet.NewGroupNet(window, names...), reps: map[string]*replica{}, grp: map[string]*Group{}}
	for _, n := range names {
		r := newReplica(t, n)
		g := NewGroup(engine.KVEncoding.Entry, bound)
		g.addressed = 0 // a process past its first frame, which NewGroup promotes
		for _, p := range names {
			if p != n {
				pc, ok := caps[p]
				if !ok {
					pc = kvCaps
				}
				g.SetMember(PeerID(p), pc)
				r.sess[p] = NewSession(r.sp, PeerID(p), Options{Caps: pc, Group: g, MaxRecordBytes: 8 << 20})
			}
		}
		c.reps[n], c.grp[n] = r, g
	}
	return c
}

func (c *groupCluster) send(from string, outs []Out) {
	for _, o := range outs {
		w, err := frame.Marshal(*o.Frame)
		if err != nil {
			c.t.Fatal(err)
		}
		c.net.Send(from, string(o.To), w)
	}
}

// pump delivers everything, recording each delivery as "from>to:kind".
func (c *groupCluster) pump() []string {
	var log []string
	for {
		from, to, data, ok := c.net.Next()
		if !ok {
			return log
		}
		f, _ := frame.Parse(data, engine.KVEncoding.V)
		log = append(log, fmt.Sprintf("%s>%s:%s", from, to, f.Kind))
		c.send(to, c.reps[to].sess[from].Receive(data))
	}
}

func (c *groupCluster) commit(who, doc, key, val string) {
	r := c.reps[who]
	before := []byte{}
	if r.kv.Has(doc) {
		before, _ = r.kv.Version(doc)
	}
	_ = r.kv.Set(doc, key, []byte(val))
	for _, s := range r.sess { // any one session of the group carries the commit
		c.send(who, s.Commit(doc, before))
		return
	}
}

// §Group scope: a sender MUST NOT send a group frame unless every other
// member is known to speak entry 2.
func TestGroupGateAllMembers(t *testing.T) {
	caps := map[string]frame.Caps{"c": {engine.KVEncoding.Entry}} // c lacks entry 2
	c := newGroupCluster(t, 8, 1000, caps, "a", "b", "c")
	c.commit("a", "d", "k", "v")
	if outs := c.reps["a"].sess["b"].Offer(); len(outs) != 0 {
		t.Fatal("addressed offer sent with the gate closed")
	}
	if log := c.pump(); len(log) != 0 || c.net.Sealed != 0 {
		t.Fatalf("frames sent with the gate closed: %v", log)
	}
	if c.grp["a"].Withheld() != 2 {
		t.Fatalf("withheld %d", c.grp["a"].Withheld())
	}
	// Once c is known to speak entry 2, the same commit goes out.
	c.grp["a"].SetMember("c", kvCaps)
	c.grp["b"].SetMember("c", kvCaps)
	c.commit("a", "d", "k", "v2")
	// b and c missed the withheld commit: each asks with a targeted offer.
	if log := c.pump(); fmt.Sprint(log) != "[a>b:delta a>c:delta b>a:vv c>a:vv a>b:delta a>c:delta]" {
		t.Fatalf("after the gate opened: %v", log)
	}
}

// §Group scope: a change received from a group MUST NOT be pushed back into
// it; only a local commit goes to the whole roster.
func TestGroupNoPushBack(t *testing.T) {
	c := newGroupCluster(t, 8, 1000, nil, "a", "b", "c", "d")
	c.commit("a", "doc", "k", "v")
	log := c.pump()
	if fmt.Sprint(log) != "[a>b:delta a>c:delta a>d:delta]" || c.net.Sealed != 1 {
		t.Fatalf("one local commit cost %v (%d sealings)", log, c.net.Sealed)
	}
	for _, n := range []string{"b", "c", "d"} {
		if v, _ := c.reps[n].kv.Get("doc", "k"); string(v) != "v" {
			t.Fatalf("%s did not apply the commit", n)
		}
	}
}

// §Group scope: offers, their answers and snapshots are addressed to the
// member that asked, so the termination rule holds unchanged.
func TestGroupAnswersAddressed(t *testing.T) {
	c := newGroupCluster(t, 64, 1000, nil, "a", "b", "c")
	_ = c.reps["a"].kv.Set("d1", "k", []byte("v"))
	_ = c.reps["b"].kv.Set("d2", "k", []byte("w"))
	c.send("b", c.reps["b"].sess["a"].Offer())
	log := c.pump()
	want := "[b>a:vv a>b:delta a>b:vv b>a:delta]"
	if fmt.Sprint(log) != want {
		t.Fatalf("exchange %v, want %v", log, want)
	}
	if c.reps["c"].kv.Has("d1") || c.reps["c"].kv.Has("d2") {
		t.Fatal("an addressed answer reached a third member")
	}
	need := wire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "d1"})
	outs := c.reps["a"].sess["c"].Receive(need)
	if len(outs) != 1 || outs[0].To != "c" || outs[0].Frame.Kind != frame.KindSnap {
		t.Fatalf("snapshot answer %v to %q", kinds(outs), outs[0].To)
	}
}

// §Group scope: a sender bounds the frames it encrypts without delivering
// one to the whole roster. A third member that sees only roster frames stays
// inside its forward-distance window; without the bound it is stranded and
// misses the next local commit.
func TestGroupAddressedBound(t *testing.T) {
	const window = 20
	run := func(bound int) *groupCluster {
		c := newGroupCluster(t, bound, window, nil, "a", "b", "c")
		for i := range 40 { // a and b edit and reconcile, addressed
			_ = c.reps["a"].kv.Set("d", "k", fmt.Appendf(nil, "a%d", i))
			_ = c.reps["b"].kv.Set("d", "j", fmt.Appendf(nil, "b%d", i))
			c.send("b", c.reps["b"].sess["a"].Offer())
			c.pump()
		}
		c.commit("a", "d", "final", "x")
		c.pump()
		return c
	}
	c := run(window / 2)
	if c.net.Stranded("c", "a") {
		t.Fatal("c stranded although the bound is below the window")
	}
	if v, _ := c.reps["c"].kv.Get("d", "final"); string(v) != "x" {
		t.Fatal("c missed the local commit")
	}
	// The promoted frames also carried the reconciled state to c.
	if _, ok := c.reps["c"].kv.Get("d", "k"); !ok {
		t.Fatal("promoted frames did not reach c")
	}
	broken := run(1 << 30) // effectively no bound
	if !broken.net.Stranded("c", "a") {
		t.Fatal("without the bound c was not stranded: the test cannot see the rule")
	}
	if _, ok := broken.reps["c"].kv.Get("d", "final"); ok {
		t.Fatal("stranded member still decrypted")
	}
}

// §Group scope: when the bound is reached and the gate is closed, the frame
// is withheld rather than sent addressed.
func TestGroupBoundWithGateClosed(t *testing.T) {
	c := newGroupCluster(t, 2, 1000, nil, "a", "b", "c")
	_ = c.reps["a"].kv.Set("d", "k", []byte("v"))
	s := c.reps["a"].sess["b"]
	if n := len(s.Offer()) + len(s.Offer()); n != 2 {
		t.Fatalf("addressed offers under the bound: %d", n)
	}
	c.grp["a"].SetMember("c", frame.Caps{engine.KVEncoding.Entry})
	if outs := s.Offer(); len(outs) != 0 {
		t.Fatalf("frame past the bound sent with the gate closed: %v %q", kinds(outs), outs[0].To)
	}
	c.grp["a"].SetMember("c", kvCaps)
	outs := s.Offer()
	if len(outs) != 1 || outs[0].To != "" {
		t.Fatal("frame past the bound not promoted to the roster")
	}
}

// §Documents too large for a frame: the media path is 1:1 only; in a group
// an oversized document is reported.
func TestGroupNoMediaPath(t *testing.T) {
	c := newGroupCluster(t, 8, 1000, nil, "a", "b")
	for i := range 10 {
		_ = c.reps["a"].kv.Set("big", fmt.Sprint(i), make([]byte, 5000))
	}
	if outs := c.reps["a"].sess["b"].Receive(wire(t, frame.Frame{Kind: frame.KindNeedSnap, Doc: "big"})); len(outs) != 0 {
		t.Fatalf("group answered with %s", kinds(outs))
	}
	if r := c.reps["a"].reports; len(r) != 1 {
		t.Fatalf("reports %v", r)
	}
}

// §Attachments: references replicate in group spaces like any other value.
func TestGroupReferencesReplicate(t *testing.T) {
	c := newGroupCluster(t, 8, 1000, nil, "a", "b", "c")
	ref := attach.Ref{Hash: attach.Hash([]byte("photo")), Size: 5, Name: "p.jpg"}
	before := []byte{}
	_ = c.reps["a"].kv.SetRef("d", "pic", ref)
	c.send("a", c.reps["a"].sess["b"].Commit("d", before))
	c.pump()
	for _, n := range []string{"b", "c"} {
		if got, ok := c.reps[n].kv.Ref("d", "pic"); !ok || got != ref {
			t.Fatalf("%s: %+v %v", n, got, ok)
		}
	}
}

// TestGroupRandomizedConvergence: members commit to the roster and run
// addressed anti-entropy at random under a small promotion bound; after a
// final round of offers every member holds the same documents, and no
// member was stranded.
func TestGroupRandomizedConvergence(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 3))
		names := []string{"a", "b", "c", "d"}
		c := newGroupCluster(t, 4, 16, nil, names...)
		for step := 0; step < 200; step++ {
			who := names[rng.IntN(4)]
			if rng.IntN(3) == 0 {
				peer := names[rng.IntN(4)]
				if peer != who {
					c.send(who, c.reps[who].sess[peer].Offer())
				}
			} else {
				c.commit(who, fmt.Sprintf("doc%d", rng.IntN(4)), fmt.Sprintf("k%d", rng.IntN(3)), fmt.Sprint(step))
			}
			if rng.IntN(4) == 0 {
				c.pump()
			}
		}
		c.pump()
		for _, x := range names {
			for _, y := range names {
				if x != y {
					c.send(x, c.reps[x].sess[y].Offer())
					c.pump()
				}
			}
		}
		for _, x := range names[1:] {
			if fmt.Sprint(c.reps["a"].kv.Docs()) != fmt.Sprint(c.reps[x].kv.Docs()) {
				t.Fatalf("seed %d: %s holds other documents", seed, x)
			}
			for _, d := range c.reps["a"].kv.Docs() {
				if fmt.Sprint(c.reps["a"].kv.Values(d)) != fmt.Sprint(c.reps[x].kv.Values(d)) {
					t.Fatalf("seed %d: %s differs on %s", seed, x, d)
				}
			}
			for _, y := range names {
				if c.net.Stranded(x, y) {
					t.Fatalf("seed %d: %s stranded from %s", seed, x, y)
				}
			}
		}
	}
}

// restart replaces who's group state and sessions with a fresh process's
// (same engine and roster; the group's sender ratchet carries on).
func (c *groupCluster) restart(who string, bound int) {
	r := c.reps[who]
	g := NewGroup(engine.KVEncoding.Entry, bound)
	for p := range r.sess {
		g.SetMember(PeerID(p), kvCaps)
		r.sess[p] = NewSession(r.sp, PeerID(p), Options{Caps: kvCaps, Group: g, MaxRecordBytes: 8 << 20})
	}
	c.grp[who] = g
	outs := r.sess["b"].Offer()
	if len(outs) != 1 || outs[0].To != "" {
		c.t.Fatal("a new process's first addressed frame is not promoted")
	}
	c.send(who, outs)
	c.pump()
}

// Issue 17 point 4: the addressed-frame bound survives restarts of the
// sender. A process that sends fewer addressed frames than the bound and
// restarts, again and again, would otherwise never promote one, and a
// member that sees only roster frames falls out of the window.
func TestGroupBoundAcrossSenderRestarts(t *testing.T) {
	const window, bound = 20, 10
	c := newGroupCluster(t, bound, window, nil, "a", "b", "c")
	_ = c.reps["a"].kv.Set("d", "k", []byte("v"))
	for range 5 {
		c.restart("a", bound)
		for range bound - 1 { // under the bound in each process
			c.send("a", c.reps["a"].sess["b"].Offer())
			c.pump()
		}
	}
	c.commit("a", "d", "final", "x")
	c.pump()
	if c.net.Stranded("c", "a") {
		t.Fatal("c stranded by addressed frames spread over restarts")
	}
	if v, _ := c.reps["c"].kv.Get("d", "final"); string(v) != "x" {
		t.Fatal("c missed the local commit after the restarts")
	}
}
