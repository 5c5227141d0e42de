package engine

import (
	"fmt"

	"github.com/ferry-sync/ferry/datasync/internal/attach"
)

// Import implements [Engine].
func (k *KV) Import(doc string, change []byte) (Outcome, error) {
	dl, err := decodeDelta(change)
	if err != nil {
		return Unreadable, fmt.Errorf("datasync/engine: change for %q: %w", doc, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.docOrNew(doc)
	w := k.work(d)
	out := w.applyDelta(dl)
	switch out {
	case MissingPredecessor:
		// Held in memory only: the targeted offer its arrival draws, or
		// the next exchange, recovers it if it is lost.
		if len(w.pending) == MaxPending {
			w.pending = w.pending[1:]
		}
		w.pending = append(w.pending, dl)
		k.docs[doc] = w
	case Applied:
		w.drain()
		_ = w.fold(k.actor) // staged local edits join the imported change, or stay staged past MaxClock
		if err := k.save(doc, w); err != nil {
			return Failed, err
		}
	}
	return out, nil
}

// applyDelta merges dl or says why it cannot; it changes nothing unless it
// returns Applied.
func (d *kvDoc) applyDelta(dl delta) Outcome {
	if dl.To.le(d.vv) {
		return AlreadyHeld
	}
	if !dl.From.le(d.vv) {
		return MissingPredecessor
	}
	if !d.base.le(dl.To) {
		// The sender has not seen everything compaction dropped here: a
		// write to a key whose tombstone was dropped cannot be ordered
		// against it.
		for _, g := range dl.Regs {
			if !d.vv.covers(g.Dot) && d.ambiguous(g) {
				return NeedsTrimmedHistory
			}
		}
	}
	for _, g := range dl.Regs {
		if !d.vv.covers(g.Dot) {
			d.join(g)
		}
	}
	d.vv.merge(dl.To)
	return Applied
}

// ambiguous reports whether g writes a key whose tombstone compaction
// dropped, at a clock that tombstone might beat.
func (d *kvDoc) ambiguous(g reg) bool {
	_, held := d.regs[g.Key]
	return !held && d.trimmed[g.Key] && g.Lamport <= d.baseLamport
}

func (d *kvDoc) join(g reg) {
	if cur, ok := d.regs[g.Key]; !ok || g.beats(cur) {
		d.regs[g.Key] = g
		delete(d.trimmed, g.Key)
	}
	if g.Lamport > d.lamport {
		d.lamport = g.Lamport
	}
}

// drain applies held changes whose predecessors have now arrived.
func (d *kvDoc) drain() {
	for progress := true; progress; {
		progress = false
		rest := d.pending[:0]
		for _, dl := range d.pending {
			switch d.applyDelta(dl) {
			case Applied:
				progress = true
			case MissingPredecessor:
				rest = append(rest, dl)
			}
		}
		d.pending = rest
	}
}

// ImportSnapshot implements [Engine]. A snapshot from a replica that holds
// everything this one compacted always merges; otherwise it is Refused when
// it writes a key whose dropped tombstone it cannot be ordered against.
func (k *KV) ImportSnapshot(doc string, snap []byte) (Outcome, error) {
	s, err := decodeSnapshot(snap)
	if err != nil {
		return Unreadable, fmt.Errorf("datasync/engine: snapshot of %q: %w", doc, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.docOrNew(doc)
	if s.VV.le(d.vv) {
		return AlreadyHeld, nil
	}
	if !d.base.le(s.VV) {
		for _, g := range s.Regs {
			if !d.vv.covers(g.Dot) && d.ambiguous(g) {
				return Refused, fmt.Errorf("datasync/engine: snapshot of %q forked below this replica's compaction", doc)
			}
		}
	}
	d = k.work(d)
	in := map[string]bool{}
	for _, g := range s.Regs {
		in[g.Key] = true
		if !d.vv.covers(g.Dot) {
			d.join(g)
		}
	}
	// A register the sender had seen and no longer holds was beaten by a
	// tombstone the sender compacted away.
	for key, g := range d.regs {
		if !in[key] && s.VV.covers(g.Dot) {
			delete(d.regs, key)
			d.trimmed[key] = true
		}
	}
	for _, key := range s.Trimmed {
		if _, held := d.regs[key]; !held {
			d.trimmed[key] = true
		}
	}
	d.base.merge(s.Base)
	d.baseLamport = max(d.baseLamport, s.BaseLamport)
	// The clock is at least every clock the snapshot saw, the dropped
	// tombstones' included, so a later local edit never ties or loses to
	// one (a reloaded replica stamps its next edit as it would have).
	d.lamport = max(d.lamport, s.BaseLamport)
	d.vv.merge(s.VV)
	d.drain()
	_ = d.fold(k.actor) // staged local edits join the imported snapshot, or stay staged past MaxClock
	if err := k.save(doc, d); err != nil {
		return Failed, err
	}
	return Applied, nil
}

// Set writes value under key, creating the document if needed. It is a
// local edit: not subject to the peer-named document ceiling.
func (k *KV) Set(doc, key string, value []byte) error {
	return k.write(doc, reg{Key: key, Value: append([]byte{}, value...)})
}

// Delete removes key (a tombstone until compaction).
func (k *KV) Delete(doc, key string) error {
	return k.write(doc, reg{Key: key, Deleted: true})
}

// SetRef writes an attachment reference, refusing one that breaks a bound
// (§Attachments: bounds are checked where a reference is written).
func (k *KV) SetRef(doc, key string, r attach.Ref) error {
	v, err := r.Marshal()
	if err != nil {
		return err
	}
	return k.Set(doc, key, v)
}

func (k *KV) write(doc string, g reg) error {
	if g.Key == "" || len(g.Key) > maxKeyLen || len(g.Value) > maxValueLen {
		return fmt.Errorf("datasync/engine: key must be 1..%d bytes, value at most %d", maxKeyLen, maxValueLen)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.docs[doc]
	if d == nil {
		d = newDoc()
	}
	if err := d.room(k.actor, 1); err != nil {
		return err
	}
	w := k.work(d)
	w.commitLocal(k.actor, g)
	return k.save(doc, w)
}

// Stage stages a local write of value under key, creating the document if
// needed; [KV.Flush] commits it. Like Set, it is not subject to the
// peer-named document ceiling.
func (k *KV) Stage(doc, key string, value []byte) error {
	return k.stage(doc, reg{Key: key, Value: append([]byte{}, value...)})
}

// StageDelete stages a local deletion of key.
func (k *KV) StageDelete(doc, key string) error {
	return k.stage(doc, reg{Key: key, Deleted: true})
}

func (k *KV) stage(doc string, g reg) error {
	if g.Key == "" || len(g.Key) > maxKeyLen || len(g.Value) > maxValueLen {
		return fmt.Errorf("datasync/engine: key must be 1..%d bytes, value at most %d", maxKeyLen, maxValueLen)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.docOrNew(doc)
	d.local = append(d.local, g)
	return nil
}

// Pending implements [Flusher].
func (k *KV) Pending(doc string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.docs[doc]
	return d != nil && len(d.local) > 0
}

// Flush implements [Flusher].
func (k *KV) Flush(doc string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, err := k.doc(doc)
	if err != nil {
		return nil, err
	}
	before := d.vv.encode()
	if len(d.local) == 0 {
		return before, nil
	}
	if err := d.room(k.actor, len(d.local)); err != nil {
		return nil, err
	}
	w := k.work(d)
	_ = w.fold(k.actor) // room checked above
	if err := k.save(doc, w); err != nil {
		return nil, err
	}
	return before, nil
}

// Get returns the value under key; ok is false when the key is absent or
// deleted.
func (k *KV) Get(doc, key string) (value []byte, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.docs[doc]
	if d == nil {
		return nil, false
	}
	g, ok := d.regs[key]
	if !ok || g.Deleted {
		return nil, false
	}
	return append([]byte{}, g.Value...), true
}

// Ref reads the value under key as an attachment reference. A value that is
// not one, or breaks any bound, reads as absent (§Attachments).
func (k *KV) Ref(doc, key string) (attach.Ref, bool) {
	v, ok := k.Get(doc, key)
	if !ok {
		return attach.Ref{}, false
	}
	return attach.Read(v)
}

// Values returns a copy of every live key and value in doc.
func (k *KV) Values(doc string) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]string{}
	if d := k.docs[doc]; d != nil {
		for key, g := range d.regs {
			if !g.Deleted {
				out[key] = string(g.Value)
			}
		}
	}
	return out
}

// Drop removes a document locally. Deletion has no representation in
// data-sync-v1: a peer that still holds the document offers it again and it
// comes back, refilled (§Exchange). Empty a document instead to remove its
// content from every replica.
func (k *KV) Drop(doc string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.docs, doc)
}

// docOrNew returns the document named doc, adding an empty one to k.docs
// when there is none. The caller holds k.mu.
func (k *KV) docOrNew(doc string) *kvDoc {
	d := k.docs[doc]
	if d == nil {
		d = newDoc()
		k.docs[doc] = d
	}
	return d
}
