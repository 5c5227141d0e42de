package attach

import (
	"context"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/datasync/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
)

// Holder is the answering side of attachment carriage (§Attachments: "a
// holder MUST bound how often it acts on one"). Within Window it acts on
// need_blob at most MaxActs times per hash per peer, on at most
// MaxHashesPerPeer distinct hashes per peer and MaxHashes in all; a
// need_blob past a bound is not acted on and not answered. Entries older
// than Window are forgotten, so memory stays bounded whatever a peer
// sends. It never starts a second transfer of bytes already in flight to
// that peer, and answers blob_gone when it lacks the bytes.
//
// Transfers run on goroutines owned by [Holder.Run]: a need_blob acted on
// while Run is not running waits for it, within a small queue.
type Holder struct {
	Store   Store
	MaxActs int // zero means DefaultMaxActs
	// Window, MaxHashesPerPeer and MaxHashes: zero means
	// DefaultHolderWindow, DefaultMaxHashesPerPeer, DefaultMaxHashes.
	Window           time.Duration
	MaxHashesPerPeer int
	MaxHashes        int
	Now              func() time.Time
	Version          uint64
	// Send carries one transfer to peer over the media path and returns
	// when it ends.
	Send func(ctx context.Context, peer string, p media.Purpose, blob []byte) error

	mu       sync.Mutex
	acts     map[[2]string]*act
	perPeer  map[string]int
	inflight map[[2]string]bool
	jobs     chan job
	pending  sync.WaitGroup // queued and running transfers
}

type act struct {
	n     int
	first time.Time
}

type job struct {
	key  [2]string
	blob []byte
}

// holderQueue bounds the transfers waiting for Run.
const holderQueue = 16

func (h *Holder) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

func (h *Holder) init() {
	if h.acts == nil {
		h.acts, h.perPeer, h.inflight = map[[2]string]*act{}, map[string]int{}, map[[2]string]bool{}
		h.jobs = make(chan job, holderQueue)
	}
}

// forget drops entries older than the window. The caller holds h.mu.
func (h *Holder) forget(now time.Time) {
	win := orDefault(h.Window, DefaultHolderWindow)
	for k, a := range h.acts {
		if now.Sub(a.first) > win && !h.inflight[k] {
			delete(h.acts, k)
			if h.perPeer[k[0]]--; h.perPeer[k[0]] <= 0 {
				delete(h.perPeer, k[0])
			}
		}
	}
}

// admit records one act on (peer, hash), or reports that a bound forbids
// it. The caller holds h.mu.
func (h *Holder) admit(k [2]string) bool {
	a := h.acts[k]
	if a == nil {
		now := h.now()
		full := func() bool {
			return h.perPeer[k[0]] >= orDefault(h.MaxHashesPerPeer, DefaultMaxHashesPerPeer) ||
				len(h.acts) >= orDefault(h.MaxHashes, DefaultMaxHashes)
		}
		if full() {
			h.forget(now)
			if full() {
				return false
			}
		}
		a = &act{first: now}
		h.acts[k] = a
		h.perPeer[k[0]]++
	}
	if a.n >= orDefault(h.MaxActs, DefaultMaxActs) || h.inflight[k] {
		return false
	}
	a.n++
	return true
}

// NeedBlob implements the exchange's blob handler.
func (h *Holder) NeedBlob(peer, hash string) []frame.Frame {
	k := [2]string{peer, hash}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	if !h.admit(k) {
		return nil
	}
	blob, ok := h.Store.Get(hash)
	if !ok {
		return []frame.Frame{{V: h.Version, Kind: frame.KindBlobGone, Hash: hash}}
	}
	h.pending.Add(1)
	select {
	case h.jobs <- job{key: k, blob: blob}:
		h.inflight[k] = true
	default: // queue full: not acted on after all
		h.pending.Done()
		h.acts[k].n--
	}
	return nil
}

// Run carries the transfers NeedBlob starts, each on its own goroutine,
// until ctx ends; it then abandons those still queued and returns once the
// running ones have.
func (h *Holder) Run(ctx context.Context) {
	h.mu.Lock()
	h.init()
	jobs := h.jobs
	h.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case j := <-jobs:
					h.finish(j.key)
				default:
					return
				}
			}
		case j := <-jobs:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer h.finish(j.key)
				_ = h.Send(ctx, j.key[0], media.Purpose{P: media.PurposeAttachment, Hash: j.key[1]}, j.blob)
			}()
		}
	}
}

func (h *Holder) finish(k [2]string) {
	h.mu.Lock()
	delete(h.inflight, k)
	h.mu.Unlock()
	h.pending.Done()
}

// Wait waits until every transfer NeedBlob started has ended (Run must be
// running, or have run, for them to end).
func (h *Holder) Wait() { h.pending.Wait() }

// Remembered reports how many (peer, hash) pairs the holder remembers.
func (h *Holder) Remembered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acts)
}
