package frame

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/vectors"
)

// TestVectorsFrames: every frame vector reads back and re-encodes to the same
// bytes (byte-exact output, field order, sorted keys, padded base64).
func TestVectorsFrames(t *testing.T) {
	vf := vectors.Load(t)
	if vf.Prefix != Prefix || vf.Version != int(V1) {
		t.Fatalf("vectors prefix %q version %d", vf.Prefix, vf.Version)
	}
	for _, v := range vf.Frames {
		t.Run(v.Name, func(t *testing.T) {
			f, err := Parse([]byte(v.Wire))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if string(f.Kind) != v.Kind || f.V != V1 {
				t.Fatalf("kind %q v %d", f.Kind, f.V)
			}
			if v.BlobHex != "" {
				want, _ := hex.DecodeString(v.BlobHex)
				if !bytes.Equal(f.Blob, want) {
					t.Fatalf("blob %x, want %s", f.Blob, v.BlobHex)
				}
			}
			out, err := Marshal(f)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(out) != v.Wire {
				t.Fatalf("Marshal\n got %s\nwant %s", out, v.Wire)
			}
		})
	}
}

// TestVectorsBuiltFromValues writes the vectors from values, not from a parse,
// so a reader and writer sharing a mistake cannot agree with each other.
func TestVectorsBuiltFromValues(t *testing.T) {
	vf := vectors.Load(t)
	hash := "d73deca5a2a317edda0925823c6c775c9acefea1d69889f22b27566b403d8a1c"
	blob := []byte{0, 1, 2, 3, 4, 5, 6, 7}
	built := []Frame{
		{V: 1, Kind: KindOffer, Docs: map[string][]byte{"notes": {1, 2, 3}}},
		{V: 1, Kind: KindOffer, Reply: true, Partial: true, Docs: map[string][]byte{"b": []byte("f"), "a": {}}},
		{V: 1, Kind: KindOffer, Docs: map[string][]byte{}},
		{V: 1, Kind: KindDelta, Doc: "notes", Blob: blob},
		{V: 1, Kind: KindSnap, Doc: "notes", Blob: blob},
		{V: 1, Kind: KindNeedSnap, Doc: "notes"},
		{V: 1, Kind: KindNeedBlob, Hash: hash},
		{V: 1, Kind: KindBlobGone, Hash: hash},
	}
	if len(built) != len(vf.Frames) {
		t.Fatalf("%d vectors, %d built", len(vf.Frames), len(built))
	}
	for i, f := range built {
		out, err := Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != vf.Frames[i].Wire {
			t.Errorf("%s:\n got %s\nwant %s", vf.Frames[i].Name, out, vf.Frames[i].Wire)
		}
	}
}

func TestVectorsParseDefaults(t *testing.T) {
	for _, v := range vectors.Load(t).ParseDefaults {
		f, err := Parse([]byte(Prefix + v.Body))
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if f.Reply != v.Expect.Reply || f.Partial != v.Expect.Partial {
			t.Fatalf("%s: reply %v partial %v", v.Name, f.Reply, f.Partial)
		}
	}
}

// TestVersionReadFirst: a frame of an unknown version is reported as such even
// when its body is not a v1 body, or not even complete JSON after v.
func TestVersionReadFirst(t *testing.T) {
	for _, w := range []string{
		`{"v":2,"k":"vv","docs":{}}`,
		`{"v":2,"k":`,
		`{"v":2,"k":"brand_new","payload":[1,2,{"x":null}]}`,
		`{"v":999,`,
	} {
		_, err := Parse([]byte(Prefix + w))
		if !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("%s: %v, want ErrUnknownVersion", w, err)
		}
	}
	// The same body under a version the caller knows parses.
	f, err := Parse([]byte(Prefix+`{"v":7,"k":"need_snap","doc":"x"}`), 7)
	if err != nil || f.V != 7 || f.Doc != "x" {
		t.Fatalf("known non-1 version: %+v %v", f, err)
	}
	// v=1 is unknown to a caller that reads only 7.
	if _, err := Parse([]byte(Prefix+`{"v":1,"k":"need_snap","doc":"x"}`), 7); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("v1 to a v7 reader: %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]error{
		`{"k":"vv","docs":{}}`:                               ErrMalformed,
		`{"v":1,"k":"vv","reply":null,"docs":{}}`:            ErrMalformed,
		`{"v":1,"k":"vv","reply":"true","docs":{}}`:          ErrMalformed,
		`{"v":1,"k":"vv"}`:                                   ErrMalformed,
		`{"v":1,"k":"vv","docs":{"a":"AQ"}}`:                 ErrMalformed, // unpadded
		`{"v":1,"k":"vv","docs":{"a":"AQ=="}} x`:             ErrMalformed,
		`{"v":1,"k":"vv","docs":{"a":"AQ==","a":"Ag=="}}`:    ErrMalformed,
		`{"v":1,"k":"vv","k":"vv","docs":{}}`:                ErrMalformed,
		`{"v":1,"k":"vv","docs":{"":"AQ=="}}`:                ErrMalformed,
		`{"v":1,"k":"delta","doc":"n","blob":"AAECAwQFBgc"}`: ErrMalformed,
		`{"v":1,"k":"delta","doc":"n","blob":"-_8="}`:        ErrMalformed, // URL alphabet
		`{"v":1,"k":"delta","blob":"AA=="}`:                  ErrMalformed,
		`{"v":1,"k":"snap","doc":5,"blob":"AA=="}`:           ErrMalformed,
		`{"v":1,"k":"need_blob","hash":"D73DECA5A2A317EDDA0925823C6C775C9ACEFEA1D69889F22B27566B403D8A1C"}`: ErrMalformed,
		`{"v":1,"k":"blob_gone","hash":"d73d"}`: ErrMalformed,
		`{"v":1,"k":"nope"}`:                    ErrUnknownKind,
		`{"v":1.5,"k":"vv","docs":{}}`:          ErrUnknownVersion, // not a JSON integer: no version (issue 17)
		`["v",1]`:                               ErrMalformed,
	}
	for w, want := range cases {
		if _, err := Parse([]byte(Prefix + w)); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", w, err, want)
		}
	}
	if _, err := Parse([]byte(`{"v":1,"k":"vv","docs":{}}`)); !errors.Is(err, ErrNotFrame) {
		t.Errorf("no prefix: %v", err)
	}
}

// TestBudgetBeforeDecoding: text that is not even base64 is refused for its
// declared size, proving the budget is checked before decoding.
func TestBudgetBeforeDecoding(t *testing.T) {
	over := strings.Repeat("!", (MaxDocumentBytes/3+1)*4)
	_, err := Parse([]byte(Prefix + `{"v":1,"k":"delta","doc":"big","blob":"` + over + `"}`))
	var ob *OverBudgetError
	if !errors.As(err, &ob) || ob.Doc != "big" {
		t.Fatalf("err %v, want OverBudgetError for big", err)
	}
	// Exactly the budget passes.
	f := Frame{V: 1, Kind: KindSnap, Doc: "d", Blob: make([]byte, MaxDocumentBytes)}
	w, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(w); err != nil {
		t.Fatalf("32 KiB snap: %v", err)
	}
	f.Blob = make([]byte, MaxDocumentBytes+1)
	if _, err := Marshal(f); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("Marshal over budget: %v", err)
	}
	if _, err := Parse(append([]byte(Prefix), make([]byte, MaxFrameBytes)...)); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("oversized frame: %v", err)
	}
}

func TestEscapingAndUnknownFields(t *testing.T) {
	f := Frame{V: 1, Kind: KindNeedSnap, Doc: "a\"b\\c\n<&>\x01é"}
	w, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := Prefix + `{"v":1,"k":"need_snap","doc":"a\"b\\c\n<&>\u0001é"}`
	if string(w) != want {
		t.Fatalf("got %s\nwant %s", w, want)
	}
	g, err := Parse([]byte(Prefix + `{"v":1,"k":"need_snap","future":{"x":[1]},"doc":"a\"b\\c\n<&>\u0001é"}`))
	if err != nil || !reflect.DeepEqual(g, f) {
		t.Fatalf("parse %+v %v", g, err)
	}
}

func TestGates(t *testing.T) {
	offer := Frame{V: 1, Kind: KindOffer}
	need := Frame{V: 1, Kind: KindNeedBlob}
	if err := Gate(Caps{1}, offer, EntryDocuments, false); err != nil {
		t.Fatal(err)
	}
	if err := Gate(Caps{2, 3}, offer, EntryDocuments, false); !errors.Is(err, ErrGated) {
		t.Fatal("vv without entry 1 allowed")
	}
	if err := Gate(Caps{1}, need, EntryDocuments, false); !errors.Is(err, ErrGated) {
		t.Fatal("need_blob without entry 3 allowed")
	}
	if err := Gate(Caps{1, 3}, need, EntryDocuments, false); err != nil {
		t.Fatal(err)
	}
	if err := Gate(Caps{1, 3}, offer, EntryDocuments, true); !errors.Is(err, ErrGated) {
		t.Fatal("group frame without entry 2 allowed")
	}
	if err := Gate(Caps{1, 2}, offer, EntryDocuments, true); err != nil {
		t.Fatal(err)
	}
}
