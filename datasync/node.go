package datasync

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
	"github.com/ferry-sync/ferry/datasync/internal/replica"
)

// Options tune a Node; the zero value is usable.
type Options struct {
	// Interval is how often a link offers its versions again (anti-entropy);
	// zero means DefaultInterval.
	Interval time.Duration
	// MaxLinks bounds the links Serve runs at once; zero means
	// DefaultMaxLinks. A connection over the bound is closed at once.
	MaxLinks int
	// Report receives what a link could not do — a document it could not
	// replicate, a connection Serve refused — as *Error values. It must not
	// block. Nil drops them.
	Report func(*Error)
	// Events receives each link's life: connected, progress (at most once a
	// second, when something moved), ended. It must not block. Nil drops
	// them.
	Events func(Event)
	// Actor is saved with the state: the actor (replica) name the app gave
	// its engine, which must stay the same across runs. SavedActor reads
	// it back before the engine is made.
	Actor string
}

// The defaults of Options.
const (
	DefaultInterval = 2 * time.Second
	DefaultMaxLinks = 8
)

// handshakeTimeout bounds a handshake and the capability exchange after it,
// so a silent peer never holds a slot.
const handshakeTimeout = 10 * time.Second

// Node is one replica of a 1:1 space: the documents an engine holds, kept
// in step with peers over encrypted links. It owns the space's state (a
// state file with the document snapshots and the documents peers named,
// and beside it the quarantine of blobs in flight to the engine) and the
// blob store the links share.
// Read documents through the engine; write them with Update. A Node is safe
// for concurrent use.
type Node struct {
	state string
	eng   engine.Engine
	key   Key
	opts  Options
	space *exchange.Space
	blobs attach.Store
	acts  attach.Acts

	mu    sync.Mutex
	links map[*replica.Link]struct{}
}

// stateFile is the layout of the state file.
type stateFile struct {
	Docs      map[string]string `json:"docs"`
	PeerNamed []string          `json:"peer_named"`
	Actor     string            `json:"actor,omitempty"`
}

// Open opens the node whose state is kept in the file state (its directory
// must exist; the file is made by Save) over eng, known to peers by key.
// The documents saved there are imported into eng. Beside it,
// state+".quarantine" records blobs in flight to the engine: one that
// ended an earlier process is refused from now on
// (docs/decisions/datasync-quarantine.md). An empty state keeps nothing
// across runs.
func Open(state string, eng engine.Engine, key Key, o Options) (*Node, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxLinks <= 0 {
		o.MaxLinks = DefaultMaxLinks
	}
	n := &Node{state: state, eng: eng, key: key, opts: o, blobs: &attach.MemStore{}, links: map[*replica.Link]struct{}{}}
	n.space = &exchange.Space{Engine: eng, Report: func(r exchange.Report) {
		n.report(translate(r.Err, r.Doc))
	}}
	if state == "" {
		return n, nil
	}
	st, err := readState(state)
	if err != nil {
		return nil, err
	}
	ledger, err := quarantine.OpenDir(state + ".quarantine")
	if err != nil {
		return nil, &Error{Code: CodeState, Err: err}
	}
	n.space.Ledger = ledger
	if err := n.restore(st); err != nil {
		return nil, err
	}
	return n, nil
}

// SavedActor is the Options.Actor saved in the state file, "" when there
// is none (no file yet, or none was given).
func SavedActor(state string) (string, error) {
	st, err := readState(state)
	return st.Actor, err
}

func (n *Node) report(e *Error) {
	if n.opts.Report != nil && e != nil {
		n.opts.Report(e)
	}
}

// readState reads a state file; a missing one is an empty state, one in
// another layout an error (never taken for an empty state).
func readState(path string) (stateFile, error) {
	var st stateFile
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, &Error{Code: CodeState, Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return st, &Error{Code: CodeState, Err: fmt.Errorf("not a state file: %w", err)}
	}
	return st, nil
}

func (n *Node) restore(st stateFile) error {
	for doc, s := range st.Docs {
		snap, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return &Error{Code: CodeState, Doc: doc, Err: err}
		}
		if out, err := n.eng.ImportSnapshot(doc, snap); err != nil {
			return &Error{Code: CodeState, Doc: doc, Err: fmt.Errorf("%v: %w", out, err)}
		}
	}
	n.space.RestorePeerNamed(st.PeerNamed)
	return nil
}

// Public is the node's public key, the one its peers allow.
func (n *Node) Public() PublicKey { return n.key.Public() }

// Update runs edit on the engine and sends what it changed in doc to every
// connected peer; a peer connected later gets it from the link's offer.
// edit may create doc.
func (n *Node) Update(ctx context.Context, doc string, edit func(engine.Engine) error) error {
	before, err := n.eng.Version(doc)
	if errors.Is(err, engine.ErrNoDocument) {
		before, err = nil, nil
	}
	if err != nil {
		return translate(err, doc)
	}
	if err := edit(n.eng); err != nil {
		return err
	}
	if f, ok := n.eng.(engine.Flusher); ok && f.Pending(doc) {
		b, err := f.Flush(doc)
		if err != nil {
			return translate(err, doc)
		}
		if b != nil {
			before = b
		}
	}
	n.mu.Lock()
	links := make([]*replica.Link, 0, len(n.links))
	for l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	var first error
	for _, l := range links {
		if err := l.Commit(ctx, doc, before); err != nil && first == nil {
			first = translate(err, doc)
		}
	}
	return first
}

// Save writes the documents and the names peers gave to the state file,
// atomically (a crash leaves the previous state). Without a state file it
// does nothing.
func (n *Node) Save() error {
	if n.state == "" {
		return nil
	}
	st := stateFile{Docs: map[string]string{}, PeerNamed: n.space.PeerNamedDocs(), Actor: n.opts.Actor}
	for _, d := range n.eng.Docs() {
		snap, err := n.eng.Snapshot(d)
		if err != nil {
			return translate(err, d)
		}
		st.Docs[d] = base64.StdEncoding.EncodeToString(snap)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return &Error{Code: CodeInternal, Err: err}
	}
	tmp := n.state + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return &Error{Code: CodeState, Err: err}
	}
	if err := os.Rename(tmp, n.state); err != nil {
		return &Error{Code: CodeState, Err: err}
	}
	return nil
}

// Close saves the node. Links end when the contexts given to Serve and
// Connect end; Close does not wait for them.
func (n *Node) Close() error { return n.Save() }
