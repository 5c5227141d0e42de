// Package loro is a document engine for data-sync-v1 whose documents are
// Loro documents, byte-compatible with the reference implementation and
// every app built on loro-crdt: versions are Loro's encoded version
// vectors, changes are export({mode: "update", from}), snapshots are Loro
// snapshots, and compaction is a shallow snapshot.
//
// There is no Loro in Go; the engine runs Loro's own WebAssembly build (npm
// loro-crdt 1.13.9, embedded) inside wazero, pure Go. One wasm instance
// serves an engine's documents behind the engine's mutex, its memory is
// capped, and a trap (a Rust panic, the memory cap, the call deadline)
// discards the instance and rebuilds every document from the bytes the
// engine keeps for that purpose. docs/decisions/datasync-loro.md.
package loro

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/loro/internal/lorowasm"
)

// Encoding is the reference encoding: frame version 1, data_versions
// entry 1 (docs/decisions/datasync-encoding.md).
var Encoding = engine.Encoding{Name: "loro", V: 1, Entry: 1}

// Bounds on what an engine takes from a peer.
const (
	// DefaultMaxBlobBytes bounds one change or snapshot from a peer.
	DefaultMaxBlobBytes = 32 << 20
	// MaxPending bounds the imports a document holds behind a missing
	// predecessor; past it a further one is not imported (the targeted
	// offer its arrival drew recovers it), as engine.MaxPending does for KV.
	MaxPending = engine.MaxPending
	// foldBytes is the least a document's kept changes grow to before
	// they are folded into a fresh snapshot (they fold once they also
	// outgrow the snapshot, so rebuilding reads at most twice its size and
	// folding costs amortized O(1) per byte).
	foldBytes = 64 << 10
)

// Runtime is the compiled Loro module; engines made from one share it.
type Runtime struct{ rt *lorowasm.Runtime }

// RuntimeConfig configures a Runtime (see lorowasm.Config).
type RuntimeConfig = lorowasm.Config

// NewRuntime compiles the embedded module.
func NewRuntime(ctx context.Context, cfg RuntimeConfig) (*Runtime, error) {
	rt, err := lorowasm.NewRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Runtime{rt: rt}, nil
}

// Close releases the runtime and every engine made from it.
func (r *Runtime) Close(ctx context.Context) error { return r.rt.Close(ctx) }

// Options configure an Engine.
type Options struct {
	// Peer is the Loro peer id local changes carry; 0 picks a random one.
	// It must be unique to this replica.
	Peer uint64
	// MaxBlobBytes bounds a change or snapshot from a peer (0: default).
	MaxBlobBytes int
	// Persist, when set, is called with a document's snapshot after every
	// change to it (local edit, applied import, compaction); an error
	// rolls the document back to what it was and the change fails.
	Persist func(doc string, snapshot []byte) error
}

// Engine holds the Loro documents of one space; it implements
// engine.Engine and is safe for concurrent use.
type Engine struct {
	rt   *lorowasm.Runtime
	opts Options
	mu   sync.Mutex
	in   *lorowasm.Instance
	docs map[string]*doc
	// Rebuilds counts instances discarded after a trap.
	rebuilds int
}

// doc is one document: its handle in the instance and the bytes it is
// rebuilt from after a trap (a snapshot, then the changes since).
type doc struct {
	h        *lorowasm.Doc
	base     []byte
	log      [][]byte
	logBytes int
	// localFrom is the version before local edits not yet kept in log
	// (nil when there are none).
	localFrom []byte
	// staged holds local edits until Flush (see flush.go).
	staged []staged
	// pending counts the imports held behind a missing predecessor.
	pending int
}

var _ engine.Engine = (*Engine)(nil)

// ErrTrapped means the wasm instance trapped; the engine rebuilt it and
// the operation did not happen.
var ErrTrapped = lorowasm.ErrTrapped

// New returns an empty engine on rt.
func New(ctx context.Context, rt *Runtime, opts Options) (*Engine, error) {
	if opts.Peer == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opts.Peer = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	if opts.Peer == math.MaxUint64 {
		return nil, errors.New("datasync/engine/loro: peer id 2^64-1 is reserved by Loro")
	}
	if opts.MaxBlobBytes <= 0 {
		opts.MaxBlobBytes = DefaultMaxBlobBytes
	}
	in, err := rt.rt.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return &Engine{rt: rt.rt, opts: opts, in: in, docs: map[string]*doc{}}, nil
}

// Close releases the engine's instance.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.in.Close(ctx)
}

// ctx is the context of one engine operation: the engine interface has no
// context, so the operation's calls into the module are bounded by the
// runtime's call timeout instead (a hostile blob cannot hold the engine).
func (e *Engine) ctx() (context.Context, context.CancelFunc) { return e.rt.Context() }

// Encoding implements engine.Engine.
func (e *Engine) Encoding() engine.Encoding { return Encoding }

// Peer returns the engine's Loro peer id.
func (e *Engine) Peer() uint64 { return e.opts.Peer }

// Docs implements engine.Engine.
func (e *Engine) Docs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.docs))
}

// Has implements engine.Engine.
func (e *Engine) Has(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.docs[name] != nil
}

// Create implements engine.Engine.
func (e *Engine) Create(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.docs[name] != nil {
		return fmt.Errorf("%w: %q", engine.ErrExists, name)
	}
	ctx, cancel := e.ctx()
	defer cancel()
	_, err := e.docOrNew(ctx, name)
	return err
}

// docOrNew returns the document, making an empty one if needed. The
// caller holds e.mu.
func (e *Engine) docOrNew(ctx context.Context, name string) (*doc, error) {
	if d := e.docs[name]; d != nil {
		return d, nil
	}
	h, err := e.in.NewDoc(ctx, e.opts.Peer)
	if err != nil {
		return nil, e.trapped(ctx, err)
	}
	d := &doc{h: h}
	e.docs[name] = d
	return d, nil
}

func (e *Engine) doc(name string) (*doc, error) {
	d := e.docs[name]
	if d == nil {
		return nil, fmt.Errorf("%w: %q", engine.ErrNoDocument, name)
	}
	return d, nil
}

// Stats reports the instance's linear memory and how many times it was
// rebuilt after a trap.
func (e *Engine) Stats() (memoryBytes uint32, rebuilds int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.in.MemoryBytes(), e.rebuilds
}

// Drop removes a document locally. Deletion has no representation in
// data-sync-v1: a peer that still holds the document offers it again and
// it comes back, refilled (§Exchange).
func (e *Engine) Drop(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.docs[name]
	if d == nil {
		return
	}
	ctx, cancel := e.ctx()
	defer cancel()
	e.drop(ctx, name)
}

// drop frees and forgets a document. The caller holds e.mu.
func (e *Engine) drop(ctx context.Context, name string) {
	if d := e.docs[name]; d != nil {
		_ = e.in.FreeDoc(ctx, d.h)
		delete(e.docs, name)
	}
}
