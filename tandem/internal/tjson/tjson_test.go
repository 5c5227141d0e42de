package tjson

import (
	"errors"
	"strings"
	"testing"
)

type dotJSON struct {
	Dev   [8]byte
	Milli uint64
	Ctr   uint16
}

func (d *dotJSON) UnmarshalTJSON(v Value) error {
	var raw [3]Value
	if err := v.Decode(&raw); err != nil {
		return err
	}
	if err := raw[0].Decode(&d.Dev); err != nil {
		return err
	}
	if err := raw[1].Decode(&d.Milli); err != nil {
		return err
	}
	return raw[2].Decode(&d.Ctr)
}

type writeJSON struct {
	F  string    `json:"f" tjson:"required"`
	Op uint8     `json:"op" tjson:"required"`
	V  Bytes     `json:"v"`
	E  []byte    `json:"e"`
	D  dotJSON   `json:"d"`
	C  []dotJSON `json:"c"`
	OK *bool     `json:"ok"`
	N  int64     `json:"n"`
}

type recJSON struct {
	Rec    [16]byte    `json:"rec" tjson:"required"`
	Writes []writeJSON `json:"writes"`
}

const good = `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"t\u00e9tle","op":1,"v":"aGk",
 "d":["AQIDBAUGBwg",9007199254740991,0],"c":[["AQIDBAUGBwg",1,2]],"ok":true,"n":-5,"unknown":{"x":[1.5e3,null]}}]}`

func TestUnmarshalGood(t *testing.T) {
	var r recJSON
	if err := Unmarshal([]byte(good), &r); err != nil {
		t.Fatal(err)
	}
	if r.Rec[15] != 15 || len(r.Writes) != 1 {
		t.Fatalf("rec %x writes %d", r.Rec, len(r.Writes))
	}
	w := r.Writes[0]
	if w.F != "tétle" || w.Op != 1 || string(w.V) != "hi" || w.D.Milli != MaxInteger || w.D.Dev[7] != 8 ||
		len(w.C) != 1 || w.C[0].Ctr != 2 || w.OK == nil || !*w.OK || w.N != -5 {
		t.Fatalf("decoded %+v", w)
	}
}

func TestRejects(t *testing.T) {
	cases := []struct {
		name string
		text string
		want error
	}{
		{"duplicate", `{"rec":"AAECAwQFBgcICQoLDA0ODw","rec":"AAECAwQFBgcICQoLDA0ODw"}`, ErrDuplicateName},
		{"duplicate after unescape", `{"rec":"AAECAwQFBgcICQoLDA0ODw","r\u0065c":"AAECAwQFBgcICQoLDA0ODw"}`, ErrDuplicateName},
		{"duplicate unknown nested", `{"rec":"AAECAwQFBgcICQoLDA0ODw","x":{"a":1,"a":2}}`, ErrDuplicateName},
		{"invalid utf8", "{\"rec\":\"AAECAwQFBgcICQoLDA0ODw\",\"x\":\"\xff\"}", ErrInvalidUTF8},
		{"encoded surrogate", "{\"rec\":\"AAECAwQFBgcICQoLDA0ODw\",\"x\":\"\xed\xa0\x80\"}", ErrInvalidUTF8},
		{"invalid utf8 in name", "{\"rec\":\"AAECAwQFBgcICQoLDA0ODw\",\"\xc3\":1}", ErrInvalidUTF8},
		{"lone high surrogate", `{"rec":"AAECAwQFBgcICQoLDA0ODw","x":"\ud800"}`, ErrLoneSurrogate},
		{"lone low surrogate", `{"rec":"AAECAwQFBgcICQoLDA0ODw","x":"\udc00x"}`, ErrLoneSurrogate},
		{"high then non-low", `{"rec":"AAECAwQFBgcICQoLDA0ODw","x":"\ud800\u0041"}`, ErrLoneSurrogate},
		{"trailing", `{"rec":"AAECAwQFBgcICQoLDA0ODw"} {}`, ErrTrailingData},
		{"trailing garbage", `{"rec":"AAECAwQFBgcICQoLDA0ODw"}x`, ErrTrailingData},
		{"bom", "\xef\xbb\xbf{\"rec\":\"AAECAwQFBgcICQoLDA0ODw\"}", ErrSyntax},
		{"fraction", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":1.0}]}`, ErrInteger},
		{"exponent", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":1e0}]}`, ErrInteger},
		{"minus unsigned", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":-0}]}`, ErrInteger},
		{"above 2^53-1", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":1,"d":["AQIDBAUGBwg",9007199254740992,0]}]}`, ErrInteger},
		{"overflow u8", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":256}]}`, ErrInteger},
		{"wrong type", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":1,"op":1}]}`, ErrType},
		{"null field", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":1,"ok":null}]}`, ErrType},
		{"null string", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":null,"op":1}]}`, ErrType},
		{"missing required", `{"writes":[]}`, ErrMissing},
		{"case is not folded", `{"REC":"AAECAwQFBgcICQoLDA0ODw"}`, ErrMissing},
		{"b64 padding", `{"rec":"AAECAwQFBgcICQoLDA0ODw=="}`, ErrBytes},
		{"b64 std alphabet", `{"rec":"AAECAwQFBgcICQoLDA0O+w"}`, ErrBytes},
		{"b64 trailing bits", `{"rec":"AAECAwQFBgcICQoLDA0ODx"}`, ErrBytes},
		{"b64 wrong length", `{"rec":"AAECAwQFBgcICQoLDA0O"}`, ErrBytes},
		{"tuple length", `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[{"f":"a","op":1,"d":["AQIDBAUGBwg",1]}]}`, ErrType},
		{"leading zero", `{"n":01}`, ErrSyntax},
		{"control char", "{\"rec\":\"a\nb\"}", ErrSyntax},
		{"single quotes", `{'rec':1}`, ErrSyntax},
		{"trailing comma", `{"rec":"AAECAwQFBgcICQoLDA0ODw",}`, ErrSyntax},
		{"empty", ``, ErrSyntax},
		{"deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), ErrDepth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := recJSON{Writes: []writeJSON{{F: "keep"}}}
			err := Unmarshal([]byte(c.text), &r)
			if !errors.Is(err, c.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if len(r.Writes) != 1 || r.Writes[0].F != "keep" {
				t.Fatal("a rejected text changed the target")
			}
		})
	}
}

func TestValidAccepts(t *testing.T) {
	for _, s := range []string{`0`, `-0.5e-3`, `"\ud83d\ude00"`, ` [ ] `, `{"":1,"\u0000":2}`, `"é"`, `true`, `null`,
		`{"a":{"a":{"a":1}}}`, `[1,2,{"b":[]}]`} {
		if err := Valid([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	var s string
	if err := Unmarshal([]byte(`"\ud83d\ude00\n\/"`), &s); err != nil || s != "😀\n/" {
		t.Fatalf("%q %v", s, err)
	}
}

func TestIntegerBounds(t *testing.T) {
	var n int64
	if err := Unmarshal([]byte(`-9007199254740991`), &n); err != nil || n != -MaxInteger {
		t.Fatal(n, err)
	}
	if err := Unmarshal([]byte(`-9007199254740992`), &n); !errors.Is(err, ErrInteger) {
		t.Fatal(err)
	}
	if err := Unmarshal([]byte(`99999999999999999999999`), &n); !errors.Is(err, ErrInteger) {
		t.Fatal(err)
	}
}

func TestGenericAny(t *testing.T) {
	var v any
	if err := Unmarshal([]byte(`{"a":[1,"x",null,true]}`), &v); err != nil {
		t.Fatal(err)
	}
	a := v.(map[string]any)["a"].([]any)
	if a[0] != NumberLiteral("1") || a[1] != "x" || a[2] != nil || a[3] != true {
		t.Fatalf("%#v", a)
	}
}

func TestBytesMarshal(t *testing.T) {
	b, _ := Bytes{0xfb, 0xff}.MarshalJSON()
	if string(b) != `"-_8"` {
		t.Fatalf("%s", b)
	}
	var out Bytes
	if err := Unmarshal(b, &out); err != nil || out[0] != 0xfb || out[1] != 0xff {
		t.Fatal(out, err)
	}
}

// encoding/base64 skips CR and LF even in strict mode; the one reading of
// JSON must not, or "AAAA" and "AA\nAA" would be two spellings of one value.
func TestB64URejectsNewlines(t *testing.T) {
	for _, s := range []string{"AA\nAA", "AA\rAA", "AAAA\n", "\r\nAAAA"} {
		if _, err := DecodeB64U(s); err == nil {
			t.Errorf("DecodeB64U(%q) accepted", s)
		}
		var v struct {
			B Bytes `json:"b"`
		}
		doc := `{"b":"` + strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s) + `"}`
		if err := Unmarshal([]byte(doc), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted", doc)
		}
	}
	if b, err := DecodeB64U("AAAA"); err != nil || len(b) != 3 {
		t.Fatalf("DecodeB64U(AAAA) = %x, %v", b, err)
	}
}

// TestNullIntoInterface: null read into an interface value is nil (it
// panicked, found by FuzzUnmarshal: testdata/fuzz/FuzzUnmarshal).
func TestNullIntoInterface(t *testing.T) {
	var v any = "old"
	if err := Unmarshal([]byte("null"), &v); err != nil || v != nil {
		t.Fatalf("null into any: %v, %v", v, err)
	}
	var s struct {
		A any `json:"a"`
	}
	if err := Unmarshal([]byte(`{"a":null}`), &s); err != nil || s.A != nil {
		t.Fatalf(`{"a":null}: %v, %v`, s.A, err)
	}
}

// An error names where in the text it is, down to the value: through
// struct members, slice and array elements, map members and values an
// Unmarshaler decodes.
func TestErrorPath(t *testing.T) {
	const rec = `"rec":"AAECAwQFBgcICQoLDA0ODw"`
	for _, c := range []struct {
		text, path string
		reason     error
	}{
		{`[1]`, ".", ErrType},
		{`{"writes":[]}`, ".rec", ErrMissing},
		{`{` + rec + `,"writes":[{"f":"a","op":1},{"op":1}]}`, ".writes[1].f", ErrMissing},
		{`{` + rec + `,"writes":[{"f":"a","op":"x"}]}`, ".writes[0].op", ErrType},
		{`{` + rec + `,"writes":[{"f":"a","op":256}]}`, ".writes[0].op", ErrInteger},
		{`{` + rec + `,"writes":[{"f":"a","op":1,"c":[["AQIDBAUGBwg",1,2],["AQIDBAUGBwg",1,70000]]}]}`, ".writes[0].c[1]", ErrInteger},
		{`{` + rec + `,"writes":[{"f":"a","op":1,"d":["AQIDBAUGBwg",1]}]}`, ".writes[0].d", ErrType},
		{`{"rec":"AAEC",` + `"writes":[]}`, ".rec", nil},
	} {
		var r recJSON
		err := Unmarshal([]byte(c.text), &r)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: error %v, want an *Error", c.text, err)
			continue
		}
		if e.Path != c.path || (c.reason != nil && !errors.Is(err, c.reason)) {
			t.Errorf("%s: %v (path %q), want path %q and %v", c.text, err, e.Path, c.path, c.reason)
		}
	}
	var m map[string][]uint16
	err := Unmarshal([]byte(`{"a":[1],"b":[2,-1]}`), &m)
	var e *Error
	if !errors.As(err, &e) || e.Path != ".b[1]" {
		t.Errorf("map: %v, want the path .b[1]", err)
	}
}
