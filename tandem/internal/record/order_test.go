package record

import (
	"math/rand/v2"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Property tests of the supersession order (tandem-gaps.md "Supersession
// (§9.2)") on random and adversarial vectors.

// naiveLeq is V ⊑ W computed through maps, independent of vvLeq.
func naiveLeq(v, w suite.VV) bool {
	m := map[suite.DeviceID]suite.HLC{}
	for _, d := range w {
		m[d.Device] = d.HLC
	}
	for _, d := range v {
		h, ok := m[d.Device]
		if !ok || h.Compare(d.HLC) < 0 {
			return false
		}
	}
	return true
}

// naiveSeen is x ≤ w written straight from the gaps file, with R(x) and
// R(x) ⊔ B(x) materialized.
func naiveSeen(x, w *Write) bool {
	rx := vvJoin(x.body.Context, suite.VV{x.body.Dot})
	switch {
	case x.epoch > w.epoch:
		return false
	case x.epoch == w.epoch:
		return naiveLeq(rx, w.body.Context) && naiveLeq(x.body.Base, w.body.Base)
	default:
		return naiveLeq(vvJoin(rx, x.body.Base), w.body.Base)
	}
}

func naiveSupersedes(w, x *Write) bool { return naiveSeen(x, w) && !naiveSeen(w, x) }

// randHLC returns a small HLC, or for adversarial vectors sometimes an
// extreme one (the future, the end of the range).
func randHLC(r *rand.Rand, adversarial bool) suite.HLC {
	if adversarial && r.IntN(5) == 0 {
		switch r.IntN(3) {
		case 0:
			return suite.HLC{Millis: suite.MaxHLCMillis, Counter: 0xffff}
		case 1:
			return suite.HLC{Millis: 1 << 40}
		default:
			return suite.HLC{}
		}
	}
	return suite.HLC{Millis: uint64(1 + r.IntN(4)), Counter: uint16(r.IntN(2))}
}

func randVV(r *rand.Rand, devices int, adversarial bool) suite.VV {
	var v suite.VV
	for d := range devices {
		if r.IntN(2) == 0 {
			v = append(v, suite.Dot{Device: dev(d), HLC: randHLC(r, adversarial)})
		}
	}
	if v == nil {
		v = suite.VV{}
	}
	return v
}

// randWrite returns a write of one register (record 1, field "f") with
// random dot, context, base and epoch. Adversarial writes also cover their
// own dot, reuse dots and claim the future.
func randWrite(tb testing.TB, r *rand.Rand, adversarial bool) *Write {
	const devices = 4
	b := suite.WriteBody{Record: recID(1), Field: "f", Op: suite.OpAssign, Value: []byte{byte(r.IntN(256)), byte(r.IntN(256))}}
	b.Dot = suite.Dot{Device: dev(r.IntN(devices)), HLC: randHLC(r, adversarial)}
	b.Context = randVV(r, devices, adversarial)
	b.Base = randVV(r, devices, adversarial)
	switch {
	case adversarial && r.IntN(6) == 0: // claims to have seen everything, ever
		b.Context, b.Base = suite.VV{}, suite.VV{}
		for d := range devices {
			b.Context = append(b.Context, suite.Dot{Device: dev(d), HLC: suite.HLC{Millis: suite.MaxHLCMillis, Counter: 0xffff}})
		}
		b.Base = append(b.Base, b.Context...)
	case adversarial && r.IntN(3) == 0:
		b.Context = vvJoinDot(b.Context, b.Dot) // claims to have seen itself
	}
	return rawWrite(tb, b, uint64(r.IntN(3)))
}

func randPool(tb testing.TB, r *rand.Rand, n int, adversarial bool) []*Write {
	pool := make([]*Write, n)
	for i := range pool {
		pool[i] = randWrite(tb, r, adversarial)
	}
	return pool
}

func TestVectorAlgebraMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		adv := i%2 == 1
		v, w := randVV(r, 5, adv), randVV(r, 5, adv)
		if got, want := vvLeq(v, w), naiveLeq(v, w); got != want {
			t.Fatalf("vvLeq(%v, %v) = %v, want %v", v, w, got, want)
		}
		j := vvJoin(v, w)
		if err := j.Check(); err != nil {
			t.Fatalf("join %v: %v", j, err)
		}
		if !naiveLeq(v, j) || !naiveLeq(w, j) {
			t.Fatalf("join %v not above %v and %v", j, v, w)
		}
		if len(j) > len(v)+len(w) {
			t.Fatalf("join too long")
		}
		// least: every entry of the join comes from v or w.
		for _, d := range j {
			hv, okv := vvGet(v, d.Device)
			hw, okw := vvGet(w, d.Device)
			if !(okv && hv == d.HLC) && !(okw && hw == d.HLC) {
				t.Fatalf("join entry %v from neither side", d)
			}
		}
		dt := suite.Dot{Device: dev(r.IntN(6)), HLC: randHLC(r, adv)}
		if got, want := reachLeq(v, dt, w), naiveLeq(vvJoinDot(v, dt), w); got != want {
			t.Fatalf("reachLeq mismatch")
		}
	}
}

// checkOrder checks, on one pool, that ≤ and supersession match the naive
// definitions and that supersession is irreflexive, transitive and never
// reaches into a later epoch.
func checkOrder(t *testing.T, pool []*Write) {
	t.Helper()
	for _, x := range pool {
		if supersedes(x, x) {
			t.Fatalf("supersession not irreflexive: %+v", x.body)
		}
	}
	for _, a := range pool {
		for _, b := range pool {
			if seen(a, b) != naiveSeen(a, b) {
				t.Fatalf("seen differs from the gaps-file definition")
			}
			sab := supersedes(a, b)
			if sab != naiveSupersedes(a, b) {
				t.Fatalf("supersedes differs from the gaps-file definition")
			}
			if sab && b.epoch > a.epoch {
				t.Fatalf("write of epoch %d supersedes one of later epoch %d", a.epoch, b.epoch)
			}
			if sab && supersedes(b, a) {
				t.Fatalf("supersession not asymmetric")
			}
			for _, c := range pool {
				if seen(a, b) && seen(b, c) && !seen(a, c) {
					t.Fatalf("≤ not transitive")
				}
				if sab && supersedes(b, c) && !supersedes(a, c) {
					t.Fatalf("supersession not transitive")
				}
			}
		}
	}
}

func TestSupersessionIsStrictPartialOrderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for range rounds {
		checkOrder(t, randPool(t, r, 14, false))
	}
}

func TestSupersessionIsStrictPartialOrderAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	found := false
	for range rounds {
		pool := randPool(t, r, 14, true)
		checkOrder(t, pool)
		for _, a := range pool {
			for _, b := range pool {
				if a != b && seen(a, b) && seen(b, a) {
					found = true // mutual covering occurs: both kept
				}
			}
		}
	}
	if !found {
		t.Fatal("generator never produced writes that each claim to cover the other")
	}
}

// TestSupersessionHandPicked pins the cases the draft names.
func TestSupersessionHandPicked(t *testing.T) {
	w := func(d suite.Dot, ctx, base suite.VV, e uint64) *Write {
		return rawWrite(t, suite.WriteBody{Record: recID(1), Field: "f", Op: suite.OpAssign, Dot: d, Context: ctx, Base: base}, e)
	}
	a := w(dot(1, 10, 0), vv(), vv(), 1)
	b := w(dot(2, 11, 0), vv(dot(1, 10, 0)), vv(), 1)
	if !supersedes(b, a) || supersedes(a, b) {
		t.Error("honest successor does not supersede what it saw")
	}
	c := w(dot(3, 9, 0), vv(), vv(), 1)
	if supersedes(b, c) || supersedes(c, b) {
		t.Error("concurrent writes ordered")
	}
	// Each claims to cover the other: both kept.
	m1 := w(dot(1, 20, 0), vv(dot(2, 20, 0)), vv(), 1)
	m2 := w(dot(2, 20, 0), vv(dot(1, 20, 0)), vv(), 1)
	if supersedes(m1, m2) || supersedes(m2, m1) {
		t.Error("mutually covering writes ordered")
	}
	// Future-covering context in epoch 1 binds only epoch 1.
	evil := w(dot(9, 5, 0), vv(dot(1, suite.MaxHLCMillis, 0xffff), dot(2, suite.MaxHLCMillis, 0xffff)), vv(), 1)
	honest := w(dot(1, 100, 0), vv(), vv(), 2)
	if supersedes(evil, honest) {
		t.Error("epoch 1 write supersedes an epoch 2 write")
	}
	// Same dot twice: two writes, neither supersedes the other.
	s1 := w(dot(4, 7, 0), vv(), vv(), 1)
	s2 := rawWrite(t, suite.WriteBody{Record: recID(1), Field: "f", Op: suite.OpAssign, Value: []byte("x"), Dot: dot(4, 7, 0), Context: vv(), Base: vv()}, 1)
	if s1.id == s2.id || supersedes(s1, s2) || supersedes(s2, s1) {
		t.Error("same-dot writes not kept apart")
	}
}
