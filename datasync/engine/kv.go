package engine

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// KVEncoding names KV's encoding on the wire. See
// docs/decisions/datasync-encoding.md: it is not the reference encoding, so
// it is carried under its own frame version and data_versions entry, and a
// peer that advertised only entry 1 is never sent it (and, if it were,
// would consume it silently as an unknown version).
var KVEncoding = Encoding{Name: "ferry-kv/1", V: 0x4B560001, Entry: 0x4B560001}

// MaxPending bounds the changes a document holds behind a missing
// predecessor; past it the oldest is dropped (the targeted offer its
// arrival drew recovers it).
const MaxPending = 64

// KV is the default engine: documents are maps from string keys to byte
// values (a value may be an attachment reference, see [KV.Ref]).
// Concurrent writes to one key resolve last-writer-wins on (Lamport clock,
// actor), so every replica holding the same changes holds the same values.
// Deletions are tombstones until [KV.Compact] drops them.
//
// Local edits are made either committed at once ([KV.Set], [KV.Delete]) or
// staged ([KV.Stage], [KV.StageDelete]) until [KV.Flush] commits them: KV
// implements [Flusher]. Staged edits are not in the document's version,
// changes or snapshot, and are not read back by Get until flushed.
type KV struct {
	// Persist, when set, is the storage hook: it is called with a
	// document's snapshot before any change to its content (a local edit,
	// a flush, an applied import, a compaction) becomes visible, and an
	// error leaves the document as it was (the change is not made; staged
	// edits stay staged). Set it before the engine is used.
	Persist func(doc string, snapshot []byte) error

	actor string
	mu    sync.Mutex
	docs  map[string]*kvDoc
}

type kvDoc struct {
	vv          vv
	regs        map[string]reg
	lamport     uint64
	base        vv // compaction frontier: tombstones at or below were dropped
	baseLamport uint64
	trimmed     map[string]bool // keys whose tombstones were dropped
	pending     []delta         // remote changes held behind a missing predecessor
	local       []reg           // staged local edits, not yet committed (no dot)
}

func (d *kvDoc) clone() *kvDoc {
	return &kvDoc{vv: d.vv.clone(), regs: maps.Clone(d.regs), lamport: d.lamport, base: d.base.clone(),
		baseLamport: d.baseLamport, trimmed: maps.Clone(d.trimmed), pending: slices.Clone(d.pending),
		local: slices.Clone(d.local)}
}

// work returns the copy of d a change is made on: d itself when nothing
// can fail, a clone when storage can refuse the change.
func (k *KV) work(d *kvDoc) *kvDoc {
	if k.Persist == nil {
		return d
	}
	return d.clone()
}

// save persists w, the new state of doc; on success it becomes visible.
func (k *KV) save(doc string, w *kvDoc) error {
	if k.Persist != nil {
		if err := k.Persist(doc, w.snapshot().encode()); err != nil {
			return fmt.Errorf("%w: document %q: %w", ErrStorage, doc, err)
		}
	}
	k.docs[doc] = w
	return nil
}

// commitLocal commits one local edit: the next Lamport clock and dot. The
// caller has checked room(1).
func (d *kvDoc) commitLocal(actor string, g reg) {
	d.lamport++
	g.Lamport = d.lamport
	g.Dot = dot{Actor: actor, Counter: d.vv[actor] + 1}
	d.join(g)
	d.vv[actor] = g.Dot.Counter
}

// room reports whether n more local edits keep the Lamport clock and
// actor's counter within MaxClock, so that every state a local edit makes
// reads back; a refused edit fails with ErrClockRange and changes nothing.
func (d *kvDoc) room(actor string, n int) error {
	if d.lamport > MaxClock-uint64(n) || d.vv[actor] > MaxClock-uint64(n) {
		return fmt.Errorf("datasync/engine: local edit refused: %w", ErrClockRange)
	}
	return nil
}

// fold commits every staged local edit, or none (they stay staged) when
// they do not all fit the clock range.
func (d *kvDoc) fold(actor string) error {
	if err := d.room(actor, len(d.local)); err != nil {
		return err
	}
	for _, g := range d.local {
		d.commitLocal(actor, g)
	}
	d.local = nil
	return nil
}

func (d *kvDoc) snapshot() snapshot {
	return snapshot{VV: d.vv, Base: d.base, BaseLamport: d.baseLamport,
		Trimmed: slices.Collect(maps.Keys(d.trimmed)), Regs: slices.Collect(maps.Values(d.regs))}
}

func newDoc() *kvDoc {
	return &kvDoc{vv: vv{}, regs: map[string]reg{}, base: vv{}, trimmed: map[string]bool{}}
}

// NewKV returns an empty engine whose local writes are stamped with actor,
// which must be 1..64 bytes and unique to this replica.
func NewKV(actor string) (*KV, error) {
	if actor == "" || len(actor) > maxActorLen {
		return nil, fmt.Errorf("datasync/engine: actor must be 1..%d bytes", maxActorLen)
	}
	return &KV{actor: actor, docs: map[string]*kvDoc{}}, nil
}

// Encoding implements [Engine].
func (k *KV) Encoding() Encoding { return KVEncoding }

// Docs implements [Engine].
func (k *KV) Docs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.docs))
}

// Has implements [Engine].
func (k *KV) Has(doc string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.docs[doc] != nil
}

// Create implements [Engine].
func (k *KV) Create(doc string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.docs[doc] != nil {
		return fmt.Errorf("%w: %q", ErrExists, doc)
	}
	k.docs[doc] = newDoc()
	return nil
}

func (k *KV) doc(name string) (*kvDoc, error) {
	d := k.docs[name]
	if d == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoDocument, name)
	}
	return d, nil
}

// Version implements [Engine].
func (k *KV) Version(doc string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.doc(doc)
	if err != nil {
		return nil, err
	}
	return d.vv.encode(), nil
}

// Behind implements [Engine].
func (k *KV) Behind(doc string, peer []byte) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.doc(doc)
	if err != nil {
		return false, err
	}
	p, perr := decodeVV(peer)
	if perr != nil {
		p = vv{}
	}
	return !d.vv.le(p), nil
}

// Changes implements [Engine]. An unreadable peer version counts as empty.
func (k *KV) Changes(doc string, peer []byte) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.doc(doc)
	if err != nil {
		return nil, err
	}
	p, perr := decodeVV(peer)
	if perr != nil {
		p = vv{}
	}
	if !d.base.le(p) {
		return nil, fmt.Errorf("%w: %q", ErrTrimmed, doc)
	}
	dl := delta{From: vv{}, To: vv{}}
	for a, n := range d.vv {
		if n > p[a] {
			dl.From[a] = p[a]
			dl.To[a] = n
		}
	}
	for a, n := range dl.From {
		if n == 0 {
			delete(dl.From, a)
		}
	}
	for _, g := range d.regs {
		if !p.covers(g.Dot) {
			dl.Regs = append(dl.Regs, g)
		}
	}
	return dl.encode(), nil
}

// Snapshot implements [Engine].
func (k *KV) Snapshot(doc string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.doc(doc)
	if err != nil {
		return nil, err
	}
	return d.snapshot().encode(), nil
}

// Compact implements [Engine]: it drops tombstones, remembering only their
// keys and the frontier they were dropped at.
func (k *KV) Compact(doc string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.doc(doc)
	if err != nil {
		return err
	}
	w := k.work(d)
	for key, g := range w.regs {
		if g.Deleted {
			delete(w.regs, key)
			w.trimmed[key] = true
		}
	}
	w.base = w.vv.clone()
	w.baseLamport = w.lamport
	return k.save(doc, w)
}
