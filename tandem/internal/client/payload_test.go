package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// sampleWrites signs one write of each op in a collection.
func sampleWrites(t testing.TB) (scope [16]byte, rec [16]byte, ws []*record.Write) {
	id := suite.NewIdentity([32]byte{1})
	scope, rec = [16]byte{2}, [16]byte{3}
	st := record.NewState(record.NewValidator(record.Rules{Scope: scope}))
	wr := &record.Writer{Key: id.SignKey, Device: suite.DeviceID{4}, Clock: record.NewClock(suite.HLC{}, nil), Ref: [32]byte{5}}
	for _, c := range []record.Change{
		{Record: rec, Field: "title", Op: suite.OpAssign, Value: []byte("Milk")},
		{Record: rec, Field: "title", Op: suite.OpAssign, Value: nil},
		{Record: rec, Field: "tags ünï", Op: suite.OpAdd, Element: []byte("<dairy>")},
		{Record: rec, Field: "tags ünï", Op: suite.OpRemove, Element: []byte("<dairy>")},
		{Record: rec, Op: suite.OpDelete},
	} {
		w, _, err := st.Build(wr, c)
		if err != nil {
			t.Fatal(err)
		}
		if c.Op != suite.OpDelete {
			st.Add(w) // so later writes carry a context
		}
		ws = append(ws, w)
	}
	return scope, rec, ws
}

func TestPayloadRoundTrip(t *testing.T) {
	scope, rec, ws := sampleWrites(t)
	p := &RecordPayload{Record: rec, Writes: signedWrites(ws...)}
	pt, err := EncodeRecordPayload(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePayload(pt, scope)
	if err != nil {
		t.Fatalf("%v\n%s", err, pt)
	}
	if got.Record == nil || got.Record.Record != rec || len(got.Record.Writes) != len(ws) {
		t.Fatalf("decoded %+v", got)
	}
	v := record.NewValidator(record.Rules{Scope: scope})
	for i, sw := range got.Record.Writes {
		w, err := v.Validate(&sw.Body, sw.Sig, 0)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if w.ID() != ws[i].ID() {
			t.Fatalf("write %d: ID changed in transit", i)
		}
	}
	// "v" only on assign, "e" only on add/remove, "c" and "b" always.
	var raw struct{ Writes []map[string]json.RawMessage }
	if err := json.Unmarshal(pt, &raw); err != nil {
		t.Fatal(err)
	}
	for i, w := range raw.Writes {
		op := ws[i].Op()
		_, hasV := w["v"]
		_, hasE := w["e"]
		_, hasC := w["c"]
		_, hasB := w["b"]
		if hasV != (op == suite.OpAssign) || hasE != (op == suite.OpAdd || op == suite.OpRemove) || !hasC || !hasB {
			t.Fatalf("write %d (op %d): members %v", i, op, w)
		}
	}
}

func TestPayloadGenesisScope(t *testing.T) {
	chg, err := roster.Genesis(roster.Signer{Key: suite.NewIdentity([32]byte{1}).SignKey, Dot: suite.Dot{Device: suite.DeviceID{1}, HLC: suite.HLC{Millis: 1}}}, [32]byte{9}, "Me")
	if err != nil {
		t.Fatal(err)
	}
	st := chg.Statement
	pt, err := EncodeRecordPayload(&RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: st.Body(), Sig: st.Sig()}}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(pt, []byte(`"r"`)) {
		t.Fatalf("a genesis carries no r: %s", pt)
	}
	cid := roster.CollectionID(st.ID())
	got, err := DecodePayload(pt, cid)
	if err != nil {
		t.Fatal(err)
	}
	sw := got.Record.Writes[0]
	again, err := roster.NewStatement(sw.Body, sw.Sig)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != st.ID() || roster.ValidateGenesis(again) != nil {
		t.Fatal("genesis did not survive the payload")
	}
}

// validPayload is one write as the encoder writes it, for the mutations of
// TestPayloadRejects.
func validPayload(t *testing.T) (scope [16]byte, text string) {
	scope, rec, ws := sampleWrites(t)
	pt, err := EncodeRecordPayload(&RecordPayload{Record: rec, Writes: signedWrites(ws[2])})
	if err != nil {
		t.Fatal(err)
	}
	return scope, string(pt)
}

func TestPayloadRejects(t *testing.T) {
	scope, good := validPayload(t)
	if _, err := DecodePayload([]byte(good), scope); err != nil {
		t.Fatalf("valid payload rejected: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(good), &m); err != nil {
		t.Fatal(err)
	}
	w := m["writes"].([]any)[0].(map[string]any)
	set := func(k string, v any) string {
		w2 := map[string]any{}
		for kk, vv := range w {
			w2[kk] = vv
		}
		if v == nil {
			delete(w2, k)
		} else {
			w2[k] = v
		}
		b, _ := json.Marshal(map[string]any{"rec": m["rec"], "writes": []any{w2}})
		return string(b)
	}
	dev := w["d"].([]any)[0]
	cases := map[string]string{
		"duplicate member":    strings.Replace(good, `{"rec":`, `{"rec":"AAAAAAAAAAAAAAAAAAAAAA","rec":`, 1),
		"trailing data":       good + " {}",
		"both forms":          strings.Replace(good, `{"rec":`, `{"inventory":{},"rec":`, 1),
		"neither form":        `{"x":1}`,
		"rec without writes":  `{"rec":"AAAAAAAAAAAAAAAAAAAAAA"}`,
		"no writes":           `{"rec":"AAAAAAAAAAAAAAAAAAAAAA","writes":[]}`,
		"short rec":           `{"rec":"AAAA","writes":[{}]}`,
		"v on add":            set("v", "AA"),
		"e missing on add":    set("e", nil),
		"op unknown":          set("op", 5),
		"op fraction":         set("op", 2.5),
		"signature missing":   set("s", nil),
		"context missing":     set("c", nil),
		"zero r":              set("r", tjson.B64U(make([]byte, 32))),
		"short author":        set("a", "AAAA"),
		"padded b64u":         set("e", "PGRhaXJ5Pg=="),
		"standard alphabet":   set("e", "+/+/"),
		"dot of two":          set("d", []any{dev, 1}),
		"counter too large":   set("d", []any{dev, 1, 65536}),
		"millis beyond u48":   set("d", []any{dev, uint64(1) << 48, 0}),
		"negative millis":     set("d", []any{dev, -1, 0}),
		"short device":        set("d", []any{"AAAA", 1, 0}),
		"context not a list":  set("c", "x"),
		"null field":          set("f", json.RawMessage("null")),
		"lone surrogate name": strings.Replace(good, `"f":`, `"\ud800":1,"f":`, 1),
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := DecodePayload([]byte(text), scope)
			if err == nil {
				t.Fatalf("accepted %s as %+v", text, p)
			}
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("error %v does not match ErrPayload", err)
			}
		})
	}
}

func TestPayloadIgnoresUnknownMembers(t *testing.T) {
	scope, good := validPayload(t)
	text := strings.Replace(good, `"f":`, `"future":{"x":[1,2]},"f":`, 1)
	text = strings.Replace(text, `{"rec":`, `{"v2":true,"rec":`, 1)
	a, err := DecodePayload([]byte(good), scope)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodePayload([]byte(text), scope)
	if err != nil {
		t.Fatalf("unknown members must be ignored: %v", err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("unknown members changed the reading")
	}
}

// FuzzDecodePayload: any bytes decode without panicking, and whatever
// decodes re-encodes to a payload that decodes to the same writes.
func FuzzDecodePayload(f *testing.F) {
	_, rec, ws := sampleWrites(f)
	for i := range ws {
		pt, err := EncodeRecordPayload(&RecordPayload{Record: rec, Writes: signedWrites(ws[i])})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pt)
	}
	f.Add([]byte(`{"inventory":{"epoch":"AA","part":0,"parts":1,"bytes":"AA"}}`))
	f.Add([]byte(`{"rec":"AAAAAAAAAAAAAAAAAAAAAA","writes":[{"f":"","op":4,"a":"` + strings.Repeat("A", 43) + `","d":["AAAAAAAAAAA",0,0],"c":[],"b":[],"s":"` + strings.Repeat("A", 86) + `"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePayload(b, [16]byte{2})
		if err != nil {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("error %v does not match ErrPayload", err)
			}
			return
		}
		if p.Record == nil {
			return
		}
		again, err := EncodeRecordPayload(p.Record)
		if err != nil {
			t.Fatalf("decoded payload does not encode: %v", err)
		}
		q, err := DecodePayload(again, [16]byte{2})
		if err != nil {
			t.Fatalf("re-encoded payload rejected: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(normalize(p.Record), normalize(q.Record)) {
			t.Fatalf("round trip changed the payload:\n%s\n%s", b, again)
		}
	})
}

// normalize makes empty slices nil, so DeepEqual compares content.
func normalize(p *RecordPayload) *RecordPayload {
	out := &RecordPayload{Record: p.Record}
	for _, w := range p.Writes {
		b := w.Body
		if len(b.Value) == 0 {
			b.Value = nil
		}
		if len(b.Element) == 0 {
			b.Element = nil
		}
		out.Writes = append(out.Writes, SignedWrite{Body: b, Sig: w.Sig})
	}
	return out
}
