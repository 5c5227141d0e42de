package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// goodBody is a valid assign by user 1.
func goodBody() suite.WriteBody {
	return suite.WriteBody{Scope: testScope, Record: r1, Field: "title", Op: suite.OpAssign, Value: []byte("v"),
		Author: pubOf(key(1)), Dot: dot(1, 10, 0), Ref: [32]byte{1}, Context: suite.VV{}, Base: suite.VV{}}
}

func signBody(t *testing.T, b suite.WriteBody) []byte {
	t.Helper()
	_, _, sig, err := suite.SignWrite(key(1), &b)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestValidateRejects(t *testing.T) {
	longVV := make(suite.VV, suite.MaxVVEntries+1)
	for i := range longVV {
		longVV[i] = suite.Dot{Device: suite.DeviceID{byte(i >> 8), byte(i)}}
	}
	cases := []struct {
		name   string
		edit   func(*suite.WriteBody)
		resign bool // sign after editing (else the edit breaks the signature)
		want   error
	}{
		{"tampered value", func(b *suite.WriteBody) { b.Value = []byte("w") }, false, ErrSignature},
		{"tampered context", func(b *suite.WriteBody) { b.Context = vv(dot(2, 1, 0)) }, false, ErrSignature},
		{"other author", func(b *suite.WriteBody) { b.Author = pubOf(key(2)) }, true, ErrSignature},
		{"context over limit", func(b *suite.WriteBody) { b.Context = longVV }, false, ErrMalformed},
		{"base over limit", func(b *suite.WriteBody) { b.Base = longVV }, false, ErrMalformed},
		{"unsorted context", func(b *suite.WriteBody) { b.Context = suite.VV{dot(2, 1, 0), dot(1, 1, 0)} }, false, ErrMalformed},
		{"repeated device", func(b *suite.WriteBody) { b.Base = suite.VV{dot(2, 1, 0), dot(2, 2, 0)} }, false, ErrMalformed},
		{"millis beyond 48 bits", func(b *suite.WriteBody) { b.Dot.HLC.Millis = 1 << 48 }, false, ErrMalformed},
		{"unknown op", func(b *suite.WriteBody) { b.Op = 5 }, false, ErrMalformed},
		{"op zero", func(b *suite.WriteBody) { b.Op = 0 }, false, ErrMalformed},
		{"element on assign", func(b *suite.WriteBody) { b.Element = []byte("e") }, true, ErrOpShape},
		{"value on add", func(b *suite.WriteBody) { b.Op, b.Element = suite.OpAdd, []byte("e") }, true, ErrOpShape},
		{"value on remove", func(b *suite.WriteBody) { b.Op = suite.OpRemove }, true, ErrOpShape},
		{"value on delete", func(b *suite.WriteBody) { b.Op, b.Field = suite.OpDelete, "" }, true, ErrOpShape},
		{"element on delete", func(b *suite.WriteBody) { b.Op, b.Field, b.Value, b.Element = suite.OpDelete, "", nil, []byte("e") }, true, ErrOpShape},
		{"delete of _meta", func(b *suite.WriteBody) {
			b.Op, b.Field, b.Value, b.Record = suite.OpDelete, "", nil, suite.NamedRecordID("_meta")
		}, true, ErrNamedDelete},
		{"delete of app-named record", func(b *suite.WriteBody) {
			b.Op, b.Field, b.Value, b.Record = suite.OpDelete, "", nil, suite.NamedRecordID("settings")
		}, true, ErrNamedDelete},
		{"write to _roster", func(b *suite.WriteBody) { b.Record = suite.NamedRecordID("_roster") }, true, ErrReservedRecord},
		{"reserved field", func(b *suite.WriteBody) { b.Field = "_secret" }, true, ErrReservedField},
		{"_name not matching the record", func(b *suite.WriteBody) { b.Field, b.Value = "_name", []byte("other") }, true, ErrReservedField},
		{"_name as a set", func(b *suite.WriteBody) {
			b.Record, b.Field, b.Op, b.Value, b.Element = suite.NamedRecordID("_meta"), "_name", suite.OpAdd, nil, []byte("_meta")
		}, true, ErrReservedField},
		{"field not UTF-8", func(b *suite.WriteBody) { b.Field = "ti\xfftle" }, true, ErrField},
		{"other scope", func(b *suite.WriteBody) { b.Scope[0] ^= 1 }, true, ErrScope},
		{"short signature", nil, false, ErrSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := goodBody()
			sig := signBody(t, b)
			if c.edit == nil {
				sig = sig[:63]
			} else {
				c.edit(&b)
			}
			if c.resign {
				// A valid signature over the edited body, where one can be made.
				if _, _, s2, err := suite.SignWrite(key(1), &b); err == nil {
					sig = s2
				}
			}
			s := NewState(testValidator())
			s.Add(rawWrite(t, goodBody(), 0)) // something already stored
			before := encode(t, s)
			w, changed, err := s.Ingest(&b, sig, 1)
			if !errors.Is(err, c.want) || w != nil || changed {
				t.Fatalf("Ingest = %v, %v, %v; want error %v", w, changed, err, c.want)
			}
			if !bytes.Equal(encode(t, s), before) {
				t.Fatal("rejected write changed the state")
			}
			// Verify, the first half of Validate, rejects it the same way.
			if x, err := testValidator().Verify(&b, sig); !errors.Is(err, c.want) || x != nil {
				t.Fatalf("Verify = %v, %v; want error %v", x, err, c.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	maxVV := make(suite.VV, suite.MaxVVEntries)
	for i := range maxVV {
		maxVV[i] = suite.Dot{Device: suite.DeviceID{byte(i >> 8), byte(i)}}
	}
	cases := map[string]func(*suite.WriteBody){
		"assign":               func(*suite.WriteBody) {},
		"empty value":          func(b *suite.WriteBody) { b.Value = nil },
		"empty field name":     func(b *suite.WriteBody) { b.Field = "" },
		"non-ASCII field":      func(b *suite.WriteBody) { b.Field = "e\u0301t\u00e9" },
		"add":                  func(b *suite.WriteBody) { b.Op, b.Value, b.Element = suite.OpAdd, nil, []byte("x") },
		"add of empty element": func(b *suite.WriteBody) { b.Op, b.Value = suite.OpAdd, nil },
		"remove":               func(b *suite.WriteBody) { b.Op, b.Value, b.Element = suite.OpRemove, nil, []byte("x") },
		"delete":               func(b *suite.WriteBody) { b.Op, b.Field, b.Value = suite.OpDelete, "", nil },
		"1024 context entries": func(b *suite.WriteBody) { b.Context = maxVV },
		"1024 base entries":    func(b *suite.WriteBody) { b.Base = maxVV },
		"_name of a named record": func(b *suite.WriteBody) {
			b.Record, b.Field, b.Value = suite.NamedRecordID("_meta"), "_name", []byte("_meta")
		},
		"assign to _meta": func(b *suite.WriteBody) { b.Record = suite.NamedRecordID("_meta") },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			b := goodBody()
			edit(&b)
			sig := signBody(t, b)
			s := NewState(testValidator())
			w, changed, err := s.Ingest(&b, sig, 3)
			if err != nil || !changed {
				t.Fatalf("Ingest: changed=%v err=%v", changed, err)
			}
			si, _ := b.SigInput()
			if w.ID() != suite.WriteID(si) || w.Epoch() != 3 || !s.Holds(w) {
				t.Fatal("write ID, epoch or state wrong")
			}
			// The state keeps its own copy of the caller's slices.
			if len(b.Value) > 0 {
				b.Value[0] ^= 1
				if bytes.Equal(w.Value(), b.Value) {
					t.Fatal("write aliases the caller's value")
				}
			}
		})
	}
}

func TestHomeForbidsDelete(t *testing.T) {
	v := NewValidator(Rules{Scope: testScope, Home: true})
	b := goodBody()
	b.Op, b.Field, b.Value = suite.OpDelete, "", nil
	if _, err := v.Validate(&b, signBody(t, b), 0); !errors.Is(err, ErrNamedDelete) {
		t.Fatalf("delete in home: %v", err)
	}
}
