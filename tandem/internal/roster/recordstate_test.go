package roster

import (
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// TestInventoryFromRecordState builds an epoch's inventory from the real
// merge engine: kept writes and tombstones are listed, a superseded write
// is not, and a listed write the device never saw is carried forward.
func TestInventoryFromRecordState(t *testing.T) {
	w := newWorld(t)
	c := chainOf(t, w.r1)
	rs := record.NewState(record.NewValidator(record.Rules{Scope: w.coll}))
	r1, _ := c.Roster()
	ingest := func(x signedWrite) {
		t.Helper()
		n, ok := r1.Counter(x.body.Ref)
		if !ok {
			t.Fatal("counter")
		}
		if _, _, err := rs.Ingest(&x.body, x.sig, n); err != nil {
			t.Fatal(err)
		}
	}
	// wA (listed) arrives; wM (listed) never does on this device.
	ingest(w.wA)
	dev := suite.DeviceID{2}
	newer := w.wA.body
	newer.Value, newer.Ref, newer.Dot = []byte("oat milk"), w.e1, suite.Dot{Device: dev, HLC: suite.HLC{Millis: 500}}
	newer.Base = suite.VV{w.wA.body.Dot} // supersedes wA (an earlier epoch)
	_, newerID, sig, err := suite.SignWrite(w.w.SignKey, &newer)
	check(t, err)
	check(t, second(c.CheckWrite(&newer, sig, w.e1)))
	ingest(signedWrite{newer, sig, newerID})
	tomb := sw(t, w.w, w.coll, [16]byte{3}, w.e1, suite.Dot{Device: dev, HLC: suite.HLC{Millis: 600}}, suite.OpDelete, "")
	ingest(tomb)

	seen := map[[32]byte]bool{w.wA.id: true}
	ch, err := Rotate(r1, w.o.signer(), RecordState{State: rs, Seen: func(_ [16]byte, id [32]byte) bool { return seen[id] }})
	check(t, err)
	inv := ch.Inventory
	switch {
	case !inv.Lists(w.rec1, newerID):
		t.Fatal("kept write not listed")
	case !inv.Lists([16]byte{3}, tomb.id):
		t.Fatal("tombstone not listed")
	case inv.Lists(w.rec1, w.wA.id):
		t.Fatal("superseded write listed")
	case !inv.Lists(w.rec2, w.wM.id):
		t.Fatal("unseen listed write dropped")
	}
}
