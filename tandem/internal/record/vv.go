package record

import (
	"sort"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Version vector algebra (tandem-gaps.md, "Supersession (§9.2)"). Vectors are
// suite.VV values: sorted by device, each device at most once. A device
// missing from a vector counts as "nothing seen" from it, below every HLC.

// vvLeq reports V ⊑ W: for every device in V, W holds an entry for it at
// least as large, HLCs compared as (millis, counter).
func vvLeq(v, w suite.VV) bool {
	if len(v) > len(w) {
		return false
	}
	j := 0
	for _, d := range v {
		for j < len(w) && w[j].Device.Compare(d.Device) < 0 {
			j++
		}
		if j == len(w) || w[j].Device != d.Device || w[j].HLC.Compare(d.HLC) < 0 {
			return false
		}
		j++
	}
	return true
}

// vvGet returns W's entry for device, and whether there is one.
func vvGet(w suite.VV, device suite.DeviceID) (suite.HLC, bool) {
	i := sort.Search(len(w), func(i int) bool { return w[i].Device.Compare(device) >= 0 })
	if i < len(w) && w[i].Device == device {
		return w[i].HLC, true
	}
	return suite.HLC{}, false
}

// dotLeq reports {dot} ⊑ W.
func dotLeq(dot suite.Dot, w suite.VV) bool {
	h, ok := vvGet(w, dot.Device)
	return ok && h.Compare(dot.HLC) >= 0
}

// reachLeq reports R ⊑ W where R = C ⊔ {dot} is a write's reach (§9.2).
// A join is below W iff each operand is, so no vector is built.
func reachLeq(c suite.VV, dot suite.Dot, w suite.VV) bool {
	return dotLeq(dot, w) && vvLeq(c, w)
}

// vvJoin returns V ⊔ W, the entrywise maximum, as a new sorted vector.
func vvJoin(v, w suite.VV) suite.VV {
	out := make(suite.VV, 0, len(v)+len(w))
	i, j := 0, 0
	for i < len(v) && j < len(w) {
		switch c := v[i].Device.Compare(w[j].Device); {
		case c < 0:
			out = append(out, v[i])
			i++
		case c > 0:
			out = append(out, w[j])
			j++
		default:
			d := v[i]
			if w[j].HLC.Compare(d.HLC) > 0 {
				d = w[j]
			}
			out = append(out, d)
			i++
			j++
		}
	}
	out = append(out, v[i:]...)
	return append(out, w[j:]...)
}

// vvJoinDot returns V ⊔ {dot}.
func vvJoinDot(v suite.VV, dot suite.Dot) suite.VV {
	return vvJoin(v, suite.VV{dot})
}

// reach returns R(x) = C(x) ⊔ {dot(x)} (§9.2).
func reach(w *Write) suite.VV { return vvJoinDot(w.body.Context, w.body.Dot) }
