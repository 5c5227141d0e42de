package changecodec

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

// FuzzDecodeValue: decodeSqliteValue never panics, and a decoded value
// encodes to bytes that decode to the same value.
func FuzzDecodeValue(f *testing.F) {
	var v struct {
		Values []struct {
			Hex string `json:"hex"`
		} `json:"values"`
	}
	vectors.Load(f, "values.json", &v)
	for _, c := range v.Values {
		b, _ := hex.DecodeString(c.Hex)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := valueDecoder{b: b}
		val, err := d.value()
		if err != nil {
			return
		}
		enc, err := appendValue(nil, val)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", val, err)
		}
		d2 := valueDecoder{b: enc}
		val2, err := d2.value()
		if err != nil || len(d2.b) != 0 || !sameValue(val, val2) {
			t.Fatalf("%#v -> %x -> %#v (%v)", val, enc, val2, err)
		}
	})
}

// FuzzDecryptChange: decryptAndDecodeDbChange never panics on any change
// bytes or plaintext.
func FuzzDecryptChange(f *testing.F) {
	key := [32]byte{7}
	ts := protocol.Timestamp{Millis: 1}
	enc, _ := EncryptChange(bytes.NewReader(make([]byte, 24)), ts, DbChange{Table: "t", Values: []Column{{Name: "a", Value: "b"}}}, key)
	f.Add(enc, false)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 't'}, true)
	f.Fuzz(func(t *testing.T, b []byte, plaintext bool) {
		if plaintext {
			_, _ = decodePlaintext(b, ts)
			return
		}
		_, _ = DecryptChange(protocol.EncryptedMessage{Timestamp: ts, Change: b}, key)
	})
}
