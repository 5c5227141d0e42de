// Package engine defines the document engine interface the data-sync-v1
// exchange drives, and KV, Ferry's default pure-Go engine for key–value
// documents.
//
// The interface is engine-neutral: versions, changes and snapshots are opaque
// bytes, and no engine type appears in frames or in the exchange's API. An
// engine names its encoding with an [Encoding], which decides the frame
// version v its frames carry and the data_versions entry a peer must have
// advertised before it is sent one (docs/decisions/datasync-encoding.md).
package engine

import "errors"

// Encoding names a document encoding on the wire.
type Encoding struct {
	// Name is a human-readable label, e.g. "ferry-kv/1".
	Name string
	// V is the frame version that carries this encoding (§Frames: "v covers
	// the document encoding as well as the frame schema").
	V uint64
	// Entry is the data_versions entry a peer advertises to say it reads
	// this encoding; no frame in it is sent to a peer without it.
	Entry uint64
}

// Outcome is what an import did (§Termination lists the answer to each).
type Outcome int

// Import outcomes.
const (
	// Applied: the change or snapshot was merged.
	Applied Outcome = iota
	// AlreadyHeld: everything it carries was already held.
	AlreadyHeld
	// MissingPredecessor: it builds on changes not held yet; the engine
	// holds it and applies it once they arrive.
	MissingPredecessor
	// NeedsTrimmedHistory: merging it needs history this replica compacted
	// away; only a snapshot can close the gap.
	NeedsTrimmedHistory
	// Unreadable: the bytes are not a change or snapshot of this encoding.
	Unreadable
	// Refused: a snapshot that cannot be merged because the replicas forked
	// below a point this replica compacted away (ADR 0019).
	Refused
	// Failed: a local failure (storage) kept the change from being merged;
	// nothing changed, and the error says why.
	Failed
)

var outcomeNames = [...]string{"applied", "already held", "missing predecessor", "needs trimmed history", "unreadable", "refused", "failed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown outcome"
}

// Errors an engine returns.
var (
	// ErrNoDocument means the document is not held.
	ErrNoDocument = errors.New("datasync/engine: no such document")
	// ErrTrimmed means the changes since the given version were compacted
	// away; send a snapshot instead.
	ErrTrimmed = errors.New("datasync/engine: history trimmed by compaction")
	// ErrExists means Create named a document already held.
	ErrExists = errors.New("datasync/engine: document exists")
	// ErrStorage means a change could not be persisted; the document is
	// as it was before the change.
	ErrStorage = errors.New("datasync/engine: storage failed")
)

// Engine holds the documents of one space. Implementations are safe for
// concurrent use. Every method that takes bytes from a peer treats them as
// untrusted: bad bytes give Unreadable and change no state.
type Engine interface {
	// Encoding names the engine's document encoding.
	Encoding() Encoding
	// Docs lists the documents held, sorted.
	Docs() []string
	// Has reports whether doc is held.
	Has(doc string) bool
	// Create makes an empty document (ErrExists if held).
	Create(doc string) error
	// Version returns the document's version as it is offered to a peer.
	Version(doc string) ([]byte, error)
	// Behind reports whether a peer at version peer lacks changes held
	// here. An unreadable peer version counts as the empty version.
	Behind(doc string, peer []byte) (bool, error)
	// Changes returns the changes a peer at version peer lacks, or
	// ErrTrimmed when compaction removed what they would be built from.
	Changes(doc string, peer []byte) ([]byte, error)
	// Snapshot returns the whole document.
	Snapshot(doc string) ([]byte, error)
	// Import merges a change from a peer, creating the document if needed.
	// The error is non-nil only for Unreadable and for local failures.
	Import(doc string, change []byte) (Outcome, error)
	// ImportSnapshot merges a whole document from a peer.
	ImportSnapshot(doc string, snap []byte) (Outcome, error)
	// Compact trims the document's history. After it, a peer whose
	// version predates the compaction is sent a snapshot.
	Compact(doc string) error
}

// Flusher is implemented by an engine that holds local edits pending until
// they are flushed to storage (§Termination: "A receiver MAY also emit a
// delta of its own local changes when a frame arrives for a document it
// holds unflushed edits to", and the version offer after a recovered flush
// failure). docs/decisions/datasync-flush-offer.md.
type Flusher interface {
	// Pending reports whether doc holds local edits not yet flushed.
	Pending(doc string) bool
	// Flush commits doc's pending local edits and persists them, and
	// returns the version doc had before them (what the local commit is
	// computed from). When storage fails the edits stay pending and the
	// error wraps ErrStorage. An import that applies while edits are
	// pending folds them into the imported change and persists both, or
	// fails (outcome Failed) and leaves them pending.
	Flush(doc string) (before []byte, err error)
}
