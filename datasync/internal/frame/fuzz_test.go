package frame

import (
	"reflect"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/vectors"
)

// FuzzParse: no input panics, and anything Parse accepts re-encodes to bytes
// that parse to the same frame and re-encode identically.
func FuzzParse(f *testing.F) {
	for _, v := range vectors.Load(f).Frames {
		f.Add([]byte(v.Wire))
	}
	f.Add([]byte(Prefix + `{"v":2,"k":`))
	f.Add([]byte(Prefix + `{"v":1,"k":"vv","docs":{"a":"","b":"Zg=="},"partial":true}`))
	f.Fuzz(func(t *testing.T, wire []byte) {
		fr, err := Parse(wire)
		if err != nil {
			return
		}
		out, err := Marshal(fr)
		if err != nil {
			t.Fatalf("accepted frame does not re-encode: %v (%+v)", err, fr)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("re-encoded frame does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(fr, again) {
			t.Fatalf("round trip changed the frame:\n%+v\n%+v", fr, again)
		}
		out2, _ := Marshal(again)
		if string(out) != string(out2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", out, out2)
		}
	})
}
