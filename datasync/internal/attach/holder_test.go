package attach

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/media"
)

// Issue 17 point 7: a flood of need_blob, each with a new hash, is acted
// on for at most MaxHashesPerPeer hashes per peer and MaxHashes in all
// within the window, and the holder's memory stays bounded; once the
// window has passed, old entries are forgotten and new hashes are acted on
// again.
func TestHolderHashFlood(t *testing.T) {
	now := time.Unix(0, 0)
	acts := &Acts{Now: func() time.Time { return now }}
	h := &Holder{Store: &MemStore{}, Acts: acts}
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
	if total != DefaultMaxHashes || acts.Remembered() != DefaultMaxHashes {
		t.Fatalf("acted on %d hashes in all, remembers %d; want %d", total, acts.Remembered(), DefaultMaxHashes)
	}
	now = now.Add(DefaultHolderWindow + time.Second)
	if got := answered("p1", 10, 10_000); got != 10 {
		t.Fatalf("after the window: acted on %d of 10", got)
	}
	if acts.Remembered() > DefaultMaxHashes {
		t.Fatalf("remembers %d", acts.Remembered())
	}
}

// Holders sharing one Acts (the links of one space: reconnections,
// concurrent links) count a peer's hashes together, and never start a
// second transfer of a blob already crossing to that peer.
func TestHoldersShareActs(t *testing.T) {
	acts := &Acts{}
	h1, h2 := &Holder{Store: &MemStore{}, Acts: acts}, &Holder{Store: &MemStore{}, Acts: acts}
	got := 0
	for i := range 2 * DefaultMaxHashesPerPeer {
		h := h1
		if i%2 == 1 {
			h = h2 // the peer reconnected
		}
		got += len(h.NeedBlob("p", Hash([]byte(fmt.Sprint(i)))))
	}
	if got != DefaultMaxHashesPerPeer {
		t.Fatalf("two links acted on %d hashes of one peer, want %d", got, DefaultMaxHashesPerPeer)
	}
	blob := []byte("held")
	hb := Hash(blob)
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	store := &MemStore{}
	_ = store.Put(hb, blob)
	shared := &Acts{}
	send := func(context.Context, string, media.Purpose, []byte) error {
		started <- struct{}{}
		<-release
		return nil
	}
	a, b := &Holder{Store: store, Acts: shared, Send: send}, &Holder{Store: store, Acts: shared, Send: send}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	go b.Run(ctx)
	a.NeedBlob("p", hb)
	<-started
	b.NeedBlob("p", hb) // the same bytes asked on the other link while crossing
	close(release)
	a.Wait()
	b.Wait()
	if n := len(started); n != 0 {
		t.Fatalf("%d second transfers started", n)
	}
}
