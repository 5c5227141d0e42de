package record

import (
	"bytes"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The supersession rule, exactly as tandem-gaps.md "Supersession (§9.2)"
// defines it; it replaces the two conditions the draft of §9.2 lost.
//
// Every data write x has an epoch counter e(x), a dot, a context C(x) and a
// base B(x); R(x) = C(x) ⊔ {dot(x)}. What w knows of epoch f is
// K(w, f) = C(w) for f = e(w), B(w) for f < e(w), nothing for f > e(w).
//
//	x ≤ w  iff  e(x) ≤ e(w), and
//	            if e(x) = e(w): R(x) ⊑ C(w) and B(x) ⊑ B(w)
//	            if e(x) < e(w): R(x) ⊔ B(x) ⊑ B(w)
//
//	w supersedes x  iff  x ≤ w and not w ≤ x
//
// ≤ is transitive for any vectors, so supersession is a strict partial
// order (irreflexive, transitive) whatever the vectors say. Both relations
// apply only between writes of one register: the same record and field, and
// for set ops the same element (see regKey).

// seen reports x ≤ w: "w has seen all of x".
func seen(x, w *Write) bool {
	switch {
	case x.epoch > w.epoch:
		return false // K(w, f) is nothing for f > e(w)
	case x.epoch == w.epoch:
		return reachLeq(x.body.Context, x.body.Dot, w.body.Context) &&
			vvLeq(x.body.Base, w.body.Base)
	default: // R(x) ⊔ B(x) ⊑ B(w)
		return reachLeq(x.body.Context, x.body.Dot, w.body.Base) &&
			vvLeq(x.body.Base, w.body.Base)
	}
}

// supersedes reports whether w supersedes x (§9.2, tandem-gaps.md). The
// caller has checked that x and w are writes of one register.
func supersedes(w, x *Write) bool {
	return seen(x, w) && !seen(w, x)
}

// Supersedes reports whether w makes x redundant in a merged state: either
// both are writes of one register (the same record and field, and for add
// and remove the same element; deletes of one record and field form a
// register, §9.2) and w supersedes x under the rule above, or w is a
// delete of x's record and x is neither a delete nor the record's "_name"
// write (the sticky tombstone, §9.2, §12.3; a "_name" write makes every
// delete of its record invalid, §7.3, so no delete makes it redundant).
// This is a strict partial order on writes, as garbage collection needs
// (§10.7).
func Supersedes(w, x *Write) bool {
	if w.body.Record != x.body.Record {
		return false
	}
	wd, xd := w.body.Op == suite.OpDelete, x.body.Op == suite.OpDelete
	switch {
	case wd && !xd:
		return x.body.Field != nameField
	case wd != xd, !sameRegister(w, x):
		return false
	}
	return supersedes(w, x)
}

// sameRegister reports whether two writes of one record, both deletes or
// both not, share a register (docs/decisions/tandem-record-registers.md).
func sameRegister(a, b *Write) bool {
	if a.body.Field != b.body.Field || (a.body.Op == suite.OpAssign) != (b.body.Op == suite.OpAssign) {
		return false
	}
	switch a.body.Op {
	case suite.OpAssign, suite.OpDelete:
		return true
	}
	return bytes.Equal(a.body.Element, b.body.Element)
}

// WriteSet indexes validated writes by write ID, for callers that ask about
// supersession by ID, such as hub garbage collection (§10.7) over the writes
// parsed from a channel's messages.
type WriteSet map[[32]byte]*Write

// Add indexes w.
func (ws WriteSet) Add(w *Write) { ws[w.id] = w }

// Superseded reports whether the write with ID w supersedes the one with ID
// x under Supersedes; false if either is not in the set.
func (ws WriteSet) Superseded(x, w [32]byte) bool {
	xw, wx := ws[x], ws[w]
	return xw != nil && wx != nil && Supersedes(wx, xw)
}
