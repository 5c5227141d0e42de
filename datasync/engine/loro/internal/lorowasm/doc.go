package lorowasm

import (
	"context"
	"fmt"
	"math/big"
)

// Doc is a LoroDoc inside an instance.
type Doc struct {
	ptr  uint32
	maps map[string]uint32 // root map handles, kept for the doc's life
}

// JSError is an error the module returned (a thrown JS value).
type JSError struct{ Message string }

func (e *JSError) Error() string { return "loro: " + e.Message }

func (in *Instance) jsError(idx uint32) error {
	v := in.heap.take(idx)
	if e, ok := v.(*Error); ok {
		return &JSError{Message: e.Message}
	}
	return &JSError{Message: toString(v)}
}

// ret calls an export whose first parameter is a return area, and returns
// the area's four i32 words. The area is the 16 bytes NewInstance reserved
// on the module's shadow stack (the JS glue reserves and releases them
// around every call; keeping them saves two calls per call).
func (in *Instance) ret(ctx context.Context, name string, args ...uint64) ([4]uint32, error) {
	var r [4]uint32
	if _, err := in.Call(ctx, name, append([]uint64{uint64(in.retptr)}, args...)...); err != nil {
		return r, err
	}
	b, ok := in.mod.Memory().Read(in.retptr, 16)
	if !ok {
		return r, fmt.Errorf("%w: return area outside memory", ErrTrapped)
	}
	for i := range r {
		r[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	return r, nil
}

// alloc copies b into memory the module allocates; the export it is
// passed to takes ownership.
func (in *Instance) alloc(ctx context.Context, b []byte) (uint64, uint64, error) {
	res, err := in.Call(ctx, "__wbindgen_malloc", uint64(len(b)), 1)
	if err != nil {
		return 0, 0, err
	}
	ptr := uint32(res[0])
	if len(b) > 0 && !in.mod.Memory().Write(ptr, b) {
		return 0, 0, fmt.Errorf("%w: malloc returned memory outside the module", ErrTrapped)
	}
	return uint64(ptr), uint64(len(b)), nil
}

// takeBytes copies out a Vec<u8> the module returned and frees it.
func (in *Instance) takeBytes(ctx context.Context, ptr, n uint32) ([]byte, error) {
	b, ok := in.mod.Memory().Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%w: returned bytes outside memory", ErrTrapped)
	}
	out := append([]byte{}, b...)
	_, err := in.Call(ctx, "__wbindgen_free", uint64(ptr), uint64(n), 1)
	return out, err
}

// NewDoc makes an empty document whose local changes carry peer.
func (in *Instance) NewDoc(ctx context.Context, peer uint64) (*Doc, error) {
	res, err := in.Call(ctx, "lorodoc_new")
	if err != nil {
		return nil, err
	}
	d := &Doc{ptr: uint32(res[0]), maps: map[string]uint32{}}
	idx := in.heap.add(new(big.Int).SetUint64(peer))
	r, err := in.ret(ctx, "lorodoc_setPeerId", uint64(d.ptr), uint64(idx))
	if err != nil {
		return nil, err
	}
	if r[1] != 0 {
		return nil, in.jsError(r[0])
	}
	return d, nil
}

// FreeDoc releases d and its map handles.
func (in *Instance) FreeDoc(ctx context.Context, d *Doc) error {
	for _, m := range d.maps {
		if _, err := in.Call(ctx, "__wbg_loromap_free", uint64(m), 0); err != nil {
			return err
		}
	}
	_, err := in.Call(ctx, "__wbg_lorodoc_free", uint64(d.ptr), 0)
	return err
}

func (in *Instance) rootMap(ctx context.Context, d *Doc, name string) (uint32, error) {
	if m, ok := d.maps[name]; ok {
		return m, nil
	}
	idx := in.heap.add(name)
	r, err := in.ret(ctx, "lorodoc_getMap", uint64(d.ptr), uint64(idx))
	in.heap.drop(idx)
	if err != nil {
		return 0, err
	}
	if r[2] != 0 {
		return 0, in.jsError(r[1])
	}
	d.maps[name] = r[0]
	return r[0], nil
}

// MapSet sets key in the root map named collection to v, a JS value (see
// value.go for the types).
func (in *Instance) MapSet(ctx context.Context, d *Doc, collection, key string, v any) error {
	m, err := in.rootMap(ctx, d, collection)
	if err != nil {
		return err
	}
	kp, kn, err := in.alloc(ctx, []byte(key))
	if err != nil {
		return err
	}
	r, err := in.ret(ctx, "loromap_set", uint64(m), kp, kn, uint64(in.heap.add(v)))
	if err != nil {
		return err
	}
	if r[1] != 0 {
		return in.jsError(r[0])
	}
	return nil
}

// MapDelete deletes key from the root map named collection.
func (in *Instance) MapDelete(ctx context.Context, d *Doc, collection, key string) error {
	m, err := in.rootMap(ctx, d, collection)
	if err != nil {
		return err
	}
	kp, kn, err := in.alloc(ctx, []byte(key))
	if err != nil {
		return err
	}
	r, err := in.ret(ctx, "loromap_delete", uint64(m), kp, kn)
	if err != nil {
		return err
	}
	if r[1] != 0 {
		return in.jsError(r[0])
	}
	return nil
}

// Commit commits the pending transaction.
func (in *Instance) Commit(ctx context.Context, d *Doc) error {
	r, err := in.ret(ctx, "lorodoc_commit", uint64(d.ptr), 0)
	if err != nil {
		return err
	}
	if r[1] != 0 {
		return in.jsError(r[0])
	}
	return nil
}

func (in *Instance) export(ctx context.Context, d *Doc, mode *Object) ([]byte, error) {
	r, err := in.ret(ctx, "lorodoc_export", uint64(d.ptr), uint64(in.heap.add(mode)))
	if err != nil {
		return nil, err
	}
	if r[3] != 0 {
		return nil, in.jsError(r[2])
	}
	return in.takeBytes(ctx, r[0], r[1])
}

// ExportUpdates is export({mode: "update", from}): every change not
// covered by the encoded version vector from (all of them when from is
// empty).
func (in *Instance) ExportUpdates(ctx context.Context, d *Doc, from []byte) ([]byte, error) {
	mode := NewObject()
	mode.Set("mode", "update")
	if len(from) > 0 {
		vv, err := in.decodeVV(ctx, from)
		if err != nil {
			return nil, err
		}
		defer in.freeVV(ctx, vv)
		mode.Set("from", &Wrapped{Class: "VersionVector", Ptr: vv})
	}
	return in.export(ctx, d, mode)
}

// ExportSnapshot is export({mode: "snapshot"}).
func (in *Instance) ExportSnapshot(ctx context.Context, d *Doc) ([]byte, error) {
	mode := NewObject()
	mode.Set("mode", "snapshot")
	return in.export(ctx, d, mode)
}

// ExportShallowSnapshot is export({mode: "shallow-snapshot", frontiers:
// oplogFrontiers()}): the current state with the history trimmed.
func (in *Instance) ExportShallowSnapshot(ctx context.Context, d *Doc) ([]byte, error) {
	r, err := in.ret(ctx, "lorodoc_oplogFrontiers", uint64(d.ptr))
	if err != nil {
		return nil, err
	}
	if r[2] != 0 {
		return nil, in.jsError(r[1])
	}
	mode := NewObject()
	mode.Set("mode", "shallow-snapshot")
	mode.Set("frontiers", in.heap.take(r[0]))
	return in.export(ctx, d, mode)
}

// ImportStatus is what an import did: the counter spans applied and those
// left pending behind a missing predecessor, by peer.
type ImportStatus struct {
	Success, Pending map[string][2]float64
}

// Import imports an update or snapshot.
func (in *Instance) Import(ctx context.Context, d *Doc, blob []byte) (ImportStatus, error) {
	var st ImportStatus
	p, n, err := in.alloc(ctx, blob)
	if err != nil {
		return st, err
	}
	r, err := in.ret(ctx, "lorodoc_import", uint64(d.ptr), p, n)
	if err != nil {
		return st, err
	}
	if r[2] != 0 {
		return st, in.jsError(r[1])
	}
	obj, ok := in.heap.take(r[0]).(*Object)
	if !ok {
		return st, fmt.Errorf("loro: import status is not an object")
	}
	st.Success = spans(obj.Get("success"))
	st.Pending = spans(obj.Get("pending"))
	return st, nil
}

func spans(v any) map[string][2]float64 {
	m, ok := v.(*Map)
	if !ok {
		return nil
	}
	out := map[string][2]float64{}
	for i, k := range m.Keys {
		o, ok := m.Vals[i].(*Object)
		ks, kok := k.(string)
		if !ok || !kok {
			continue
		}
		s, _ := o.Get("start").(float64)
		e, _ := o.Get("end").(float64)
		out[ks] = [2]float64{s, e}
	}
	return out
}

func (in *Instance) decodeVV(ctx context.Context, b []byte) (uint32, error) {
	p, n, err := in.alloc(ctx, b)
	if err != nil {
		return 0, err
	}
	r, err := in.ret(ctx, "versionvector_decode", p, n)
	if err != nil {
		return 0, err
	}
	if r[2] != 0 {
		return 0, in.jsError(r[1])
	}
	return r[0], nil
}

func (in *Instance) freeVV(ctx context.Context, vv uint32) {
	_, _ = in.Call(ctx, "__wbg_versionvector_free", uint64(vv), 0)
}

// encodeVV encodes and frees a VersionVector handle.
func (in *Instance) encodeVV(ctx context.Context, vv uint32) ([]byte, error) {
	defer in.freeVV(ctx, vv)
	r, err := in.ret(ctx, "versionvector_encode", uint64(vv))
	if err != nil {
		return nil, err
	}
	return in.takeBytes(ctx, r[0], r[1])
}

// OplogVersion is oplogVersion().encode(): the version vector of every
// change held (pending ones excluded).
func (in *Instance) OplogVersion(ctx context.Context, d *Doc) ([]byte, error) {
	res, err := in.Call(ctx, "lorodoc_oplogVersion", uint64(d.ptr))
	if err != nil {
		return nil, err
	}
	return in.encodeVV(ctx, uint32(res[0]))
}

// ShallowSince is shallowSinceVV().encode(): where the trimmed history
// ends (empty for a document with its whole history).
func (in *Instance) ShallowSince(ctx context.Context, d *Doc) ([]byte, error) {
	res, err := in.Call(ctx, "lorodoc_shallowSinceVV", uint64(d.ptr))
	if err != nil {
		return nil, err
	}
	return in.encodeVV(ctx, uint32(res[0]))
}

// ToJSON is toJSON(): the document's value as JS values.
func (in *Instance) ToJSON(ctx context.Context, d *Doc) (any, error) {
	r, err := in.ret(ctx, "lorodoc_toJSON", uint64(d.ptr))
	if err != nil {
		return nil, err
	}
	if r[2] != 0 {
		return nil, in.jsError(r[1])
	}
	return in.heap.take(r[0]), nil
}

// BlobMeta is decodeImportBlobMeta's answer.
type BlobMeta struct {
	Mode           string // "snapshot", "shallow-snapshot", "update", ...
	StartVV, EndVV []byte // encoded version vectors
	ChangeNum      float64
}

// DecodeBlobMeta reads a blob's header, verifying its checksum.
func (in *Instance) DecodeBlobMeta(ctx context.Context, blob []byte) (BlobMeta, error) {
	var m BlobMeta
	p, n, err := in.alloc(ctx, blob)
	if err != nil {
		return m, err
	}
	r, err := in.ret(ctx, "decodeImportBlobMeta", p, n, 1)
	if err != nil {
		return m, err
	}
	if r[2] != 0 {
		return m, in.jsError(r[1])
	}
	obj, ok := in.heap.take(r[0]).(*Object)
	if !ok {
		return m, fmt.Errorf("loro: blob meta is not an object")
	}
	m.Mode, _ = obj.Get("mode").(string)
	m.ChangeNum, _ = obj.Get("changeNum").(float64)
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{"partialStartVersionVector", &m.StartVV}, {"partialEndVersionVector", &m.EndVV}} {
		w, ok := obj.Get(f.key).(*Wrapped)
		if !ok {
			return m, fmt.Errorf("loro: blob meta has no %s", f.key)
		}
		if *f.dst, err = in.encodeVV(ctx, w.Ptr); err != nil {
			return m, err
		}
	}
	return m, nil
}

// MapGet is getMap(collection).get(key): the value under key as a JS value
// (Undefined when absent; a container arrives as a Wrapped handle, which
// is released here and answered as Undefined).
func (in *Instance) MapGet(ctx context.Context, d *Doc, collection, key string) (any, error) {
	m, err := in.rootMap(ctx, d, collection)
	if err != nil {
		return nil, err
	}
	kp, kn, err := in.alloc(ctx, []byte(key))
	if err != nil {
		return nil, err
	}
	res, err := in.Call(ctx, "loromap_get", uint64(m), kp, kn)
	if err != nil {
		return nil, err
	}
	v := in.heap.take(uint32(res[0]))
	if w, ok := v.(*Wrapped); ok {
		if _, err := in.Call(ctx, "__wbg_"+lower(w.Class)+"_free", uint64(w.Ptr), 0); err != nil {
			return nil, err
		}
		return Undefined{}, nil
	}
	return v, nil
}

// MapEntries is getMap(collection).entries(): each key with its value as
// a JS value, one level deep. A container under a key arrives as a Wrapped
// handle, which is released here and answered as Undefined, as MapGet
// answers it (toJSON would flatten it into a value instead).
func (in *Instance) MapEntries(ctx context.Context, d *Doc, collection string) (*Object, error) {
	m, err := in.rootMap(ctx, d, collection)
	if err != nil {
		return nil, err
	}
	r, err := in.ret(ctx, "loromap_entries", uint64(m))
	if err != nil {
		return nil, err
	}
	idx, ok := in.mod.Memory().Read(r[0], 4*r[1])
	if !ok {
		return nil, fmt.Errorf("%w: returned array outside memory", ErrTrapped)
	}
	entries := make([]any, r[1])
	for i := range entries {
		entries[i] = in.heap.take(uint32(idx[4*i]) | uint32(idx[4*i+1])<<8 | uint32(idx[4*i+2])<<16 | uint32(idx[4*i+3])<<24)
	}
	if _, err := in.Call(ctx, "__wbindgen_free", uint64(r[0]), uint64(4*r[1]), 4); err != nil {
		return nil, err
	}
	out := NewObject()
	for _, e := range entries {
		kv, ok := e.(*Array)
		if !ok || len(kv.Elems) != 2 {
			continue
		}
		k, _ := kv.Elems[0].(string)
		v := kv.Elems[1]
		if w, ok := v.(*Wrapped); ok {
			if _, ferr := in.Call(ctx, "__wbg_"+lower(w.Class)+"_free", uint64(w.Ptr), 0); ferr != nil && err == nil {
				err = ferr
			}
			v = Undefined{}
		}
		out.Set(k, v)
	}
	return out, err
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
