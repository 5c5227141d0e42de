package attach

import (
	"fmt"
	"testing"
	"time"
)

// Issue 17 point 7: a flood of need_blob, each with a new hash, is acted
// on for at most MaxHashesPerPeer hashes per peer and MaxHashes in all
// within the window, and the holder's memory stays bounded; once the
// window has passed, old entries are forgotten and new hashes are acted on
// again.
func TestHolderHashFlood(t *testing.T) {
	now := time.Unix(0, 0)
	h := &Holder{Store: &MemStore{}, Now: func() time.Time { return now }}
	answered := func(peer string, n, from int) int {
		got := 0
		for i := range n {
			hash := Hash([]byte(fmt.Sprint(peer, from+i)))
			got += len(h.NeedBlob(peer, hash)) // blob_gone: acted on
		}
		return got
	}
	if got := answered("p1", 5000, 0); got != DefaultMaxHashesPerPeer {
		t.Fatalf("acted on %d of 5,000 new hashes from one peer, want %d", got, DefaultMaxHashesPerPeer)
	}
	total := DefaultMaxHashesPerPeer
	for p := 2; p < 40; p++ {
		total += answered(fmt.Sprint("p", p), 200, 0)
	}
	if total != DefaultMaxHashes || h.Remembered() != DefaultMaxHashes {
		t.Fatalf("acted on %d hashes in all, remembers %d; want %d", total, h.Remembered(), DefaultMaxHashes)
	}
	now = now.Add(DefaultHolderWindow + time.Second)
	if got := answered("p1", 10, 10_000); got != 10 {
		t.Fatalf("after the window: acted on %d of 10", got)
	}
	if h.Remembered() > DefaultMaxHashes {
		t.Fatalf("remembers %d", h.Remembered())
	}
}
