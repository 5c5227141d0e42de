package roster

import "github.com/ferry-sync/ferry/tandem/internal/record"

// RecordState adapts a merged tandem/record State to StateView, so
// BuildInventory reads the kept writes (tombstones included) straight from
// the merge engine.
type RecordState struct {
	State *record.State
	// Seen reports whether the device held the write at some point. The
	// merge engine drops superseded writes, so it cannot say this itself;
	// the caller remembers at least the IDs of the current inventory's
	// writes it ingested (§8.3). Nil means: only kept writes were seen.
	Seen func(record [16]byte, write [32]byte) bool
}

// Kept implements StateView.
func (s RecordState) Kept(fn func(record [16]byte, writes [][32]byte)) {
	for rec := range s.State.Records() {
		ws := s.State.Writes(rec)
		ids := make([][32]byte, len(ws))
		for i, w := range ws {
			ids[i] = w.ID()
		}
		fn(rec, ids)
	}
}

// Known implements StateView.
func (s RecordState) Known(rec [16]byte, write [32]byte) bool {
	if s.Seen != nil && s.Seen(rec, write) {
		return true
	}
	for _, w := range s.State.Writes(rec) {
		if w.ID() == write {
			return true
		}
	}
	return false
}

// Counter is the epoch counter e(x) the merge engine needs for a write
// naming statement ref (tandem-gaps.md "Supersession"): the key counter of
// its source epoch. It reports false if ref is not followed.
func (r *Roster) Counter(ref [32]byte) (uint64, bool) {
	st, ok := r.Statement(ref)
	if !ok {
		return 0, false
	}
	return st.State().Key.N, true
}
