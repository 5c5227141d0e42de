package changecodec

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

// jsonValue is a vector's SqliteValue: {kind, v, hex, negativeZero}.
type jsonValue struct {
	Kind         string          `json:"kind"`
	V            json.RawMessage `json:"v"`
	Hex          string          `json:"hex"`
	NegativeZero bool            `json:"negativeZero"`
}

func (j jsonValue) value(t *testing.T) Value {
	switch j.Kind {
	case "null":
		return nil
	case "bytes":
		return vectors.Unhex(t, j.Hex)
	case "string":
		var s string
		if err := json.Unmarshal(j.V, &s); err != nil {
			t.Fatal(err)
		}
		return s
	case "number":
		var f float64
		if err := json.Unmarshal(j.V, &f); err != nil {
			t.Fatal(err)
		}
		if j.NegativeZero {
			f = math.Copysign(0, -1)
		}
		return f
	}
	t.Fatalf("kind %q", j.Kind)
	return nil
}

func sameValue(a, b Value) bool {
	fa, ok1 := a.(float64)
	fb, ok2 := b.(float64)
	if ok1 && ok2 {
		return fa == fb && math.Signbit(fa) == math.Signbit(fb)
	}
	return reflect.DeepEqual(a, b)
}

func TestVectorsValues(t *testing.T) {
	var v struct {
		Values []struct {
			Value   jsonValue `json:"value"`
			Hex     string    `json:"hex"`
			Tag     int       `json:"tag"`
			Decoded jsonValue `json:"decoded"`
		} `json:"values"`
	}
	vectors.Load(t, "values.json", &v)
	if len(v.Values) < 50 {
		t.Fatalf("only %d values", len(v.Values))
	}
	for _, c := range v.Values {
		val := c.Value.value(t)
		got, err := appendValue(nil, val)
		if err != nil || hex.EncodeToString(got) != c.Hex {
			t.Errorf("encode %#v = %x (%v), want %s", val, got, err, c.Hex)
			continue
		}
		d := valueDecoder{b: got}
		dec, err := d.value()
		if err != nil || len(d.b) != 0 || !sameValue(dec, c.Decoded.value(t)) {
			t.Errorf("decode %s = %#v (%v), want %#v", c.Hex, dec, err, c.Decoded.value(t))
		}
	}
}

func TestVectorsDbChanges(t *testing.T) {
	var v struct {
		Changes []struct {
			Name      string            `json:"name"`
			Timestamp vectors.Timestamp `json:"timestamp"`
			Change    struct {
				Table    string   `json:"table"`
				ID       string   `json:"id"`
				Values   [][2]any `json:"values"`
				IsInsert bool     `json:"isInsert"`
				IsDelete *bool    `json:"isDelete"`
			} `json:"change"`
			DecodedValues [][2]any `json:"decodedValues"`
			Key           string   `json:"key"`
			Nonce         string   `json:"nonce"`
			Plaintext     string   `json:"plaintext"`
			Encrypted     string   `json:"encrypted"`
		} `json:"changes"`
		Errors []struct {
			Name      string            `json:"name"`
			Timestamp vectors.Timestamp `json:"timestamp"`
			Encrypted string            `json:"encrypted"`
			Key       string            `json:"key"`
			OK        bool              `json:"ok"`
			Error     string            `json:"error"`
		} `json:"errors"`
	}
	vectors.Load(t, "dbchanges.json", &v)
	cols := func(raw [][2]any) []Column {
		var out []Column
		for _, p := range raw {
			b, _ := json.Marshal(p[1])
			var jv jsonValue
			if err := json.Unmarshal(b, &jv); err != nil {
				t.Fatal(err)
			}
			out = append(out, Column{Name: p[0].(string), Value: jv.value(t)})
		}
		return out
	}
	for _, c := range v.Changes {
		id, err := protocol.ParseID(c.Change.ID)
		if err != nil {
			t.Fatal(err)
		}
		ch := DbChange{Table: c.Change.Table, ID: id, Values: cols(c.Change.Values), IsInsert: c.Change.IsInsert, IsDelete: c.Change.IsDelete}
		var key [32]byte
		copy(key[:], vectors.Unhex(t, c.Key))
		ts := c.Timestamp.Timestamp(t)
		enc, err := EncryptChange(bytes.NewReader(vectors.Unhex(t, c.Nonce)), ts, ch, key)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if hex.EncodeToString(enc) != c.Encrypted {
			t.Errorf("%s: encrypted differs\n got %x\nwant %s", c.Name, enc, c.Encrypted)
		}
		got, err := DecryptChange(protocol.EncryptedMessage{Timestamp: ts, Change: vectors.Unhex(t, c.Encrypted)}, key)
		if err != nil {
			t.Fatalf("%s: decrypt: %v", c.Name, err)
		}
		want := cols(c.DecodedValues)
		if got.Table != ch.Table || got.ID != ch.ID || got.IsInsert != ch.IsInsert || !reflect.DeepEqual(got.IsDelete, ch.IsDelete) || len(got.Values) != len(want) {
			t.Fatalf("%s: decoded %+v", c.Name, got)
		}
		for i := range want {
			if got.Values[i].Name != want[i].Name || !sameValue(got.Values[i].Value, want[i].Value) {
				t.Errorf("%s: column %d = %#v, want %#v", c.Name, i, got.Values[i], want[i])
			}
		}
	}
	for _, c := range v.Errors {
		var key [32]byte
		copy(key[:], vectors.Unhex(t, c.Key))
		_, err := DecryptChange(protocol.EncryptedMessage{Timestamp: c.Timestamp.Timestamp(t), Change: vectors.Unhex(t, c.Encrypted)}, key)
		var tm *protocol.TimestampMismatchError
		var name string
		switch {
		case err == nil:
		case errors.Is(err, ErrDecrypt):
			name = "DecryptWithXChaCha20Poly1305Error"
		case errors.As(err, &tm):
			name = "ProtocolTimestampMismatchError"
		case errors.Is(err, protocol.ErrInvalidData):
			name = "ProtocolInvalidDataError"
		default:
			name = err.Error()
		}
		if (err == nil) != c.OK || name != c.Error && !c.OK {
			t.Errorf("%s: %v (%s), want ok=%v %s", c.Name, err, name, c.OK, c.Error)
		}
	}
}

func TestPadme(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 8: 8, 9: 10, 100: 104, 1000: 1024, 1025: 1088} {
		if got := padmeLength(n); got != want {
			t.Errorf("padme(%d) = %d, want %d", n, got, want)
		}
	}
}
