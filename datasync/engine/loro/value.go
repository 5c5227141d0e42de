package loro

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/datasync/engine/loro/internal/lorowasm"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
)

// Kind is a DATA_V1 value kind (the reference's DataValue).
type Kind int

// Value kinds.
const (
	Null Kind = iota
	Bool
	Int
	Float
	Text
	Bytes
	Attachment
)

// Value is one map value. A document holds named collections (Loro root
// maps); each key holds a scalar or an attachment reference, which is one
// Loro map value (not a container) so it is replaced whole, never merged
// field by field. docs/decisions/datasync-loro-values.md.
type Value struct {
	Kind  Kind
	Bool  bool
	Int   int64
	Float float64
	Text  string
	Bytes []byte
	Ref   attach.Ref
}

// DefaultCollection is the collection Set, Get and Delete use.
const DefaultCollection = "data"

// MaxSafeInt bounds an Int: Loro's wasm build carries numbers as JS
// doubles, so an integer beyond 2^53 would not round-trip.
const MaxSafeInt = 1<<53 - 1

// ErrValue means a value, key or collection name cannot be written.
var ErrValue = errors.New("datasync/engine/loro: value cannot be written")

func (v Value) toJS() (any, error) {
	switch v.Kind {
	case Null:
		return lorowasm.Null{}, nil
	case Bool:
		return v.Bool, nil
	case Int:
		if v.Int > MaxSafeInt || v.Int < -MaxSafeInt {
			return nil, fmt.Errorf("%w: integer %d is beyond ±2^53", ErrValue, v.Int)
		}
		return float64(v.Int), nil
	case Float:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return nil, fmt.Errorf("%w: %v is not a finite number", ErrValue, v.Float)
		}
		return v.Float, nil
	case Text:
		if !utf8.ValidString(v.Text) {
			return nil, fmt.Errorf("%w: text is not UTF-8", ErrValue)
		}
		return v.Text, nil
	case Bytes:
		return &lorowasm.Uint8Array{Buf: append([]byte{}, v.Bytes...)}, nil
	case Attachment:
		if err := v.Ref.Check(); err != nil {
			return nil, err
		}
		if v.Ref.Size > MaxSafeInt {
			return nil, fmt.Errorf("%w: attachment size %d is beyond 2^53", ErrValue, v.Ref.Size)
		}
		o := lorowasm.NewObject()
		o.Set("kind", attach.KindAttach)
		o.Set("hash", v.Ref.Hash)
		o.Set("size", float64(v.Ref.Size))
		if v.Ref.Name != "" {
			o.Set("name", v.Ref.Name)
		}
		if v.Ref.Mime != "" {
			o.Set("mime", v.Ref.Mime)
		}
		return o, nil
	}
	return nil, fmt.Errorf("%w: unknown kind %d", ErrValue, v.Kind)
}

// fromJS reads a JS value back as a Value; ok is false for anything that is
// not a DATA_V1 value (a nested container, a malformed reference), which
// reads as absent, as the reference's from_engine_value does.
func fromJS(x any) (Value, bool) {
	switch t := x.(type) {
	case lorowasm.Null, lorowasm.Undefined:
		return Value{Kind: Null}, true
	case bool:
		return Value{Kind: Bool, Bool: t}, true
	case float64:
		if t == math.Trunc(t) && math.Abs(t) <= MaxSafeInt {
			return Value{Kind: Int, Int: int64(t)}, true
		}
		return Value{Kind: Float, Float: t}, true
	case string:
		return Value{Kind: Text, Text: t}, true
	case *lorowasm.Uint8Array:
		return Value{Kind: Bytes, Bytes: append([]byte{}, t.Buf...)}, true
	case *lorowasm.Object:
		return refFromJS(t)
	}
	return Value{}, false
}

func refFromJS(o *lorowasm.Object) (Value, bool) {
	if k, _ := o.Get("kind").(string); k != attach.KindAttach {
		return Value{}, false
	}
	var r attach.Ref
	var ok bool
	if r.Hash, ok = o.Get("hash").(string); !ok {
		return Value{}, false
	}
	size, ok := o.Get("size").(float64)
	if !ok || size != math.Trunc(size) || size < 1 || size > MaxSafeInt {
		return Value{}, false
	}
	r.Size = int64(size)
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &r.Name}, {"mime", &r.Mime}} {
		switch s := o.Get(f.key).(type) {
		case lorowasm.Undefined:
		case string:
			*f.dst = s
		default:
			return Value{}, false
		}
	}
	if r.Check() != nil {
		return Value{}, false
	}
	return Value{Kind: Attachment, Ref: r}, true
}

// checkName checks a collection name and a key. A collection is a Loro
// root map, whose name Loro refuses when it holds "/" or NUL (they would
// make its container id ambiguous); Ferry refuses those names itself, up
// front, so the caller gets ErrValue and the document is untouched.
// docs/decisions/datasync-loro-values.md.
func checkName(collection, key string) error {
	if collection == "" || !utf8.ValidString(collection) || len(collection) > 1024 {
		return fmt.Errorf("%w: collection must be 1..1024 bytes of UTF-8", ErrValue)
	}
	if strings.ContainsAny(collection, "/\x00") {
		return fmt.Errorf("%w: collection %q holds \"/\" or NUL, which Loro does not take in a name", ErrValue, collection)
	}
	if key == "" || !utf8.ValidString(key) || len(key) > 1024 {
		return fmt.Errorf("%w: key must be 1..1024 bytes of UTF-8", ErrValue)
	}
	return nil
}

// Set writes v under key in the default collection, creating the document
// if needed, and commits it.
func (e *Engine) Set(doc, key string, v Value) error { return e.SetIn(doc, DefaultCollection, key, v) }

// Delete removes key from the default collection and commits.
func (e *Engine) Delete(doc, key string) error { return e.DeleteIn(doc, DefaultCollection, key) }

// SetIn writes v under key in collection and commits: one Loro change.
func (e *Engine) SetIn(name, collection, key string, v Value) error {
	if err := checkName(collection, key); err != nil {
		return err
	}
	js, err := v.toJS()
	if err != nil {
		return err
	}
	return e.edit(name, false, func(ctx context.Context, d *doc) error { return e.in.MapSet(ctx, d.h, collection, key, js) })
}

// DeleteIn removes key from collection and commits.
func (e *Engine) DeleteIn(name, collection, key string) error {
	if err := checkName(collection, key); err != nil {
		return err
	}
	return e.edit(name, false, func(ctx context.Context, d *doc) error { return e.in.MapDelete(ctx, d.h, collection, key) })
}

// SetMany writes every entry of values into collection as one change, in
// key order.
func (e *Engine) SetMany(name, collection string, values map[string]Value) error {
	js := make(map[string]any, len(values))
	for k, v := range values {
		if err := checkName(collection, k); err != nil {
			return err
		}
		x, err := v.toJS()
		if err != nil {
			return err
		}
		js[k] = x
	}
	keys := slices.Sorted(maps.Keys(js))
	return e.edit(name, true, func(ctx context.Context, d *doc) error {
		for _, k := range keys {
			x := js[k]
			if err := e.in.MapSet(ctx, d.h, collection, k, x); err != nil {
				return err
			}
		}
		return nil
	})
}

// edit applies a local edit f and commits it. Without a storage hook the
// change is kept for rebuilding lazily (flushLocal, before the next
// operation that reads peer bytes or hands bytes out), so a run of local
// edits costs one set and one commit each; with one, it is kept and
// persisted at once. multi says f makes more than one Loro call, so a
// failure part way is rolled back.
func (e *Engine) edit(name string, multi bool, f func(context.Context, *doc) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := e.ctx()
	defer cancel()
	fresh := e.docs[name] == nil
	err := e.editLocked(ctx, name, multi, f)
	if err != nil && fresh {
		// A failed first write leaves no empty document behind.
		e.drop(ctx, name)
	}
	return err
}

// editLocked is edit's work; the caller holds e.mu.
func (e *Engine) editLocked(ctx context.Context, name string, multi bool, f func(context.Context, *doc) error) error {
	d, err := e.docOrNew(ctx, name)
	if err != nil {
		return err
	}
	eager := e.opts.Persist != nil
	if eager || multi {
		if err := e.flushLocal(ctx, d); err != nil {
			return err
		}
	}
	if d.localFrom == nil {
		if _, d.localFrom, err = e.version(ctx, d); err != nil {
			return err
		}
	}
	if err := f(ctx, d); err != nil {
		if multi {
			if rerr := e.rollback(ctx, d); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		// A single refused set adds no op to the transaction.
		return e.trapped(ctx, err)
	}
	if err := e.in.Commit(ctx, d.h); err != nil {
		return e.trapped(ctx, err)
	}
	if !eager {
		return nil
	}
	if err := e.persist(ctx, name, d); err != nil {
		if rerr := e.rollback(ctx, d); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	return e.flushLocal(ctx, d)
}

// flushAll keeps every document's local changes (flushLocal).
func (e *Engine) flushAll(ctx context.Context) error {
	for _, d := range e.docs {
		if err := e.flushLocal(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// flushLocal keeps d's local changes not yet kept for rebuilding. The
// caller holds e.mu.
func (e *Engine) flushLocal(ctx context.Context, d *doc) error {
	if d.localFrom == nil {
		return nil
	}
	change, err := e.in.ExportUpdates(ctx, d.h, d.localFrom)
	if err != nil {
		return e.trapped(ctx, err)
	}
	d.localFrom = nil
	return e.keep(ctx, d, change)
}

// Get reads key from the default collection.
func (e *Engine) Get(doc, key string) (Value, bool) { return e.GetIn(doc, DefaultCollection, key) }

// GetIn reads key from collection; ok is false when it is absent or not a
// DATA_V1 value.
func (e *Engine) GetIn(name, collection, key string) (Value, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.docs[name]
	if d == nil || checkName(collection, key) != nil {
		return Value{}, false
	}
	ctx, cancel := e.ctx()
	defer cancel()
	x, err := e.in.MapGet(ctx, d.h, collection, key)
	if err != nil {
		_ = e.trapped(ctx, err)
		return Value{}, false
	}
	if _, absent := x.(lorowasm.Undefined); absent {
		return Value{}, false
	}
	return fromJS(x)
}

// Values returns every readable key and value of collection.
func (e *Engine) Values(name, collection string) map[string]Value {
	out := map[string]Value{}
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.docs[name]
	if d == nil || checkName(collection, "k") != nil {
		return out
	}
	ctx, cancel := e.ctx()
	defer cancel()
	// entries, not toJSON: toJSON flattens a nested container into a
	// value (a counter into a number, a map container into what may look
	// like an attachment reference); entries leaves it a container, which
	// reads as absent, as GetIn reads it.
	c, err := e.in.MapEntries(ctx, d.h, collection)
	if err != nil {
		_ = e.trapped(ctx, err)
		return out
	}
	for _, k := range c.Keys() {
		x := c.Get(k)
		if _, container := x.(lorowasm.Undefined); container {
			continue
		}
		if v, ok := fromJS(x); ok {
			out[k] = v
		}
	}
	return out
}

// Ref reads key of the default collection as an attachment reference.
func (e *Engine) Ref(doc, key string) (attach.Ref, bool) {
	v, ok := e.Get(doc, key)
	if !ok || v.Kind != Attachment {
		return attach.Ref{}, false
	}
	return v.Ref, true
}

// SetRef writes an attachment reference under key.
func (e *Engine) SetRef(doc, key string, r attach.Ref) error {
	return e.Set(doc, key, Value{Kind: Attachment, Ref: r})
}

func (e *Engine) jsValue(name string) (*lorowasm.Object, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.doc(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	x, err := e.in.ToJSON(ctx, d.h)
	if err != nil {
		return nil, e.trapped(ctx, err)
	}
	o, ok := x.(*lorowasm.Object)
	if !ok {
		return nil, fmt.Errorf("datasync/engine/loro: toJSON of %q is not an object", name)
	}
	return o, nil
}

// JSON returns the document's toJSON() as JSON, with byte values written
// as {"$bytes": hex} and a NaN or ±Inf a peer wrote as {"$float": name}
// (see plainFloat); object keys are sorted.
func (e *Engine) JSON(doc string) ([]byte, error) {
	o, err := e.jsValue(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(plain(o))
}

// plain converts JS values to encoding/json values.
func plain(x any) any {
	switch t := x.(type) {
	case *lorowasm.Object:
		m := map[string]any{}
		for _, k := range t.Keys() {
			m[k] = plain(t.Get(k))
		}
		return m
	case *lorowasm.Array:
		out := make([]any, len(t.Elems))
		for i, e := range t.Elems {
			out[i] = plain(e)
		}
		return out
	case *lorowasm.Uint8Array:
		return map[string]any{"$bytes": hex.EncodeToString(t.Buf)}
	case lorowasm.Null, lorowasm.Undefined:
		return nil
	case float64:
		return plainFloat(t)
	}
	return x
}

// plainFloat renders a number for JSON. Ferry never writes NaN or ±Inf,
// but a Loro peer may; JSON has no such numbers, so they are marked as
// {"$float": "NaN"}, {"$float": "Infinity"}, {"$float": "-Infinity"}
// (JavaScript's names for them), as byte values are marked with $bytes.
// docs/decisions/datasync-loro-values.md.
func plainFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return map[string]any{"$float": "NaN"}
	case math.IsInf(f, 1):
		return map[string]any{"$float": "Infinity"}
	case math.IsInf(f, -1):
		return map[string]any{"$float": "-Infinity"}
	}
	return f
}
