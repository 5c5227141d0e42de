package attach

import (
	"context"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
)

// Acts is a holder's memory of the need_blob it acted on (§Attachments: "a
// holder MUST bound how often it acts on one"). Within Window it allows at
// most MaxActs acts per hash per peer, on at most MaxHashesPerPeer
// distinct hashes per peer and MaxHashes in all; entries older than Window
// are forgotten, so memory stays bounded whatever a peer sends. It also
// knows which blobs are crossing to which peer, so that no second transfer
// of them starts. Share one Acts among the holders of every link of a
// space, so that a peer's reconnections and concurrent links count
// together. Its zero value uses the defaults; it is safe for concurrent
// use.
type Acts struct {
	// MaxActs, Window, MaxHashesPerPeer, MaxHashes: zero means
	// DefaultMaxActs, DefaultHolderWindow, DefaultMaxHashesPerPeer,
	// DefaultMaxHashes.
	MaxActs          int
	Window           time.Duration
	MaxHashesPerPeer int
	MaxHashes        int
	Now              func() time.Time

	mu       sync.Mutex
	acts     map[[2]string]*act
	perPeer  map[string]int
	inflight map[[2]string]bool
}

type act struct {
	n     int
	first time.Time
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

func (a *Acts) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// forget drops entries older than the window. The caller holds a.mu.
func (a *Acts) forget(now time.Time) {
	win := orDefault(a.Window, DefaultHolderWindow)
	for k, e := range a.acts {
		if now.Sub(e.first) > win && !a.inflight[k] {
			delete(a.acts, k)
			if a.perPeer[k[0]]--; a.perPeer[k[0]] <= 0 {
				delete(a.perPeer, k[0])
			}
		}
	}
}

// admit records one act on (peer, hash), or reports that a bound, or a
// transfer of it already crossing to that peer, forbids it.
func (a *Acts) admit(k [2]string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.acts == nil {
		a.acts, a.perPeer, a.inflight = map[[2]string]*act{}, map[string]int{}, map[[2]string]bool{}
	}
	e := a.acts[k]
	if e == nil {
		now := a.now()
		full := func() bool {
			return a.perPeer[k[0]] >= orDefault(a.MaxHashesPerPeer, DefaultMaxHashesPerPeer) ||
				len(a.acts) >= orDefault(a.MaxHashes, DefaultMaxHashes)
		}
		if full() {
			a.forget(now)
			if full() {
				return false
			}
		}
		e = &act{first: now}
		a.acts[k] = e
		a.perPeer[k[0]]++
	}
	if e.n >= orDefault(a.MaxActs, DefaultMaxActs) || a.inflight[k] {
		return false
	}
	e.n++
	return true
}

// undo takes back the act admit just recorded.
func (a *Acts) undo(k [2]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.acts[k]; e != nil && e.n > 0 {
		e.n--
	}
}

// crossing records whether the blob is crossing to the peer.
func (a *Acts) crossing(k [2]string, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if on {
		a.inflight[k] = true
	} else {
		delete(a.inflight, k)
	}
}

// Remembered reports how many (peer, hash) pairs are remembered.
func (a *Acts) Remembered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acts)
}

// Holder is the answering side of attachment carriage with one link: it
// acts on need_blob within the bounds of its [Acts], and answers
// blob_gone when it lacks the bytes; a need_blob past a bound is not acted
// on and not answered.
//
// Transfers run on goroutines owned by [Holder.Run]: a need_blob acted on
// while Run is not running waits for it, within a small queue.
type Holder struct {
	Store   Store
	Version uint64
	// Acts bounds the holder; nil means one of its own, with the defaults.
	Acts *Acts
	// Send carries one transfer to peer over the media path and returns
	// when it ends.
	Send func(ctx context.Context, peer string, p media.Purpose, blob []byte) error

	mu      sync.Mutex
	own     *Acts
	jobs    chan job
	pending sync.WaitGroup // queued and running transfers
}

type job struct {
	key  [2]string
	blob []byte
}

// holderQueue bounds the transfers waiting for Run.
const holderQueue = 16

// state returns the holder's Acts and queue, making them on first use.
func (h *Holder) state() (*Acts, chan job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.jobs == nil {
		h.jobs = make(chan job, holderQueue)
	}
	if h.Acts != nil {
		return h.Acts, h.jobs
	}
	if h.own == nil {
		h.own = &Acts{}
	}
	return h.own, h.jobs
}

// NeedBlob implements the exchange's blob handler.
func (h *Holder) NeedBlob(peer, hash string) []frame.Frame {
	k := [2]string{peer, hash}
	acts, jobs := h.state()
	if !acts.admit(k) {
		return nil
	}
	blob, ok := h.Store.Get(hash)
	if !ok {
		return []frame.Frame{{V: h.Version, Kind: frame.KindBlobGone, Hash: hash}}
	}
	acts.crossing(k, true)
	h.pending.Add(1)
	select {
	case jobs <- job{key: k, blob: blob}:
	default: // queue full: not acted on after all
		h.finish(acts, k)
		acts.undo(k)
	}
	return nil
}

// Run carries the transfers NeedBlob starts, each on its own goroutine,
// until ctx ends; it then abandons those still queued and returns once the
// running ones have.
func (h *Holder) Run(ctx context.Context) {
	acts, jobs := h.state()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case j := <-jobs:
					h.finish(acts, j.key)
				default:
					return
				}
			}
		case j := <-jobs:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer h.finish(acts, j.key)
				_ = h.Send(ctx, j.key[0], media.Purpose{P: media.PurposeAttachment, Hash: j.key[1]}, j.blob)
			}()
		}
	}
}

func (h *Holder) finish(acts *Acts, k [2]string) {
	acts.crossing(k, false)
	h.pending.Done()
}

// Wait waits until every transfer NeedBlob started has ended (Run must be
// running, or have run, for them to end).
func (h *Holder) Wait() { h.pending.Wait() }
