package client

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
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

func TestVectorsOwners(t *testing.T) {
	var v struct {
		Owners []struct {
			Secret        string `json:"secret"`
			ID            string `json:"id"`
			IDBytes       string `json:"idBytes"`
			EncryptionKey string `json:"encryptionKey"`
			WriteKey      string `json:"writeKey"`
		} `json:"owners"`
		SLIP21 []struct {
			Seed string `json:"seed"`
			Path []any  `json:"path"`
			Key  string `json:"key"`
		} `json:"slip21"`
	}
	vectors.Load(t, "owners.json", &v)
	if len(v.Owners) == 0 {
		t.Fatal("no owners")
	}
	for _, c := range v.Owners {
		sec, err := ParseSecret(c.Secret)
		if err != nil {
			t.Fatal(err)
		}
		o := OwnerFromSecret(sec)
		if o.ID.String() != c.ID || hex.EncodeToString(o.ID[:]) != c.IDBytes ||
			hex.EncodeToString(o.EncryptionKey[:]) != c.EncryptionKey || hex.EncodeToString(o.WriteKey[:]) != c.WriteKey {
			t.Errorf("owner of %s = %s %x %x", c.Secret, o.ID, o.EncryptionKey, o.WriteKey)
		}
	}
	for _, c := range v.SLIP21 {
		var path []string
		for _, p := range c.Path {
			path = append(path, fmt.Sprint(p))
		}
		k := SLIP21(vectors.Unhex(t, c.Seed), path...)
		if hex.EncodeToString(k[:]) != c.Key {
			t.Errorf("slip21 %v = %x, want %s", path, k, c.Key)
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

// TestVectorsPushContinuation reproduces the random-fingerprint
// continuation of createProtocolMessageFromCrdtMessages byte for byte, with
// NewPushRequest and with protocol.NewPushRequest over the changes encrypted
// with the vectors' nonces. RandomBytes are the nonces of the changes TS
// encrypted (all but the last fitted), then the fingerprint.
func TestVectorsPushContinuation(t *testing.T) {
	var v struct {
		OwnerID      string `json:"ownerId"`
		Continuation struct {
			RandomBytes []string `json:"randomBytes"`
			Length      int      `json:"length"`
			SHA256      string   `json:"sha256"`
			Tail        string   `json:"tail"`
		} `json:"continuation"`
	}
	vectors.Load(t, "rbsr.json", &v)
	var ow struct {
		Owners []struct {
			Secret string `json:"secret"`
		} `json:"owners"`
	}
	vectors.Load(t, "owners.json", &ow)
	sec, err := ParseSecret(ow.Owners[0].Secret) // testAppOwner
	if err != nil {
		t.Fatal(err)
	}
	o := OwnerFromSecret(sec)
	if o.ID.String() != v.OwnerID {
		t.Fatalf("owner %s, vectors %s", o.ID, v.OwnerID)
	}
	random := v.Continuation.RandomBytes
	id, _ := protocol.ParseID("AAAAAAAAAAAAAAAAAAAAAA")
	msgs := make([]CrdtMessage, len(random)-1)
	for i := range msgs {
		msgs[i] = CrdtMessage{
			Timestamp: protocol.Timestamp{Millis: uint64(1_700_000_000_000 + i), NodeID: protocol.NodeID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}},
			Change:    DbChange{Table: "big", ID: id, Values: []Column{{Name: "v", Value: strings.Repeat("z", 100000+i)}}, IsInsert: true},
		}
	}
	check := func(t *testing.T, got []byte, added int) {
		t.Helper()
		if len(got) != v.Continuation.Length || vectors.SHA256(got) != v.Continuation.SHA256 || !strings.HasSuffix(hex.EncodeToString(got), v.Continuation.Tail) {
			t.Errorf("continuation: %d bytes sha256 %s tail %x; TS %d bytes %s tail %s",
				len(got), vectors.SHA256(got), got[max(0, len(got)-40):], v.Continuation.Length, v.Continuation.SHA256, v.Continuation.Tail)
		}
		if added != len(msgs)-1 {
			t.Errorf("added %d of %d; TS stopped at the last encrypted one", added, len(msgs))
		}
	}
	t.Run("client", func(t *testing.T) {
		var all []byte
		for _, r := range random {
			all = append(all, vectors.Unhex(t, r)...)
		}
		rd := bytes.NewReader(all)
		got, n, err := NewPushRequest(rd, o, msgs, 0)
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, n)
		if rd.Len() != 0 {
			t.Errorf("%d random bytes unused", rd.Len())
		}
	})
	t.Run("protocol", func(t *testing.T) {
		var enc []protocol.EncryptedMessage
		for i, m := range msgs {
			c, err := EncryptChange(bytes.NewReader(vectors.Unhex(t, random[i])), m.Timestamp, m.Change, o.EncryptionKey)
			if err != nil {
				t.Fatal(err)
			}
			enc = append(enc, protocol.EncryptedMessage{Timestamp: m.Timestamp, Change: c})
		}
		fp := vectors.Unhex(t, random[len(random)-1])
		got, added, err := protocol.NewPushRequest(o.ID, o.WriteKey, enc, 0, bytes.NewReader(fp))
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, added)
	})
}
