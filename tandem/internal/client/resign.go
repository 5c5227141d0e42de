package client

import (
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// resignAll signs again, into each collection's current epoch, every kept
// write of the user from an earlier epoch that the epoch's inventory does
// not list (§11.6 "Signing again"): same record, field, op, element, value
// and dot, an empty context, base = old base ⊔ reach(old), and as ref the
// first statement of the epoch listing the user as owner or writer. Every
// device of the user produces the same bytes (Ed25519 is deterministic),
// and a replaced write is never a candidate (only kept writes are). A write
// that cannot be signed again (no such statement, the vector limit), or
// whose new signature the group would still refuse, is refused and kept
// aside for the app (refused.go). It reports how many writes it signed.
// d.mu is held.
func (d *Device) resignAll(rep *SyncReport) int {
	n := 0
	for _, coll := range d.colls {
		r, ok := coll.chain.Roster()
		if !ok || !r.IsEpochStart(r.Epoch()) || r.Epoch() == r.Genesis().ID() {
			continue
		}
		inv, ok := r.Inventory(r.Epoch())
		if !ok {
			continue // a missing inventory delays the move (§11.6)
		}
		ref, ok := firstListing(r, d.id.UID)
		if !ok {
			continue
		}
		epoch, _ := r.Counter(ref)
		cands := coll.state.ResignCandidates(d.id.UID, epoch, inv.Lists)
		if len(cands) == 0 {
			continue
		}
		ch, err := d.currentChannel(coll)
		if err != nil {
			continue
		}
		w := &record.Writer{Key: d.id.SignKey, Device: d.dev, Clock: d.clock, Ref: ref, Epoch: epoch}
		failed := map[[32]byte]RefusedWhy{}
		for _, old := range cands {
			x, err := coll.state.Validator().Resign(w, old)
			if err == nil {
				err = coll.chain.Accepts(x)
			}
			if err != nil {
				d.log.Warn("tandem/client: a write could not be signed again; kept for the app", "err", err)
				failed[old.ID()] = refusedWhy(r, d.id.UID, err)
				continue
			}
			d.keep(coll.state, x)
			if !d.isDirty(ch.tag, x.Record()) {
				d.enqueue(outMsg{channel: ch.tag, rec: x.Record(), dirty: true})
			}
			n++
		}
		if len(failed) > 0 {
			gone := coll.state.Drop(func(w *record.Write) bool { _, ok := failed[w.ID()]; return ok })
			d.takeOut(coll, gone, failed, rep)
		}
	}
	return n
}

// firstListing is the first statement of r's current epoch that lists uid
// as owner or writer.
func firstListing(r *roster.Roster, uid [32]byte) ([32]byte, bool) {
	in := false
	for _, st := range r.Statements() {
		if st.ID() == r.Epoch() {
			in = true
		}
		if !in {
			continue
		}
		if m, ok := st.State().Member(uid); ok && (m.Role == roster.RoleOwner || m.Role == roster.RoleWriter) {
			return st.ID(), true
		}
	}
	return [32]byte{}, false
}
