package loro

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/loro/internal/lorowasm"
)

// ErrUnreadable wraps every reason a peer's blob is refused unread.
var ErrUnreadable = errors.New("datasync/engine/loro: unreadable blob")

func (e *Engine) version(ctx context.Context, d *doc) (vv, []byte, error) {
	b, err := e.in.OplogVersion(ctx, d.h)
	if err != nil {
		return nil, nil, e.trapped(ctx, err)
	}
	return mustVV(b), b, nil
}

func (e *Engine) shallowSince(ctx context.Context, d *doc) (vv, error) {
	b, err := e.in.ShallowSince(ctx, d.h)
	if err != nil {
		return nil, e.trapped(ctx, err)
	}
	return mustVV(b), nil
}

// Version implements engine.Engine: Loro's encoded oplog version vector.
func (e *Engine) Version(name string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.doc(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.flushLocal(ctx, d); err != nil {
		return nil, err
	}
	_, b, err := e.version(ctx, d)
	return b, err
}

// Behind implements engine.Engine.
func (e *Engine) Behind(name string, peer []byte) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.doc(name)
	if err != nil {
		return false, err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	ours, _, err := e.version(ctx, d)
	if err != nil {
		return false, err
	}
	p, perr := decodeVV(peer)
	if perr != nil {
		p = vv{}
	}
	return !ours.le(p), nil
}

// Changes implements engine.Engine: export({mode: "update", from: peer}).
// It answers ErrTrimmed itself when the peer's version lies below this
// document's shallow root, since Loro would export an update the peer can
// only hold as pending.
func (e *Engine) Changes(name string, peer []byte) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.doc(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.flushLocal(ctx, d); err != nil {
		return nil, err
	}
	p, perr := decodeVV(peer)
	if perr != nil || p.empty() {
		p, peer = vv{}, nil
	}
	since, err := e.shallowSince(ctx, d)
	if err != nil {
		return nil, err
	}
	if !since.empty() && !since.le(p) {
		return nil, fmt.Errorf("%w: %q", engine.ErrTrimmed, name)
	}
	b, err := e.in.ExportUpdates(ctx, d.h, peer)
	if err != nil {
		return nil, e.trapped(ctx, err)
	}
	return b, nil
}

// Snapshot implements engine.Engine: export({mode: "snapshot"}).
func (e *Engine) Snapshot(name string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.doc(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.flushLocal(ctx, d); err != nil {
		return nil, err
	}
	b, err := e.in.ExportSnapshot(ctx, d.h)
	if err != nil {
		return nil, e.trapped(ctx, err)
	}
	return b, nil
}

// judge reads a peer blob's header (checksum verified) before the blob
// goes anywhere near an import: too large, unreadable or of the wrong kind
// is refused here.
func (e *Engine) judge(ctx context.Context, name string, blob []byte, snapshot bool) (lorowasm.BlobMeta, error) {
	if len(blob) > e.opts.MaxBlobBytes {
		return lorowasm.BlobMeta{}, fmt.Errorf("%w: %q: %d bytes exceeds %d", ErrUnreadable, name, len(blob), e.opts.MaxBlobBytes)
	}
	m, err := e.in.DecodeBlobMeta(ctx, blob)
	if err != nil {
		return m, fmt.Errorf("%w: %q: %w", ErrUnreadable, name, e.trapped(ctx, err))
	}
	isSnap := m.Mode == "snapshot" || m.Mode == "shallow-snapshot"
	if m.Mode != "update" && !isSnap || isSnap != snapshot {
		return m, fmt.Errorf("%w: %q: a %s blob where a %s was expected", ErrUnreadable, name, m.Mode, kind(snapshot))
	}
	if _, err := decodeVV(m.StartVV); err != nil {
		return m, fmt.Errorf("%w: %q: %w", ErrUnreadable, name, err)
	}
	if _, err := decodeVV(m.EndVV); err != nil {
		return m, fmt.Errorf("%w: %q: %w", ErrUnreadable, name, err)
	}
	return m, nil
}

func kind(snapshot bool) string {
	if snapshot {
		return "snapshot"
	}
	return "change"
}

// Import implements engine.Engine. Outcomes: AlreadyHeld when the blob's
// end version is held (the engine is not touched), NeedsTrimmedHistory when
// it carries ops below this document's shallow root or Loro finds its
// dependencies there, MissingPredecessor when Loro keeps part of it
// pending, Unreadable for anything Loro cannot decode (or that traps the
// instance, which is then rebuilt); a document made for an unreadable blob
// is removed again.
func (e *Engine) Import(name string, change []byte) (engine.Outcome, error) {
	return e.importBlob(name, change, false, e.importInto)
}

// importBlob is Import and ImportSnapshot: judge the blob, make the
// document if needed, and have into bring the blob in; a document made for
// a blob into found Unreadable is removed again.
func (e *Engine) importBlob(name string, blob []byte, snapshot bool, into func(context.Context, string, *doc, lorowasm.BlobMeta, []byte) (engine.Outcome, error)) (engine.Outcome, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := e.ctx()
	defer cancel()
	// Every document's local edits are kept before peer bytes reach the
	// module, so a trap they cause loses none of them; and the blob is
	// judged before any document is made for it.
	if err := e.flushAll(ctx); err != nil {
		return engine.Failed, err
	}
	m, err := e.judge(ctx, name, blob, snapshot)
	if err != nil {
		return engine.Unreadable, err
	}
	created := e.docs[name] == nil
	d, err := e.docOrNew(ctx, name)
	if err != nil {
		return engine.Failed, err
	}
	out, err := into(ctx, name, d, m, blob)
	if out == engine.Unreadable && created && e.docs[name] == d {
		e.drop(ctx, name)
	}
	return out, err
}

// importInto is Import after the blob was judged and the document made.
func (e *Engine) importInto(ctx context.Context, name string, d *doc, m lorowasm.BlobMeta, change []byte) (engine.Outcome, error) {
	cur, _, err := e.version(ctx, d)
	if err != nil {
		return engine.Failed, err
	}
	start, end := mustVV(m.StartVV), mustVV(m.EndVV)
	if end.le(cur) {
		return engine.AlreadyHeld, nil
	}
	since, err := e.shallowSince(ctx, d)
	if err != nil {
		return engine.Failed, err
	}
	if below(start, since) {
		return engine.NeedsTrimmedHistory, nil
	}
	if !start.le(cur) && d.pending >= MaxPending {
		return engine.MissingPredecessor, nil
	}
	return e.apply(ctx, name, d, change, false)
}

// below reports whether a change starting at start carries ops below the
// shallow root since: ops this document compacted away, which Loro cannot
// merge (docs/decisions/datasync-loro.md).
func below(start, since vv) bool {
	for p, c := range start {
		if c < since[p] {
			return true
		}
	}
	return false
}

// belowRoot reports whether err is Loro refusing changes whose
// dependencies lie below a shallow document's root.
func belowRoot(err error) bool {
	var je *lorowasm.JSError
	return errors.As(err, &je) && strings.Contains(je.Message, "not included in the shallow history")
}

// apply imports blob into d and persists the result.
func (e *Engine) apply(ctx context.Context, name string, d *doc, blob []byte, snapshot bool) (engine.Outcome, error) {
	st, err := e.in.Import(ctx, d.h, blob)
	if belowRoot(err) {
		// Loro checked the changes' dependencies against the shallow
		// root itself and imported nothing.
		if snapshot {
			return engine.Refused, fmt.Errorf("datasync/engine/loro: snapshot of %q forked below this replica's compaction", name)
		}
		return engine.NeedsTrimmedHistory, nil
	}
	if err != nil {
		return engine.Unreadable, fmt.Errorf("%w: %q: %w", ErrUnreadable, name, e.trapped(ctx, err))
	}
	out := engine.Applied
	switch {
	case len(st.Pending) > 0:
		out = engine.MissingPredecessor
	case len(st.Success) == 0:
		return engine.AlreadyHeld, nil
	}
	folded := false
	if out == engine.Applied && len(d.staged) > 0 {
		// Staged local edits join the applied import (engine.Flusher).
		if err := e.fold(ctx, d); err != nil {
			return engine.Failed, err
		}
		folded = true
	}
	if err := e.persist(ctx, name, d); err != nil {
		return engine.Failed, e.undo(ctx, d, err)
	}
	if folded {
		d.staged = nil
	}
	if out == engine.MissingPredecessor {
		d.pending++
	} else if d.pending > 0 && !e.stillPending(ctx, d) {
		d.pending = 0
	}
	return out, e.keep(ctx, d, blob)
}

// stillPending reports whether d holds changes behind a missing
// predecessor: exporting everything and re-reading the oplog is too
// costly, so the kept log is asked instead (a pending blob's end version
// is not yet covered).
func (e *Engine) stillPending(ctx context.Context, d *doc) bool {
	cur, _, err := e.version(ctx, d)
	if err != nil {
		return true
	}
	for _, b := range d.log {
		m, err := e.in.DecodeBlobMeta(ctx, b)
		if err == nil && !mustVV(m.EndVV).le(cur) {
			return true
		}
	}
	return false
}

// persist hands d's snapshot to the storage hook. On failure the caller
// rolls d back.
func (e *Engine) persist(ctx context.Context, name string, d *doc) error {
	if e.opts.Persist == nil {
		return nil
	}
	snap, err := e.in.ExportSnapshot(ctx, d.h)
	if err != nil {
		return e.trapped(ctx, err)
	}
	if err := e.opts.Persist(name, snap); err != nil {
		return fmt.Errorf("%w: document %q: %w", engine.ErrStorage, name, err)
	}
	return nil
}

// ImportSnapshot implements engine.Engine. A snapshot whose version is held
// is AlreadyHeld; one into a compacted document that does not cover
// everything held here is Refused (the replicas forked below the shallow
// root); a shallow snapshot that covers everything held replaces the
// document.
func (e *Engine) ImportSnapshot(name string, snap []byte) (engine.Outcome, error) {
	return e.importBlob(name, snap, true, e.importSnapshotInto)
}

// importSnapshotInto is ImportSnapshot after the blob was judged and the
// document made.
func (e *Engine) importSnapshotInto(ctx context.Context, name string, d *doc, m lorowasm.BlobMeta, snap []byte) (engine.Outcome, error) {
	cur, _, err := e.version(ctx, d)
	if err != nil {
		return engine.Failed, err
	}
	end := mustVV(m.EndVV)
	if end.le(cur) {
		return engine.AlreadyHeld, nil
	}
	since, err := e.shallowSince(ctx, d)
	if err != nil {
		return engine.Failed, err
	}
	supersedes := cur.le(end)
	if !since.empty() && !supersedes {
		return engine.Refused, fmt.Errorf("datasync/engine/loro: snapshot of %q forked below this replica's compaction", name)
	}
	if m.Mode == "shallow-snapshot" && !cur.empty() {
		if !supersedes {
			return engine.Refused, fmt.Errorf("datasync/engine/loro: compacted snapshot of %q lacks changes held here", name)
		}
		return e.replace(ctx, name, d, snap)
	}
	return e.apply(ctx, name, d, snap, true)
}

// replace swaps d for a document loaded from snap alone.
func (e *Engine) replace(ctx context.Context, name string, d *doc, snap []byte) (engine.Outcome, error) {
	old := *d
	d.base, d.log, d.logBytes, d.pending, d.localFrom = snap, nil, 0, 0, nil
	h, err := e.load(ctx, d)
	if err != nil {
		*d = old // before a rebuild reloads it
		return engine.Unreadable, fmt.Errorf("%w: %q: %w", ErrUnreadable, name, e.trapped(ctx, err))
	}
	d.h = h
	if err := e.persist(ctx, name, d); err != nil {
		_ = e.in.FreeDoc(ctx, h)
		*d = old
		return engine.Failed, err
	}
	_ = e.in.FreeDoc(ctx, old.h)
	return engine.Applied, nil
}

// Compact implements engine.Engine: the document becomes a shallow
// snapshot of itself (history trimmed at its current frontiers).
func (e *Engine) Compact(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.doc(name)
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.flushLocal(ctx, d); err != nil {
		return err
	}
	shallow, err := e.in.ExportShallowSnapshot(ctx, d.h)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", ErrCompact, name, e.trapped(ctx, err))
	}
	if _, err := e.replace(ctx, name, d, shallow); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrCompact, name, err)
	}
	return nil
}

// ErrCompact means a document could not be compacted; it is unchanged,
// with its whole history. Loro 1.13.9 exports, for some histories, a
// shallow snapshot it then refuses to load ("cannot switch a document to a
// version before the shallow history's start version"); the engine loads
// the snapshot before adopting it, so such a compaction fails instead of
// losing the document.
var ErrCompact = errors.New("datasync/engine/loro: compaction failed")
