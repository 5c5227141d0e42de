package interop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/protocol"
)

// Point (e) for the client side: owner keys and encrypted changes of
// evolu/client against the bytes of the real @evolu/common 8.11.0.

func TestVectorsOwnerKeys(t *testing.T) {
	var v struct {
		Owners []struct {
			Secret        string `json:"secret"`
			ID            string `json:"id"`
			IDBytes       string `json:"idBytes"`
			EncryptionKey string `json:"encryptionKey"`
			WriteKey      string `json:"writeKey"`
		} `json:"owners"`
		Slip21 []struct {
			Seed string `json:"seed"`
			Path []any  `json:"path"`
			Key  string `json:"key"`
		} `json:"slip21"`
	}
	loadVectors(t, "owners.json", &v)
	for _, c := range v.Owners {
		o := ferryOwner(t, c.Secret)
		if o.ID.String() != c.ID || hex.EncodeToString(o.ID[:]) != c.IDBytes ||
			hex.EncodeToString(o.EncryptionKey[:]) != c.EncryptionKey || hex.EncodeToString(o.WriteKey[:]) != c.WriteKey {
			t.Errorf("secret %s: Ferry owner %s %x %x, TS %s %s %s", c.Secret, o.ID, o.EncryptionKey, o.WriteKey, c.ID, c.EncryptionKey, c.WriteKey)
		}
	}
	for _, c := range v.Slip21 {
		path := make([]string, len(c.Path))
		for i, p := range c.Path {
			switch p := p.(type) {
			case string:
				path[i] = p
			case float64:
				path[i] = strconv.FormatFloat(p, 'f', -1, 64) // TS element.toString()
			}
		}
		key := client.SLIP21(unhex(t, c.Seed), path...)
		if hex.EncodeToString(key[:]) != c.Key {
			t.Errorf("SLIP21(%s, %v) = %x, TS %s", c.Seed, c.Path, key, c.Key)
		}
	}
}

// vValue is a SqliteValue of the vectors.
type vValue struct {
	Kind         string  `json:"kind"`
	V            any     `json:"v"`
	NegativeZero bool    `json:"negativeZero"`
	Hex          *string `json:"hex"`
}

func (v vValue) value(t testing.TB) client.Value {
	t.Helper()
	switch v.Kind {
	case "null":
		return nil
	case "bytes":
		return unhex(t, *v.Hex)
	case "number":
		if v.NegativeZero {
			return math.Copysign(0, -1)
		}
		return v.V.(float64)
	default:
		return v.V.(string)
	}
}

// sameValue compares values bit for bit (so -0 differs from 0).
func sameValue(a, b client.Value) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b)
	case []byte:
		b, ok := b.([]byte)
		return ok && bytes.Equal(a, b)
	default:
		return a == b
	}
}

func TestVectorsEncryptedChanges(t *testing.T) {
	var v struct {
		Changes []struct {
			Name      string     `json:"name"`
			Timestamp vTimestamp `json:"timestamp"`
			Change    struct {
				Table    string  `json:"table"`
				ID       string  `json:"id"`
				RawVals  [][]any `json:"values"`
				IsInsert bool    `json:"isInsert"`
				IsDelete *bool   `json:"isDelete"`
			} `json:"change"`
			DecodedValues [][]any `json:"decodedValues"`
			Key           string  `json:"key"`
			Nonce         string  `json:"nonce"`
			Encrypted     string  `json:"encrypted"`
		} `json:"changes"`
		Errors []struct {
			Name      string     `json:"name"`
			Timestamp vTimestamp `json:"timestamp"`
			Encrypted string     `json:"encrypted"`
			Key       string     `json:"key"`
			OK        bool       `json:"ok"`
			Error     *string    `json:"error"`
		} `json:"errors"`
	}
	loadVectors(t, "dbchanges.json", &v)
	toValue := func(raw any) client.Value {
		m := raw.(map[string]any)
		vv := vValue{Kind: m["kind"].(string), V: m["v"]}
		if nz, ok := m["negativeZero"].(bool); ok {
			vv.NegativeZero = nz
		}
		if h, ok := m["hex"].(string); ok {
			vv.Hex = &h
		}
		return vv.value(t)
	}
	for _, c := range v.Changes {
		id, err := protocol.ParseID(c.Change.ID)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		change := client.DbChange{Table: c.Change.Table, ID: id, IsInsert: c.Change.IsInsert, IsDelete: c.Change.IsDelete}
		for _, kv := range c.Change.RawVals {
			change.Values = append(change.Values, client.Column{Name: kv[0].(string), Value: toValue(kv[1])})
		}
		var key [32]byte
		copy(key[:], unhex(t, c.Key))
		ts := c.Timestamp.ts(t)
		enc, err := client.EncryptChange(bytes.NewReader(unhex(t, c.Nonce)), ts, change, key)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if hex.EncodeToString(enc) != c.Encrypted {
			t.Errorf("%s: Ferry encrypts to %d bytes that differ from TS's %d", c.Name, len(enc), len(c.Encrypted)/2)
		}
		dec, err := client.DecryptChange(protocol.EncryptedMessage{Timestamp: ts, Change: unhex(t, c.Encrypted)}, key)
		if err != nil {
			t.Errorf("%s: Ferry cannot read the TS change: %v", c.Name, err)
			continue
		}
		if len(dec.Values) != len(c.DecodedValues) {
			t.Errorf("%s: %d values, TS decodes %d", c.Name, len(dec.Values), len(c.DecodedValues))
			continue
		}
		for i, kv := range c.DecodedValues {
			want := toValue(kv[1])
			if dec.Values[i].Name != kv[0].(string) || !sameValue(dec.Values[i].Value, want) {
				t.Errorf("%s: column %d = %s %#v, TS %s %#v", c.Name, i, dec.Values[i].Name, dec.Values[i].Value, kv[0], want)
			}
		}
	}
	for _, c := range v.Errors {
		var key [32]byte
		copy(key[:], unhex(t, c.Key))
		_, err := client.DecryptChange(protocol.EncryptedMessage{Timestamp: c.Timestamp.ts(t), Change: unhex(t, c.Encrypted)}, key)
		var mismatch *protocol.TimestampMismatchError
		switch {
		case c.OK:
			if err != nil {
				t.Errorf("%s: %v, TS reads it", c.Name, err)
			}
		case *c.Error == "DecryptWithXChaCha20Poly1305Error":
			if !errors.Is(err, client.ErrDecrypt) {
				t.Errorf("%s: %v, TS %s", c.Name, err, *c.Error)
			}
		case *c.Error == "ProtocolTimestampMismatchError":
			if !errors.As(err, &mismatch) {
				t.Errorf("%s: %v, TS %s", c.Name, err, *c.Error)
			}
		default:
			if !errors.Is(err, protocol.ErrInvalidData) {
				t.Errorf("%s: %v, TS %s", c.Name, err, *c.Error)
			}
		}
	}
}

// TestVectorsPushContinuation: createProtocolMessageFromCrdtMessages with more
// than fits in 1 MB ends with a Fingerprint range of random bytes; Ferry's
// NewPushRequest with the same encrypted changes and random bytes makes the
// same message.
func TestVectorsPushContinuation(t *testing.T) {
	var v struct {
		OwnerID      string `json:"ownerId"`
		WriteKey     string `json:"writeKey"`
		Continuation struct {
			RandomBytes []string `json:"randomBytes"`
			Length      int      `json:"length"`
			SHA256      string   `json:"sha256"`
			Tail        string   `json:"tail"`
		} `json:"continuation"`
	}
	loadVectors(t, "rbsr.json", &v)
	owner := ferryOwner(t, loadOwner(t, 0).Secret) // testAppOwner
	if owner.ID.String() != v.OwnerID {
		t.Fatalf("owner %s, vectors %s", owner.ID, v.OwnerID)
	}
	id, _ := protocol.ParseID("AAAAAAAAAAAAAAAAAAAAAA")
	nonces := v.Continuation.RandomBytes[:len(v.Continuation.RandomBytes)-1]
	var msgs []protocol.EncryptedMessage
	for i, n := range nonces {
		ts := protocol.Timestamp{Millis: 1700000000000 + uint64(i), NodeID: protocol.NodeID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}}
		c := client.DbChange{Table: "big", ID: id, Values: []client.Column{{Name: "v", Value: strings.Repeat("z", 100000+i)}}, IsInsert: true}
		enc, err := client.EncryptChange(bytes.NewReader(unhex(t, n)), ts, c, owner.EncryptionKey)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, protocol.EncryptedMessage{Timestamp: ts, Change: enc})
	}
	fp := unhex(t, v.Continuation.RandomBytes[len(v.Continuation.RandomBytes)-1])
	got, added, err := protocol.NewPushRequest(owner.ID, owner.WriteKey, msgs, 0, bytes.NewReader(fp))
	if err != nil {
		t.Fatal(err)
	}
	if added != len(msgs)-1 {
		t.Errorf("added %d of %d; TS stopped at the last encrypted one", added, len(msgs))
	}
	sum := sha256.Sum256(got)
	if len(got) != v.Continuation.Length || hex.EncodeToString(sum[:]) != v.Continuation.SHA256 {
		t.Errorf("push request: %d bytes sha256 %x tail %x; TS %d bytes %s tail %s",
			len(got), sum, got[max(0, len(got)-40):], v.Continuation.Length, v.Continuation.SHA256, v.Continuation.Tail)
	}
}
