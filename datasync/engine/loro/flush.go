package loro

import (
	"context"
	"errors"

	"github.com/ferry-sync/ferry/datasync/engine"
)

var _ engine.Flusher = (*Engine)(nil)

// staged is a local edit held until Flush (or an applied import) commits
// it; it is in no version, change or snapshot until then.
type staged struct {
	collection, key string
	js              any  // the value, for a set
	del             bool // a deletion
}

// Stage stages a write of v under key in the default collection, creating
// the document if needed; [Engine.Flush] commits it.
func (e *Engine) Stage(doc, key string, v Value) error {
	return e.stage(doc, DefaultCollection, key, &v)
}

// StageDelete stages a deletion of key from the default collection.
func (e *Engine) StageDelete(doc, key string) error {
	return e.stage(doc, DefaultCollection, key, nil)
}

func (e *Engine) stage(name, collection, key string, v *Value) error {
	if err := checkName(collection, key); err != nil {
		return err
	}
	s := staged{collection: collection, key: key, del: v == nil}
	if v != nil {
		js, err := v.toJS()
		if err != nil {
			return err
		}
		s.js = js
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := e.ctx()
	defer cancel()
	d, err := e.docOrNew(ctx, name)
	if err != nil {
		return err
	}
	d.staged = append(d.staged, s)
	return nil
}

// Pending implements engine.Flusher.
func (e *Engine) Pending(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.docs[name]
	return d != nil && len(d.staged) > 0
}

// Flush implements engine.Flusher: it commits the staged edits as one
// change, persists it, and returns the version before them. When storage
// fails the edits stay staged and the document is as it was.
func (e *Engine) Flush(name string) ([]byte, error) {
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
	_, before, err := e.version(ctx, d)
	if err != nil || len(d.staged) == 0 {
		return before, err
	}
	if err := e.fold(ctx, d); err != nil {
		return nil, err
	}
	if err := e.persist(ctx, name, d); err != nil {
		return nil, e.undo(ctx, d, err)
	}
	d.staged = nil
	return before, e.flushLocal(ctx, d)
}

// fold applies d's staged edits and commits them; the change is kept for
// rebuilding by the next flushLocal. It leaves d.staged for the caller to
// clear once the change is persisted.
func (e *Engine) fold(ctx context.Context, d *doc) error {
	if d.localFrom == nil {
		var err error
		if _, d.localFrom, err = e.version(ctx, d); err != nil {
			return err
		}
	}
	for _, s := range d.staged {
		var err error
		if s.del {
			err = e.in.MapDelete(ctx, d.h, s.collection, s.key)
		} else {
			err = e.in.MapSet(ctx, d.h, s.collection, s.key, s.js)
		}
		if err != nil {
			return e.undo(ctx, d, e.trapped(ctx, err))
		}
	}
	if err := e.in.Commit(ctx, d.h); err != nil {
		return e.undo(ctx, d, e.trapped(ctx, err))
	}
	return nil
}

// undo rolls d back to its kept bytes after err, keeping its staged edits.
func (e *Engine) undo(ctx context.Context, d *doc, err error) error {
	if rerr := e.rollback(ctx, d); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}
