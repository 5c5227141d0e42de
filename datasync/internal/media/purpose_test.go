package media

import (
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/vectors"
)

func TestVectorsPurposes(t *testing.T) {
	want := map[string]Purpose{
		"attachment": {P: PurposeAttachment, Hash: "d73deca5a2a317edda0925823c6c775c9acefea1d69889f22b27566b403d8a1c"},
		"snapshot":   {P: PurposeSnapshot, Doc: "notes"},
	}
	vs := vectors.Load(t).DataPurposes
	if len(vs) != len(want) {
		t.Fatalf("%d purpose vectors", len(vs))
	}
	for _, v := range vs {
		p, err := ParsePurpose([]byte(v.JSON))
		if err != nil || p != want[v.Name] {
			t.Errorf("%s: parse %+v %v", v.Name, p, err)
		}
		out, err := want[v.Name].Marshal()
		if err != nil || string(out) != v.JSON {
			t.Errorf("%s: wrote %s %v", v.Name, out, err)
		}
	}
	for _, bad := range []string{`{"p":"file"}`, `{"p":"attachment","hash":"ABC"}`, `{"p":"snapshot"}`, `{"p":"snapshot","doc":""}`, `[]`} {
		if _, err := ParsePurpose([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
