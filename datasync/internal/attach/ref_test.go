package attach

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/vectors"
)

const vecHash = "d73deca5a2a317edda0925823c6c775c9acefea1d69889f22b27566b403d8a1c"

func TestVectorsHashes(t *testing.T) {
	for _, v := range vectors.Load(t).AttachmentHashes {
		var in []byte
		if v.InputUTF8 != nil {
			in = []byte(*v.InputUTF8)
		} else {
			in, _ = hex.DecodeString(*v.InputHex)
		}
		if int64(len(in)) != v.Size || Hash(in) != v.SHA256 {
			t.Errorf("hash %s size %d, want %s %d", Hash(in), len(in), v.SHA256, v.Size)
		}
		_, err := Of(in, "", "")
		if (v.Size == 0) != (err != nil) {
			t.Errorf("size %d: Of err %v (zero-length is not a valid attachment)", v.Size, err)
		}
	}
}

func TestVectorsDigests(t *testing.T) {
	for _, v := range vectors.Load(t).BlobDigests {
		in, _ := hex.DecodeString(v.InputHex)
		if got := Digest(in); got != v.Digest {
			t.Errorf("digest %s, want %s", got, v.Digest)
		}
	}
}

func TestVectorsReferences(t *testing.T) {
	refs := vectors.Load(t).AttachmentReferences
	want := []Ref{
		{Hash: vecHash, Size: 34, Name: "plan.pdf", Mime: "application/pdf"},
		{Hash: vecHash, Size: 34},
	}
	if len(refs) != len(want) {
		t.Fatalf("%d reference vectors", len(refs))
	}
	for i, v := range refs {
		r, ok := Read([]byte(v.JSON))
		if !ok || r != want[i] {
			t.Errorf("%s: read %+v %v", v.Name, r, ok)
		}
		out, err := want[i].Marshal()
		if err != nil || string(out) != v.JSON {
			t.Errorf("%s: wrote %s %v\nwant %s", v.Name, out, err, v.JSON)
		}
	}
}

// TestReadBounds breaks each bound of §Attachments on the read side: each
// input reads as absent.
func TestReadBounds(t *testing.T) {
	up := strings.ToUpper(vecHash)
	absent := map[string]string{
		"uppercase hash, not case-folded": `{"kind":"attachment","hash":"` + up + `","size":34}`,
		"short hash":                      `{"kind":"attachment","hash":"d73d","size":34}`,
		"65-char hash":                    `{"kind":"attachment","hash":"` + vecHash + `0","size":34}`,
		"non-hex hash":                    `{"kind":"attachment","hash":"` + strings.Repeat("g", 64) + `","size":34}`,
		"zero size":                       `{"kind":"attachment","hash":"` + vecHash + `","size":0}`,
		"negative size":                   `{"kind":"attachment","hash":"` + vecHash + `","size":-1}`,
		"size past 2^63-1":                `{"kind":"attachment","hash":"` + vecHash + `","size":9223372036854775808}`,
		"float size":                      `{"kind":"attachment","hash":"` + vecHash + `","size":34.0}`,
		"string size":                     `{"kind":"attachment","hash":"` + vecHash + `","size":"34"}`,
		"no size":                         `{"kind":"attachment","hash":"` + vecHash + `"}`,
		"no hash":                         `{"kind":"attachment","size":34}`,
		"no kind":                         `{"hash":"` + vecHash + `","size":34}`,
		"unknown kind":                    `{"kind":"attachment2","hash":"` + vecHash + `","size":34}`,
		"name 257 bytes":                  `{"kind":"attachment","hash":"` + vecHash + `","size":34,"name":"` + strings.Repeat("a", 257) + `"}`,
		"name 129 two-byte runes":         `{"kind":"attachment","hash":"` + vecHash + `","size":34,"name":"` + strings.Repeat("é", 129) + `"}`,
		"mime 256 bytes":                  `{"kind":"attachment","hash":"` + vecHash + `","size":34,"mime":"` + strings.Repeat("a", 256) + `"}`,
		"null name":                       `{"kind":"attachment","hash":"` + vecHash + `","size":34,"name":null}`,
		"numeric mime":                    `{"kind":"attachment","hash":"` + vecHash + `","size":34,"mime":5}`,
		"duplicate hash":                  `{"kind":"attachment","hash":"` + vecHash + `","hash":"` + vecHash + `","size":34}`,
		"not an object":                   `"attachment"`,
		"trailing data":                   `{"kind":"attachment","hash":"` + vecHash + `","size":34} {}`,
	}
	for name, in := range absent {
		if r, ok := Read([]byte(in)); ok {
			t.Errorf("%s: read as %+v, want absent", name, r)
		}
	}
	edge := map[string]string{
		"max size":              `{"kind":"attachment","hash":"` + vecHash + `","size":9223372036854775807}`,
		"name 256 bytes":        `{"kind":"attachment","hash":"` + vecHash + `","size":1,"name":"` + strings.Repeat("a", 256) + `"}`,
		"mime 255 bytes":        `{"kind":"attachment","hash":"` + vecHash + `","size":1,"mime":"` + strings.Repeat("a", 255) + `"}`,
		"unknown field ignored": `{"kind":"attachment","thumb":{"w":1},"hash":"` + vecHash + `","size":34}`,
	}
	for name, in := range edge {
		if _, ok := Read([]byte(in)); !ok {
			t.Errorf("%s: read as absent", name)
		}
	}
}

// TestWriteBounds breaks each bound on the write side.
func TestWriteBounds(t *testing.T) {
	bad := []Ref{
		{Hash: strings.ToUpper(vecHash), Size: 1},
		{Hash: vecHash[:63], Size: 1},
		{Hash: vecHash, Size: 0},
		{Hash: vecHash, Size: -5},
		{Hash: vecHash, Size: 1, Name: strings.Repeat("n", 257)},
		{Hash: vecHash, Size: 1, Mime: strings.Repeat("m", 256)},
		{Hash: vecHash, Size: 1, Name: "\xff"},
	}
	for _, r := range bad {
		if out, err := r.Marshal(); !errors.Is(err, ErrInvalidRef) {
			t.Errorf("%+v written as %s", r, out)
		}
	}
	r := Ref{Hash: vecHash, Size: MaxSize, Name: strings.Repeat("n", 256), Mime: strings.Repeat("m", 255)}
	out, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if back, ok := Read(out); !ok || back != r {
		t.Fatalf("round trip at the bounds: %+v %v", back, ok)
	}
	if strings.Contains(string(mustBytes(Ref{Hash: vecHash, Size: 2}.Marshal())), "null") {
		t.Fatal("absent field written as null")
	}
}

func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzRead: no input panics, and anything read as a reference re-encodes to a
// canonical map that reads back to the same reference.
func FuzzRead(f *testing.F) {
	for _, v := range vectors.Load(f).AttachmentReferences {
		f.Add([]byte(v.JSON))
	}
	f.Add([]byte(`{"kind":"attachment","hash":"` + vecHash + `","size":9223372036854775807,"x":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, ok := Read(in)
		if !ok {
			return
		}
		if err := r.Check(); err != nil {
			t.Fatalf("Read accepted an invalid reference: %v", err)
		}
		out, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, ok := Read(out)
		if !ok || back != r {
			t.Fatalf("canonical form does not read back: %s", out)
		}
	})
}
