package tandem

import (
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// TestSettleMessagesPerRecord: 10,000 random edits over 500 records from
// three devices on real Dovecot; once they settle, the hub holds at most
// 1.2 data messages per live record (§10.7). Tombstones and the roster are
// counted apart.
func TestSettleMessagesPerRecord(t *testing.T) {
	edits, records := 10_000, 500
	if testing.Short() {
		edits, records = 1_000, 100
	}
	h := dovecotHub(t, "quinn")
	devs := make([]*Device, 3)
	devs[0] = openT(t, filepath.Join(t.TempDir(), "d0"), Options{Name: "Settle", Hub: h})
	c, err := devs[0].NewCollection("Settle")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]RecordID, records)
	for i := range ids {
		if ids[i], err = devs[0].NewRecord(c, map[string][]byte{"title": []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	syncT(t, devs[0])
	for i := 1; i < 3; i++ {
		if devs[i], err = Restore(t.Context(), filepath.Join(t.TempDir(), fmt.Sprint("d", i)), devs[0].ShowBackupKey(), Options{Hub: h, Logger: quiet()}); err != nil {
			t.Fatal(err)
		}
		syncT(t, devs[i])
	}
	for _, d := range devs {
		defer d.Close()
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	deleted := map[RecordID]bool{}
	for e := 0; e < edits; e++ {
		d := devs[rng.IntN(3)]
		id := ids[rng.IntN(records)]
		var err error
		switch r := rng.IntN(100); {
		case r < 1 && !deleted[id]:
			err, deleted[id] = d.Delete(c, id), true
		case r < 40:
			err = d.AddElement(c, id, "tags", []byte(fmt.Sprint("t", rng.IntN(5))))
		case r < 55:
			err = d.RemoveElement(c, id, "tags", []byte(fmt.Sprint("t", rng.IntN(5))))
		default:
			err = d.SetString(c, id, fmt.Sprint("f", rng.IntN(3)), fmt.Sprint(rng.Uint32()))
		}
		if err != nil && CodeOf(err) != CodeNotWritable { // an edit of a record another device deleted
			t.Fatal(err)
		}
		if rng.IntN(25) == 0 {
			syncT(t, d)
		}
	}
	for quiet := 0; quiet < 2; {
		n := 0
		for _, d := range devs {
			r := syncT(t, d)
			n += r.Published + r.Healed + r.Destroyed
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	for _, d := range devs[1:] {
		if !bytesEqual(stateOf(t, d, c), stateOf(t, devs[0], c)) {
			t.Fatal("the devices did not converge")
		}
	}
	per, rosterMsgs := devs[0].eng.MessageCounts([16]byte(c))
	var live, liveMsgs, tomb, tombMsgs int
	for rec, n := range per {
		switch {
		case rec == roster.MetaRecordID():
		case deletedIn(t, devs[0], c, rec):
			tomb++
			tombMsgs += n
		default:
			live++
			liveMsgs += n
		}
	}
	ratio := float64(liveMsgs) / float64(live)
	t.Logf("%d edits over %d records from 3 devices: %d live records in %d messages (%.3f per record); %d tombstones in %d messages; %d roster messages",
		edits, records, live, liveMsgs, ratio, tomb, tombMsgs, rosterMsgs)
	if ratio > 1.2 {
		t.Fatalf("%.3f data messages per live record, want at most 1.2", ratio)
	}
}

func deletedIn(t *testing.T, d *Device, c CollectionID, rec [16]byte) bool {
	r, err := d.Record(c, RecordID(rec))
	return err == nil && r.Deleted
}
