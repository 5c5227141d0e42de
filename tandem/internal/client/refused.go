package client

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// What a device's state holds (§8.3, §10.7, §11.6), enforced here and
// nowhere else: once the device has the roster and the current epoch's
// inventory, a collection's state holds the writes the chain accepts in
// the current epoch's channel (Chain.Accepts: that epoch's writes and the
// old writes its inventory lists) and the user's own old writes on their
// way to being signed again (resign.go). Anything else leaves the state:
// another user's write is dropped (SyncReport.Excluded tells the app), the
// user's own is refused and kept aside (Refused) — never published, never
// superseding, never making a hub message look dominated. A record that
// lost a write is read again from the current channel, where the writes a
// dropped one had superseded are. See docs/decisions/tandem-epoch-state.md.

// RefusedWhy says why the group would not accept one of the user's writes.
type RefusedWhy int

// Reasons for a refused write.
const (
	RefusedLate      RefusedWhy = iota + 1 // an old epoch's write the inventory missed that cannot be signed again (§11.6)
	RefusedNotWriter                       // the user is a reader now (§8.3)
	RefusedRemoved                         // the user is no longer a member (§11.6)
	RefusedNotOwner                        // only the owner writes _meta (§8.3)
	RefusedDeleted                         // the collection was deleted (§11.9)
)

// Refused is a write of the user's that the collection's group would not
// accept, kept for the app instead of being published (§11.6).
type Refused struct {
	Write *record.Write
	Why   RefusedWhy
}

// Kinds of a refused write: its §9.1 op in a word.
const (
	EditSet    = "set"    // assigned a register field
	EditAdd    = "add"    // added a set element
	EditRemove = "remove" // removed a set element
	EditDelete = "delete" // deleted the record
)

// Kind is what the refused write did (an Edit constant).
func (r Refused) Kind() string {
	switch r.Write.Op() {
	case suite.OpAdd:
		return EditAdd
	case suite.OpRemove:
		return EditRemove
	case suite.OpDelete:
		return EditDelete
	}
	return EditSet
}

// ErrRefused: a local write was refused (Refused says which and why).
var ErrRefused = errors.New("tandem/client: the group would not accept this write")

// Verdicts of judge.
const (
	keepIt = iota
	dropIt
	refuseIt
)

// judge applies the rule to one write w the state of coll holds, the
// roster r being followed with its current epoch's inventory. d.mu is held
// (or, in Restore, nothing else touches coll).
func (d *Device) judge(coll *collection, r *roster.Roster, w *record.Write) (int, RefusedWhy) {
	n, _ := r.Counter(r.Epoch())
	if w.Epoch() == n && (w.Record() != roster.MetaRecordID() || w.Author() == r.Owner()) {
		// A write of the current epoch was judged in it when it entered
		// (admitData, or Write for the user's own): only an old epoch's
		// write, or _meta by a non-owner, needs judging again.
		return keepIt, 0
	}
	err := coll.chain.Accepts(w)
	if err == nil || errors.Is(err, roster.ErrHeld) {
		return keepIt, 0
	}
	if w.Author() != d.id.UID || hiddenWrite(coll.state, w) {
		return dropIt, 0 // another user's; or a field write a tombstone hides, which nobody can show again
	}
	if _, ok := firstListing(r, d.id.UID); ok && w.Epoch() < n && !errors.Is(err, roster.ErrMetaNotOwner) {
		return keepIt, 0 // resign.go signs it again into this epoch
	}
	return refuseIt, refusedWhy(r, d.id.UID, err)
}

// judgedOnEntry reports whether judge would keep every write s retains at
// its first test, without asking the roster: all of them of the current
// epoch (record.State.EpochRange), and _meta written by the owner alone.
// Settling then takes nothing out, so the pass over every write is skipped:
// every open settles each collection, and a collection that never changed
// key is all of one epoch.
func judgedOnEntry(s *record.State, r *roster.Roster) bool {
	lo, hi, ok := s.EpochRange()
	if !ok {
		return true
	}
	n, _ := r.Counter(r.Epoch())
	if lo != n || hi != n {
		return false
	}
	for _, w := range s.Retained(roster.MetaRecordID()) {
		if w.Author() != r.Owner() {
			return false
		}
	}
	return true
}

// hiddenWrite reports whether w is a field write of a record s holds as
// deleted: kept but never shown, published or listed (§9.2, §12.3).
func hiddenWrite(s *record.State, w *record.Write) bool {
	return w.Op() != suite.OpDelete && s.Deleted(w.Record())
}

// refusedWhy names the reason for the user's write refused with err.
func refusedWhy(r *roster.Roster, uid [32]byte, err error) RefusedWhy {
	st := r.State()
	m, listed := st.Member(uid)
	switch {
	case errors.Is(err, roster.ErrMetaNotOwner):
		return RefusedNotOwner
	case st.Deleted:
		return RefusedDeleted
	case !listed:
		return RefusedRemoved
	case m.Role == roster.RoleReader:
		return RefusedNotWriter
	}
	return RefusedLate
}

// fullRoster returns coll's followed roster when the rule can be applied
// in full: the roster is followed and the current epoch's inventory is
// known (a missing inventory delays the move, §11.6).
func fullRoster(coll *collection) (*roster.Roster, bool, bool) {
	r, ok := coll.chain.Roster()
	if !ok || coll.chain.Status() != roster.StatusFollowing {
		return nil, false, false
	}
	_, inv := r.Inventory(r.Epoch())
	return r, inv || r.Epoch() == r.Genesis().ID(), true
}

// settleAll applies the rule to every collection whose roster changed
// since it was last applied, then signs the user's late writes again
// (resign.go). It reports how many records must be read again from the
// hub. d.mu is held.
func (d *Device) settleAll(rep *SyncReport) int {
	reread := 0
	for _, coll := range d.colls {
		reread += d.settleState(coll, rep)
	}
	d.resignAll(rep)
	return reread
}

// settleState applies the rule to coll. Without the current epoch's inventory
// it does only this: if the user can no longer write (removed, made a
// reader, the collection deleted), this device's writes in records still
// queued for publishing that no hub message holds never went out, and are
// refused. d.mu is held.
func (d *Device) settleState(coll *collection, rep *SyncReport) int {
	r, full, ok := fullRoster(coll)
	if !ok {
		return 0
	}
	head := r.Head().ID()
	if coll.settled == head && (coll.settledFull || !full) {
		return 0
	}
	var out func(*record.Write) bool
	refused, hidden := map[[32]byte]RefusedWhy{}, map[[32]byte]bool{}
	switch {
	case full && judgedOnEntry(coll.state, r):
		coll.settled, coll.settledFull = head, full
		return 0
	case full:
		out = func(w *record.Write) bool {
			v, why := d.judge(coll, r, w)
			switch {
			case v == refuseIt:
				refused[w.ID()] = why
			case v == dropIt && hiddenWrite(coll.state, w):
				hidden[w.ID()] = true
			}
			return v != keepIt
		}
	case !canWrite(r, d.id.UID):
		onHub, dirty := d.writesOnHub(coll), d.dirtyRecords(coll)
		why := refusedWhy(r, d.id.UID, nil)
		out = func(w *record.Write) bool {
			if w.Author() == d.id.UID && w.Dot().Device == d.dev && dirty[w.Record()] && !onHub[w.ID()] {
				refused[w.ID()] = why
				return true
			}
			return false
		}
	default:
		return 0 // a writer waits for the inventory
	}
	coll.settled, coll.settledFull = head, full
	gone := coll.state.Drop(out)
	shown := gone[:0:0]
	for _, w := range gone {
		if !hidden[w.ID()] {
			shown = append(shown, w)
		}
	}
	return d.takeOut(coll, shown, refused, rep)
}

// takeOut accounts for writes that left coll's state: the refused ones go
// aside, the others are counted as excluded; each record that lost a write
// is read again from the current channel. It reports how many records.
// d.mu is held.
func (d *Device) takeOut(coll *collection, gone []*record.Write, refused map[[32]byte]RefusedWhy, rep *SyncReport) int {
	if len(gone) == 0 {
		return 0
	}
	recs := map[[16]byte]bool{}
	for _, w := range gone {
		recs[w.Record()] = true
		if why, ok := refused[w.ID()]; ok {
			coll.refused[w.ID()] = Refused{Write: w, Why: why}
			rep.Refused++
			continue
		}
		rep.Excluded++
	}
	d.log.Info("tandem/client: writes the group does not accept left the state", "collection", coll.id, "refused", len(refused), "dropped", len(gone)-len(refused))
	tag := d.currentTag(coll.id)
	for id, m := range d.msgs {
		if m.channel == tag && m.kind == kindRecord && recs[m.rec] && (m.state == MsgDone || m.state == MsgOwn) {
			d.mark(id, MsgTodo)
		}
	}
	return len(recs)
}

// canWrite reports whether r's head lets uid write data (§8.3).
func canWrite(r *roster.Roster, uid [32]byte) bool {
	st := r.State()
	m, ok := st.Member(uid)
	return ok && !st.Deleted && (m.Role == roster.RoleOwner || m.Role == roster.RoleWriter)
}

// writesOnHub lists the IDs of the writes held by coll's live messages on
// the hub, as far as the device knows. d.mu is held.
func (d *Device) writesOnHub(coll *collection) map[[32]byte]bool {
	out := map[[32]byte]bool{}
	for _, m := range d.msgs {
		ch := d.chans[m.channel]
		if ch == nil || ch.coll != coll || m.kind != kindRecord || m.state == MsgTodo || m.state == MsgRejected {
			continue
		}
		for _, w := range m.writes {
			out[w] = true
		}
	}
	return out
}

// dirtyRecords lists coll's records queued for publishing. d.mu is held.
func (d *Device) dirtyRecords(coll *collection) map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, m := range d.outbox {
		if ch := d.chans[m.channel]; m.dirty && ch != nil && ch.coll == coll {
			out[m.rec] = true
		}
	}
	return out
}

// restoreRefused re-applies the rule when a write is loaded back (Restore)
// so a refused write goes aside before it can supersede anything. It
// reports whether w went aside. Only Restore's loader touches coll.
func (d *Device) restoreRefused(coll *collection, w *record.Write) bool {
	r, full, ok := fullRoster(coll)
	if !ok || !full || w.Author() != d.id.UID {
		return false
	}
	if v, why := d.judge(coll, r, w); v == refuseIt {
		coll.refused[w.ID()] = Refused{Write: w, Why: why}
		return true
	}
	return false
}

// Refused lists collection c's refused writes, by record and write ID.
func (d *Device) Refused(c CollectionID) ([]Refused, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	out := make([]Refused, 0, len(coll.refused))
	for _, x := range coll.refused {
		out = append(out, x)
	}
	slices.SortFunc(out, func(a, b Refused) int {
		ra, rb, ia, ib := a.Write.Record(), b.Write.Record(), a.Write.ID(), b.Write.ID()
		if c := bytes.Compare(ra[:], rb[:]); c != 0 {
			return c
		}
		return bytes.Compare(ia[:], ib[:])
	})
	return out, nil
}

// DiscardRefused forgets collection c's refused writes and returns their
// IDs, for the caller to drop from the journal.
func (d *Device) DiscardRefused(c CollectionID) ([][32]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	var ids [][32]byte
	for id := range coll.refused {
		ids = append(ids, id)
	}
	clear(coll.refused)
	return ids, nil
}

// RefusedCount counts the refused writes of every collection.
func (d *Device) RefusedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.colls {
		n += len(c.refused)
	}
	return n
}
