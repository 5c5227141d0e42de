package loro

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/loro/internal/lorowasm"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
)

// TestValuesRoundTrip: every DATA_V1 value kind written on one replica
// reads back the same on another.
func TestValuesRoundTrip(t *testing.T) {
	a, b := newEngine(t, 1), newEngine(t, 2)
	vals := map[string]Value{
		"null":  {Kind: Null},
		"true":  {Kind: Bool, Bool: true},
		"int":   {Kind: Int, Int: -MaxSafeInt},
		"float": {Kind: Float, Float: 0.1},
		"text":  {Kind: Text, Text: "ünïcode ✓"},
		"bytes": {Kind: Bytes, Bytes: []byte{0, 1, 255}},
		"ref":   {Kind: Attachment, Ref: refFor("a.jpg")},
		"bare":  {Kind: Attachment, Ref: attach.Ref{Hash: testHash, Size: 9}},
	}
	for k, v := range vals {
		check(t, a.SetIn("d", "c", k, v))
	}
	if out, _ := b.Import("d", must[[]byte](t)(a.Changes("d", nil))); out != engine.Applied {
		t.Fatal(out)
	}
	if got := b.Values("d", "c"); !reflect.DeepEqual(got, vals) {
		t.Fatalf("read back %+v", got)
	}
	if v, ok := b.GetIn("d", "c", "bytes"); !ok || !bytes.Equal(v.Bytes, []byte{0, 1, 255}) {
		t.Fatalf("GetIn %+v %v", v, ok)
	}
	if _, ok := b.GetIn("d", "c", "absent"); ok {
		t.Fatal("absent key read as present")
	}
}

// TestValuesRefused: values the model cannot carry are refused where they
// are written, with ErrValue or the reference's bound error, and write
// nothing.
func TestValuesRefused(t *testing.T) {
	e := newEngine(t, 1)
	check(t, e.Set("d", "k", tv("kept")))
	before := must[[]byte](t)(e.Version("d"))
	for name, v := range map[string]Value{
		"int past 2^53": {Kind: Int, Int: MaxSafeInt + 1},
		"NaN":           {Kind: Float, Float: math.NaN()},
		"infinity":      {Kind: Float, Float: math.Inf(1)},
		"bad UTF-8":     {Kind: Text, Text: "\xff"},
		"bad hash":      {Kind: Attachment, Ref: attach.Ref{Hash: "ABC", Size: 1}},
		"zero size":     {Kind: Attachment, Ref: attach.Ref{Hash: testHash}},
		"unknown kind":  {Kind: Kind(99)},
	} {
		err := e.Set("d", "x", v)
		if err == nil || !(errors.Is(err, ErrValue) || errors.Is(err, attach.ErrInvalidRef)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, key := range []string{"", "\xfe"} {
		if err := e.Set("d", key, tv("v")); !errors.Is(err, ErrValue) {
			t.Errorf("key %q: %v", key, err)
		}
	}
	if got := must[[]byte](t)(e.Version("d")); !bytes.Equal(got, before) {
		t.Fatal("a refused write changed the version")
	}
}

// TestMalformedReferenceReadsAbsent: a map value from a peer that is not a
// well-formed attachment reference reads as absent, as the reference's
// from_engine_value does; integral floats read as integers (Loro's wasm
// build carries numbers as doubles).
func TestMalformedReferenceReadsAbsent(t *testing.T) {
	obj := func(kv ...any) *lorowasm.Object {
		o := lorowasm.NewObject()
		for i := 0; i < len(kv); i += 2 {
			o.Set(kv[i].(string), kv[i+1])
		}
		return o
	}
	for name, x := range map[string]*lorowasm.Object{
		"no tag":        obj("hash", testHash, "size", 1.0),
		"other tag":     obj("kind", "Attachment", "hash", testHash, "size", 1.0),
		"bad hash":      obj("kind", "attachment", "hash", "x", "size", 1.0),
		"negative size": obj("kind", "attachment", "hash", testHash, "size", -1.0),
		"float size":    obj("kind", "attachment", "hash", testHash, "size", 1.5),
		"name not text": obj("kind", "attachment", "hash", testHash, "size", 1.0, "name", 7.0),
	} {
		if v, ok := fromJS(x); ok {
			t.Errorf("%s read as %+v", name, v)
		}
	}
	if v, ok := fromJS(obj("kind", "attachment", "hash", testHash, "size", 3.0, "mime", "text/plain")); !ok || v.Ref.Mime != "text/plain" {
		t.Fatalf("control reference: %+v %v", v, ok)
	}
	if v, _ := fromJS(2.0); v.Kind != Int || v.Int != 2 {
		t.Fatalf("2.0 read as %+v", v)
	}
}
