package tjson

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzUnmarshal checks that the reader never panics, that every error is an
// *Error matching ErrInvalid, and that whatever it accepts encoding/json
// accepts too, is valid UTF-8 JSON with no duplicate names, and decodes the
// same way twice.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{good, `{"a":1,"a":2}`, `"\ud800"`, `[1.5e3,-0]`, "\xef\xbb\xbf{}", `{"rec":"AAECAwQFBgcICQoLDA0ODw"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r recJSON
		err := Unmarshal(data, &r)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("untyped error %v", err)
			}
		}
		v, perr := Parse(data)
		if perr != nil {
			if err == nil {
				t.Fatal("Unmarshal accepted what Parse rejects")
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted text encoding/json rejects: %q", data)
		}
		if !utf8.Valid(data) {
			t.Fatalf("accepted invalid UTF-8: %q", data)
		}
		checkNoDup(t, v)
		var a, b any
		if (Unmarshal(data, &a) == nil) != (Unmarshal(data, &b) == nil) {
			t.Fatal("non-deterministic")
		}
	})
}

func checkNoDup(t *testing.T, v Value) {
	seen := map[string]bool{}
	for _, m := range v.members {
		if seen[m.Name] {
			t.Fatalf("duplicate %q accepted", m.Name)
		}
		seen[m.Name] = true
		checkNoDup(t, m.Value)
	}
	for _, e := range v.elems {
		checkNoDup(t, e)
	}
}
