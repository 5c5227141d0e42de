package loro

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ferry-sync/ferry/datasync/engine/loro/internal/lorowasm"
)

// trapped handles an error from the module: after a trap it discards the
// instance and rebuilds every document from its kept bytes. It returns
// err (annotated when the rebuild itself failed). The caller holds e.mu.
func (e *Engine) trapped(_ context.Context, err error) error {
	if !errors.Is(err, lorowasm.ErrTrapped) {
		return err
	}
	// A fresh deadline: the operation's own may be what ended the call.
	ctx, cancel := e.rt.Context()
	defer cancel()
	if rerr := e.rebuild(ctx); rerr != nil {
		return fmt.Errorf("%w; rebuilding the instance failed: %w", err, rerr)
	}
	return err
}

func (e *Engine) rebuild(ctx context.Context) error {
	in, err := e.rt.NewInstance(ctx)
	if err != nil {
		return err
	}
	_ = e.in.Close(ctx)
	e.in = in
	e.rebuilds++
	for _, name := range slices.Sorted(maps.Keys(e.docs)) {
		d := e.docs[name]
		h, err := e.load(ctx, d)
		if err != nil {
			return fmt.Errorf("document %q: %w", name, err)
		}
		d.h = h
		d.localFrom = nil // unkept local edits died with the instance
	}
	return nil
}

// load makes a document in the current instance from d's kept bytes.
func (e *Engine) load(ctx context.Context, d *doc) (*lorowasm.Doc, error) {
	h, err := e.in.NewDoc(ctx, e.opts.Peer)
	if err != nil {
		return nil, err
	}
	for _, b := range append([][]byte{d.base}, d.log...) {
		if len(b) == 0 {
			continue
		}
		if _, err := e.in.Import(ctx, h, b); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// rollback replaces d's handle with one rebuilt from its kept bytes,
// undoing whatever was done to the handle since they were last updated.
func (e *Engine) rollback(ctx context.Context, d *doc) error {
	h, err := e.load(ctx, d)
	if err != nil {
		return e.trapped(ctx, err)
	}
	_ = e.in.FreeDoc(ctx, d.h)
	d.h, d.localFrom = h, nil
	return nil
}

// keep records b, a change just applied to d, for rebuilding; a long log
// is folded into a fresh snapshot, keeping only the changes still pending
// (a snapshot does not carry them).
func (e *Engine) keep(ctx context.Context, d *doc, b []byte) error {
	d.log = append(d.log, b)
	d.logBytes += len(b)
	if len(d.log) < 2 || d.logBytes < max(foldBytes, len(d.base)) {
		return nil // one kept change is as good a base as a snapshot
	}
	snap, err := e.in.ExportSnapshot(ctx, d.h)
	if err != nil {
		return e.trapped(ctx, err)
	}
	var rest [][]byte
	d.logBytes = 0
	if d.pending > 0 {
		cur, _, err := e.version(ctx, d)
		if err != nil {
			return err
		}
		for _, b := range d.log {
			if m, err := e.in.DecodeBlobMeta(ctx, b); err == nil && !mustVV(m.EndVV).le(cur) {
				rest = append(rest, b)
				d.logBytes += len(b)
			}
		}
	}
	d.base, d.log = snap, rest
	return nil
}
