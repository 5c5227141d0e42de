package client

import (
	"context"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// DefaultReadOnlyFor is how long a removed user's replica and a deleted
// collection stay readable on a device (§11.6, §11.9).
const DefaultReadOnlyFor = 30 * 24 * time.Hour

// endedAt returns when collection c ended for this device — deleted by
// its owner, or the user removed from it — as the HLC time of the statement
// that did it. d.mu is held.
func (d *Device) endedAt(coll *collection) (time.Time, bool, bool) {
	r, ok := coll.chain.Roster()
	if !ok {
		return time.Time{}, false, false
	}
	sts := r.Statements()
	if r.State().Deleted {
		return hlcTime(r.Head()), true, true
	}
	if _, listed := r.State().Member(d.id.UID); listed {
		return time.Time{}, false, false
	}
	for i := len(sts) - 1; i > 0; i-- {
		if _, was := sts[i-1].State().Member(d.id.UID); was {
			return hlcTime(sts[i]), false, true
		}
	}
	return time.Time{}, false, false
}

func hlcTime(st *roster.Statement) time.Time {
	return time.UnixMilli(int64(st.Body().Dot.HLC.Millis))
}

// retireEnded acts on collections that ended more than ReadOnlyFor ago:
// an owner device destroys a deleted collection's data messages on the hub
// and keeps its roster, so a device returning late still learns it was
// deleted (§11.9); every device then stops following it, and a removed
// user's replica goes (§11.6). d.mu is not held.
func (d *Device) retireEnded(ctx context.Context, s hub.Store) error {
	d.mu.Lock()
	cutoff := d.now().Add(-d.readOnlyFor)
	var gone []hub.ID
	var drop []CollectionID
	for c, coll := range d.colls {
		at, deleted, ended := d.endedAt(coll)
		if !ended || at.After(cutoff) {
			continue
		}
		if r, _ := coll.chain.Roster(); deleted && r.Owner() == d.id.UID {
			tags := map[string]bool{}
			for e, k := range coll.epochs {
				tags[suite.CollectionTag(k, e)] = true
			}
			for id, m := range d.msgs {
				if tags[m.channel] && m.kind == kindRecord {
					gone = append(gone, id)
				}
			}
		}
		drop = append(drop, c)
	}
	d.mu.Unlock()
	if len(gone) > 0 {
		if err := s.Destroy(ctx, gone); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range gone {
		d.forget(id)
	}
	for _, c := range drop {
		d.unfollow(c)
		d.log.Info("tandem/client: a collection that ended is no longer kept", "collection", c)
	}
	return d.commitSynced()
}
