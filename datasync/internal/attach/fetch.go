package attach

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
)

// Store holds blob bytes by address. Blobs fetched for documents live here
// and are never surfaced to the application as received files.
type Store interface {
	Get(hash string) ([]byte, bool)
	Put(hash string, blob []byte) error
}

// MemStore is an in-memory [Store].
type MemStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Get implements [Store].
func (s *MemStore) Get(hash string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[hash]
	return b, ok
}

// Put implements [Store].
func (s *MemStore) Put(hash string, blob []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[hash] = blob
	return nil
}

// Errors of the fetching side.
var (
	// ErrGroupFetch: attachment carriage is 1:1 in this version; a group
	// member cannot fetch bytes from another (§Attachments).
	ErrGroupFetch = errors.New("datasync/attach: attachments cannot be fetched in a group space")
	// ErrRepeatBound: need_blob for this hash was already sent as often
	// as the requester allows.
	ErrRepeatBound = errors.New("datasync/attach: need_blob repeat bound reached")
	// ErrHashMismatch: arriving bytes do not hash to the address asked for.
	ErrHashMismatch = errors.New("datasync/attach: bytes do not match their address")
	// ErrGone: the holder answered blob_gone.
	ErrGone = errors.New("datasync/attach: holder does not have the blob")
)

// Defaults of [Fetcher] and [Holder] bounds.
const (
	DefaultMaxAsks = 3
	DefaultMaxActs = 3
	DefaultExpiry  = 2 * time.Minute
	// DefaultHolderWindow is how long a holder remembers a hash it acted
	// on; DefaultMaxHashesPerPeer and DefaultMaxHashes bound how many
	// distinct hashes it acts on within the window, per peer and in all.
	DefaultHolderWindow     = 10 * time.Minute
	DefaultMaxHashesPerPeer = 64
	DefaultMaxHashes        = 1024
)

// Fetcher is the requesting side of attachment carriage with one peer.
type Fetcher struct {
	Store   Store
	Group   bool          // a group space: fetching reports ErrGroupFetch
	MaxAsks int           // need_blob repeats per hash; zero means DefaultMaxAsks
	Expiry  time.Duration // from the last sign of progress; zero means DefaultExpiry
	Now     func() time.Time
	// Version is the frame version of need_blob frames (the session's).
	Version uint64

	mu   sync.Mutex
	reqs map[string]*request
}

type request struct {
	asks int
	last time.Time
	err  error // ErrGone once the holder said so
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Fetch returns the need_blob frame asking for hash. It returns an error
// instead in a group space (ErrGroupFetch, reported rather than left
// outstanding), once the repeat bound is reached, or for an invalid hash;
// and no frame when the blob is already held.
func (f *Fetcher) Fetch(hash string) (*frame.Frame, error) {
	if f.Group {
		return nil, ErrGroupFetch
	}
	if !frame.ValidHash(hash) {
		return nil, fmt.Errorf("%w: hash", ErrInvalidRef)
	}
	if _, ok := f.Store.Get(hash); ok {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reqs == nil {
		f.reqs = map[string]*request{}
	}
	r := f.reqs[hash]
	if r == nil {
		r = &request{}
		f.reqs[hash] = r
	}
	max := f.MaxAsks
	if max <= 0 {
		max = DefaultMaxAsks
	}
	if r.asks >= max {
		return nil, ErrRepeatBound
	}
	r.asks++
	r.last, r.err = f.now(), nil
	return &frame.Frame{V: f.Version, Kind: frame.KindNeedBlob, Hash: hash}, nil
}

// Outstanding reports whether a request for hash admits arriving bytes.
func (f *Fetcher) Outstanding(hash string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs[hash]
	return r != nil && r.err == nil
}

// Judge is the media receiver's check at chunk 0 for attachments: bytes are
// admitted only against an outstanding request (§Attachments: "A receiver
// MUST discard blob bytes it has no outstanding request for").
func (f *Fetcher) Judge(p media.Purpose, total uint64) error {
	if p.P != media.PurposeAttachment {
		return fmt.Errorf("datasync/attach: purpose %q is not an attachment", p.P)
	}
	if !f.Outstanding(p.Hash) {
		return media.ErrUnrequested
	}
	f.Progress(p.Hash)
	return nil
}

// Progress records a sign that an answer is coming; expiry is timed from it.
func (f *Fetcher) Progress(hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.reqs[hash]; r != nil {
		r.last = f.now()
	}
}

// Complete takes a finished transfer: bytes that hash to the request are
// stored and end it; others are discarded (ErrHashMismatch) and the
// request stays (docs/decisions/datasync-hash-mismatch.md). Bytes without
// a request are discarded (ErrUnrequested).
func (f *Fetcher) Complete(hash string, blob []byte) error {
	if !f.Outstanding(hash) {
		return media.ErrUnrequested
	}
	if Hash(blob) != hash {
		return ErrHashMismatch
	}
	if err := f.Store.Put(hash, blob); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.reqs, hash)
	f.mu.Unlock()
	return nil
}

// Gone takes a blob_gone: the request ends with ErrGone.
func (f *Fetcher) Gone(hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.reqs[hash]; r != nil {
		r.err = ErrGone
	}
}

// Status returns nil while a request is outstanding or done, and the reason
// it ended otherwise.
func (f *Fetcher) Status(hash string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.reqs[hash]; r != nil {
		return r.err
	}
	return nil
}

// Expire drops requests with no sign of progress for Expiry and returns
// their hashes. A request whose answer is arriving keeps being refreshed by
// Progress, so it does not expire mid-carriage.
func (f *Fetcher) Expire() []string {
	exp := f.Expiry
	if exp <= 0 {
		exp = DefaultExpiry
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for h, r := range f.reqs {
		if r.err == nil && f.now().Sub(r.last) > exp {
			delete(f.reqs, h)
			out = append(out, h)
		}
	}
	return out
}

// Carriage is both sides of attachment carriage with one peer, in the shape
// of the exchange's blob handler: need_blob goes to the Holder, blob_gone
// to the Fetcher.
type Carriage struct {
	Fetcher *Fetcher
	Holder  *Holder
}

// NeedBlob answers a peer's need_blob.
func (c *Carriage) NeedBlob(peer, hash string) []frame.Frame { return c.Holder.NeedBlob(peer, hash) }

// BlobGone ends the request for hash: the peer does not have it.
func (c *Carriage) BlobGone(peer, hash string) { c.Fetcher.Gone(hash) }
