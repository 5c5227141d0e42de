package attach

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
)

// link is a requester (a) and a holder (b) joined by the media path.
type link struct {
	fetch  *Fetcher
	hold   *Holder
	rx     *media.Receiver
	tx     *media.Sender
	files  int
	chunks int
	mu     sync.Mutex
	errs   []error
	onSend func() // called before each chunk is delivered
	// shuffle, when set, carries the chunks instead: they arrive, in a
	// random order, when it is flushed.
	shuffle *testnet.Shuffle
}

func newLink(t *testing.T) *link {
	l := &link{fetch: &Fetcher{Store: &MemStore{}}}
	l.rx = &media.Receiver{
		Judge:    l.fetch.Judge,
		Progress: func(p media.Purpose) { l.fetch.Progress(p.Hash) },
		Data: func(p media.Purpose, b []byte) {
			if err := l.fetch.Complete(p.Hash, b); err != nil {
				l.mu.Lock()
				l.errs = append(l.errs, err)
				l.mu.Unlock()
			}
		},
		File: func(string, []byte) { l.files++ },
	}
	l.tx = &media.Sender{Send: func(_ context.Context, b []byte) error {
		l.mu.Lock()
		l.chunks++
		l.mu.Unlock()
		if l.onSend != nil {
			l.onSend()
		}
		if l.shuffle != nil {
			l.shuffle.Send(b)
			return nil
		}
		_ = l.rx.Handle(b)
		return nil
	}}
	l.rx.Refuse = l.tx.Refused
	l.hold = &Holder{Store: &MemStore{}, Send: func(ctx context.Context, _ string, p media.Purpose, b []byte) error {
		return l.tx.SendData(ctx, p, b)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); l.hold.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	return l
}

func TestFetchOverMediaPath(t *testing.T) {
	l := newLink(t)
	blob := make([]byte, 100_000)
	blob[5] = 7
	h := Hash(blob)
	_ = l.hold.Store.Put(h, blob)
	nb, err := l.fetch.Fetch(h)
	if err != nil || nb.Kind != frame.KindNeedBlob || nb.Hash != h {
		t.Fatalf("fetch: %+v %v", nb, err)
	}
	if out := l.hold.NeedBlob("a", nb.Hash); len(out) != 0 {
		t.Fatalf("holder answered with frames %v", out)
	}
	l.hold.Wait()
	got, ok := l.fetch.Store.Get(h)
	if !ok || Hash(got) != h || l.files != 0 || l.fetch.Outstanding(h) {
		t.Fatalf("stored %v, files %d", ok, l.files)
	}
	// Held already: no need_blob.
	if nb, err := l.fetch.Fetch(h); nb != nil || err != nil {
		t.Fatal("fetched a blob already held")
	}
}

// §Attachments: arriving bytes are accepted only if they hash to the request.
func TestHashVerified(t *testing.T) {
	l := newLink(t)
	want := []byte("the real bytes")
	h := Hash(want)
	_ = l.hold.Store.Put(h, []byte("other bytes!!!"))
	_, _ = l.fetch.Fetch(h)
	l.hold.NeedBlob("a", h)
	l.hold.Wait()
	if _, ok := l.fetch.Store.Get(h); ok {
		t.Fatal("bytes that do not match their address were stored")
	}
	if len(l.errs) != 1 || !errors.Is(l.errs[0], ErrHashMismatch) {
		t.Fatalf("errs %v", l.errs)
	}
	// docs/decisions/datasync-hash-mismatch.md: the request stays open.
	if !l.fetch.Outstanding(h) {
		t.Fatal("a mismatch ended the request")
	}
}

// §Attachments: a holder without the bytes answers one blob_gone; the
// requester's request ends; blob_gone is answered with nothing.
func TestBlobGone(t *testing.T) {
	l := newLink(t)
	h := Hash([]byte("nobody has me"))
	_, _ = l.fetch.Fetch(h)
	out := l.hold.NeedBlob("a", h)
	if len(out) != 1 || out[0].Kind != frame.KindBlobGone || out[0].Hash != h {
		t.Fatalf("answer %v", out)
	}
	c := &Carriage{Fetcher: l.fetch, Holder: l.hold}
	c.BlobGone("b", h)
	if !errors.Is(l.fetch.Status(h), ErrGone) || l.fetch.Outstanding(h) {
		t.Fatal("blob_gone did not end the request")
	}
}

// §Attachments: the requester bounds its repeats, the holder its actions.
func TestRepeatBounds(t *testing.T) {
	l := newLink(t)
	h := Hash([]byte("x"))
	for i := range DefaultMaxAsks {
		if nb, err := l.fetch.Fetch(h); nb == nil || err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	if _, err := l.fetch.Fetch(h); !errors.Is(err, ErrRepeatBound) {
		t.Fatalf("ask past the bound: %v", err)
	}
	blob := []byte("held bytes")
	hb := Hash(blob)
	_ = l.hold.Store.Put(hb, blob)
	for range 10 {
		l.hold.NeedBlob("a", hb)
		l.hold.Wait()
	}
	gone := 0
	for range 10 {
		gone += len(l.hold.NeedBlob("a", h))
	}
	// No request is outstanding on a's side, so each transfer is refused
	// at chunk 0: one chunk per action.
	if l.chunks != DefaultMaxActs || gone != DefaultMaxActs {
		t.Fatalf("holder acted: %d transfers, %d blob_gone (want %d each)", l.chunks, gone, DefaultMaxActs)
	}
}

// §Attachments: no second transfer of bytes already crossing to that peer.
func TestNoDuplicateTransfer(t *testing.T) {
	l := newLink(t)
	blob := []byte("slow bytes")
	h := Hash(blob)
	_ = l.hold.Store.Put(h, blob)
	_, _ = l.fetch.Fetch(h)
	gate := make(chan struct{})
	l.onSend = func() { <-gate }
	l.hold.NeedBlob("a", h)
	l.hold.NeedBlob("a", h) // arrives again while the first is in flight
	close(gate)
	l.hold.Wait()
	if l.chunks != 2 { // chunk 0 and one data chunk: one transfer
		t.Fatalf("%d chunks sent", l.chunks)
	}
}

// §Attachments: unrequested bytes are refused as soon as identified: after
// chunk 0, nothing more is sent and nothing is stored.
func TestUnrequestedRefused(t *testing.T) {
	l := newLink(t)
	blob := make([]byte, 5*media.ChunkSize)
	h := Hash(blob)
	err := l.tx.SendData(context.Background(), media.Purpose{P: media.PurposeAttachment, Hash: h}, blob)
	if !errors.Is(err, media.ErrRefusedByPeer) || l.chunks != 1 || l.rx.Released+l.rx.Dropped != 0 {
		t.Fatalf("err %v, %d chunks, %d bytes buffered", err, l.chunks, l.rx.Released+l.rx.Dropped)
	}
	if _, ok := l.fetch.Store.Get(h); ok {
		t.Fatal("unrequested bytes stored")
	}
}

// §Attachments: expiry is timed from the last sign of progress, so a large
// blob that takes longer than the expiry to cross still lands; a request
// with no sign of progress expires.
func TestExpiryFromLastProgress(t *testing.T) {
	l := newLink(t)
	now := time.Unix(0, 0)
	l.fetch.Now = func() time.Time { return now }
	l.fetch.Expiry = time.Minute
	blob := make([]byte, 10*media.ChunkSize)
	blob[0] = 1
	h := Hash(blob)
	_ = l.hold.Store.Put(h, blob)
	_, _ = l.fetch.Fetch(h)
	l.onSend = func() {
		now = now.Add(40 * time.Second) // each chunk takes 40 s: 7+ minutes total
		if exp := l.fetch.Expire(); len(exp) != 0 {
			t.Errorf("request expired mid-carriage at %v", now)
		}
	}
	l.hold.NeedBlob("a", h)
	l.hold.Wait()
	if _, ok := l.fetch.Store.Get(h); !ok {
		t.Fatal("slow blob did not land")
	}
	idle := Hash([]byte("idle"))
	_, _ = l.fetch.Fetch(idle)
	now = now.Add(61 * time.Second)
	if exp := l.fetch.Expire(); len(exp) != 1 || exp[0] != idle {
		t.Fatalf("idle request not expired: %v", exp)
	}
}

// §Attachments: in a group space, fetching reports that it cannot be done
// instead of leaving a request outstanding.
func TestGroupFetchReported(t *testing.T) {
	f := &Fetcher{Store: &MemStore{}, Group: true}
	h := Hash([]byte("x"))
	if nb, err := f.Fetch(h); nb != nil || !errors.Is(err, ErrGroupFetch) || f.Outstanding(h) {
		t.Fatalf("group fetch: %v %v", nb, err)
	}
}
