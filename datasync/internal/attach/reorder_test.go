package attach

import (
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/media"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
)

func newShuffledLink(t *testing.T, seed uint64) *link {
	l := newLink(t)
	l.shuffle = testnet.NewShuffle(seed, func(b []byte) { _ = l.rx.Handle(b) })
	return l
}

// Issue 17 point 3: over a transport that delivers the chunks in random
// order, a fetched attachment lands whole whatever arrives first, chunk 0
// last included (a one-chunk attachment whose data overtakes chunk 0).
func TestFetchOverReorderedMediaPath(t *testing.T) {
	for _, size := range []int{1, 100, media.ChunkSize, 3*media.ChunkSize + 7} {
		for seed := range uint64(8) {
			l := newShuffledLink(t, seed)
			blob := make([]byte, size)
			blob[size-1] = byte(seed) + 1
			h := Hash(blob)
			_ = l.hold.Store.Put(h, blob)
			if _, err := l.fetch.Fetch(h); err != nil {
				t.Fatal(err)
			}
			l.hold.NeedBlob("a", h)
			l.hold.Wait()
			l.shuffle.Flush()
			if got, ok := l.fetch.Store.Get(h); !ok || Hash(got) != h || l.files != 0 || len(l.errs) != 0 {
				t.Fatalf("size %d seed %d: stored %v, %d files, errs %v", size, seed, ok, l.files, l.errs)
			}
		}
	}
}

// Chunks that arrive before chunk 0 cannot be judged, so they are no sign
// of progress: a request whose only activity is early chunks still expires,
// and the chunk 0 that follows is then refused as unrequested.
func TestEarlyChunksAreNoProgress(t *testing.T) {
	l := newShuffledLink(t, 1)
	now := time.Unix(0, 0)
	l.fetch.Now = func() time.Time { return now }
	l.fetch.Expiry = time.Minute
	blob := make([]byte, 2*media.ChunkSize)
	h := Hash(blob)
	_ = l.hold.Store.Put(h, blob)
	_, _ = l.fetch.Fetch(h)
	l.hold.NeedBlob("a", h)
	l.hold.Wait()
	l.shuffle.Deliver = func(b []byte) {
		c, _ := media.ParseChunk(b)
		if c.Index != 0 {
			now = now.Add(40 * time.Second)
			_ = l.rx.Handle(b)
		}
	}
	l.shuffle.Flush() // the data chunks only, 80 s
	if exp := l.fetch.Expire(); len(exp) != 1 {
		t.Fatalf("early chunks kept the request alive: expired %v", exp)
	}
}
