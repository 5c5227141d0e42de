package exchange

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
)

// PeerID names a peer by its authenticated identity (for a 1:1 session, the
// peer's static key). It is never read from a frame.
type PeerID string

// Defaults of [Space] and [Session] bounds.
const (
	// MaxPeerDocs is the most documents a space creates on peers' say-so
	// (§Bounds: "A space accepts at most 1024 documents on a peer's say-so").
	MaxPeerDocs = 1024
	// OfferDocs is the most documents one offer frame names; a space of
	// this many or fewer never splits its offer (§Bounds).
	OfferDocs = 128
)

// Reasons a document cannot replicate, carried by a [Report]. A document
// over the frame budget is reported with frame.ErrOverBudget.
var (
	ErrCeiling       = errors.New("datasync/exchange: peer-named document ceiling reached")
	ErrTooLarge      = errors.New("datasync/exchange: document does not fit a frame and cannot take the media path")
	ErrUnreadable    = errors.New("datasync/exchange: peer sent bytes the engine cannot read")
	ErrRefused       = errors.New("datasync/exchange: snapshot refused: replicas forked below a compaction")
	ErrEngine        = errors.New("datasync/exchange: local engine failure")
	ErrOfferTooLarge = errors.New("datasync/exchange: document version does not fit an offer frame")
)

// Report tells the application that a document is not replicating with a
// peer (§Reporting: "a line in a log is not a report"), or, with Doc
// empty, that a frame from the peer naming no single document was dropped.
type Report struct {
	Peer PeerID
	Doc  string
	Err  error
}

func (r Report) String() string {
	if r.Doc == "" {
		return fmt.Sprintf("frame from %s dropped: %v", r.Peer, r.Err)
	}
	return fmt.Sprintf("document %q with %s: %v", r.Doc, r.Peer, r.Err)
}

// Space is one space's documents and the state shared by all of its
// sessions: the engine, the documents peers have named into it, and the
// quarantine ledger of blobs in flight to the engine.
type Space struct {
	Engine engine.Engine
	// Report receives every report of every session; it must not block.
	Report func(Report)
	// MaxPeerDocs overrides [MaxPeerDocs] when positive.
	MaxPeerDocs int
	// Ledger, when set, records every remote blob in flight to the engine
	// and refuses (and reports) one an earlier process died importing
	// (§Delivery, package datasync/quarantine). Nil imports unguarded.
	Ledger quarantine.Ledger

	mu        sync.Mutex
	peerNamed map[string]bool
	refused   map[string]bool // quarantined digests already reported
}

// admit reserves room for doc, one more peer-named document. A document
// already counted (created by a peer, then dropped locally) costs nothing.
func (sp *Space) admit(doc string) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.peerNamed[doc] {
		return true
	}
	limit := sp.MaxPeerDocs
	if limit <= 0 {
		limit = MaxPeerDocs
	}
	if len(sp.peerNamed) >= limit {
		return false
	}
	if sp.peerNamed == nil {
		sp.peerNamed = map[string]bool{}
	}
	sp.peerNamed[doc] = true
	return true
}

func (sp *Space) release(doc string) {
	sp.mu.Lock()
	delete(sp.peerNamed, doc)
	sp.mu.Unlock()
}

// PeerNamed returns how many documents peers have created in the space.
func (sp *Space) PeerNamed() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.peerNamed)
}

// PeerNamedDocs returns the documents peers have created in the space,
// sorted: the state to save so the ceiling survives a restart.
func (sp *Space) PeerNamedDocs() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Sorted(maps.Keys(sp.peerNamed))
}

// RestorePeerNamed adds docs, as saved from [Space.PeerNamedDocs] by an
// earlier process, to the documents peers have created. Call it before any
// session uses the space. Restored documents count against the ceiling
// even past it: they are already stored.
func (sp *Space) RestorePeerNamed(docs []string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.peerNamed == nil {
		sp.peerNamed = map[string]bool{}
	}
	for _, d := range docs {
		sp.peerNamed[d] = true
	}
}

func (sp *Space) report(r Report) {
	if sp.Report != nil {
		sp.Report(r)
	}
}

// Out is one thing to send. Exactly one of Frame and Snapshot is set.
type Out struct {
	// To is the member a group frame is addressed to; empty means the
	// whole roster. In a 1:1 session it is always the peer.
	To PeerID
	// Frame is a frame to send.
	Frame *frame.Frame
	// Snapshot is a whole document for the media path (entry 3, 1:1).
	Snapshot *SnapshotTransfer
}

// SnapshotTransfer is an oversized document for the media path
// (§Documents too large for a frame).
type SnapshotTransfer struct {
	Doc  string
	Blob []byte
}

// BlobHandler answers need_blob and blob_gone (§Attachments). It is
// optional; without one those frames are consumed with no answer.
type BlobHandler interface {
	// NeedBlob answers a need_blob: it may start a transfer over the
	// media path, return one blob_gone, or return nothing.
	NeedBlob(peer string, hash string) []frame.Frame
	// BlobGone takes a blob_gone; it is answered with nothing.
	BlobGone(peer string, hash string)
}

// Session is the exchange with one peer over one space. Its methods are safe
// for concurrent use.
type Session struct {
	space *Space
	peer  PeerID
	caps  frame.Caps
	group *Group
	// MaxRecord is the largest document the media path may carry; zero
	// disables the media path for documents.
	maxRecord int
	blobs     BlobHandler

	mu        sync.Mutex
	unflushed map[string][]byte    // doc -> version before its first unsent local edit
	applied   atomic.Int64         // the peer's changes and snapshots this session applied
	dropped   map[string]time.Time // kind of unreadable frame -> last reported
}

// Applied returns how many of the peer's changes and snapshots (deltas,
// snaps and media-path snapshots) this session has applied: the
// "documents received" a progress line shows.
func (s *Session) Applied() int { return int(s.applied.Load()) }

// Options configures a [Session].
type Options struct {
	// Caps are the data_versions entries the peer advertised.
	Caps frame.Caps
	// Group, when set, makes this a group-scope session with member peer.
	Group *Group
	// MaxRecordBytes enables the media path for oversized documents up to
	// this size (entry 3, 1:1 only).
	MaxRecordBytes int
	// Blobs answers attachment frames.
	Blobs BlobHandler
}

// NewSession returns the exchange with peer over sp.
func NewSession(sp *Space, peer PeerID, o Options) *Session {
	return &Session{space: sp, peer: peer, caps: slices.Clone(o.Caps), group: o.Group,
		maxRecord: o.MaxRecordBytes, blobs: o.Blobs, unflushed: map[string][]byte{}, dropped: map[string]time.Time{}}
}

// Peer returns the peer this session exchanges with.
func (s *Session) Peer() PeerID { return s.peer }

func (s *Session) enc() engine.Encoding { return s.space.Engine.Encoding() }

func (s *Session) report(doc string, err error) {
	s.space.report(Report{Peer: s.peer, Doc: doc, Err: err})
}

// DroppedEvery is how often a session reports dropped frames of one kind
// that name no document: a peer sending a stream of broken frames is
// reported once a minute, not once a frame.
const DroppedEvery = time.Minute

// reportDropped reports a frame dropped because it could not be read:
// always when it names a document, else once per kind of failure per
// DroppedEvery.
func (s *Session) reportDropped(err error) {
	var ob *frame.OverBudgetError
	if errors.As(err, &ob) && ob.Doc != "" {
		s.report(ob.Doc, err)
		return
	}
	kind := "malformed"
	switch {
	case ob != nil && ob.Frame:
		kind = "frame bound"
	case ob != nil:
		kind = "offer budget"
	case errors.Is(err, frame.ErrUnknownKind):
		kind = "unknown kind"
	case errors.Is(err, frame.ErrNotFrame):
		kind = "not a frame"
	}
	s.mu.Lock()
	now := time.Now()
	last, seen := s.dropped[kind]
	if !seen || now.Sub(last) >= DroppedEvery {
		s.dropped[kind] = now
		seen = false
	}
	s.mu.Unlock()
	if !seen {
		s.report("", err)
	}
}

// to addresses f to the peer.
func (s *Session) to(f frame.Frame) Out {
	f.V = s.enc().V
	return Out{To: s.peer, Frame: &f}
}
