package client

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

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
		if o.id.String() != c.ID || hex.EncodeToString(o.id[:]) != c.IDBytes ||
			hex.EncodeToString(o.encryptionKey[:]) != c.EncryptionKey || hex.EncodeToString(o.writeKey[:]) != c.WriteKey {
			t.Errorf("owner of %s = %s %x %x", c.Secret, o.id, o.encryptionKey, o.writeKey)
		}
	}
	for _, c := range v.SLIP21 {
		var path []string
		for _, p := range c.Path {
			path = append(path, fmt.Sprint(p))
		}
		k := protocol.SLIP21(vectors.Unhex(t, c.Seed), path...)
		if hex.EncodeToString(k[:]) != c.Key {
			t.Errorf("slip21 %v = %x, want %s", path, k, c.Key)
		}
	}
}

// TestVectorsPushContinuation reproduces the random-fingerprint
// continuation of createProtocolMessageFromCrdtMessages byte for byte, with
// newPushRequest and with protocol.NewPushRequest over the changes encrypted
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
	if o.id.String() != v.OwnerID {
		t.Fatalf("owner %s, vectors %s", o.id, v.OwnerID)
	}
	random := v.Continuation.RandomBytes
	id, _ := protocol.ParseID("AAAAAAAAAAAAAAAAAAAAAA")
	msgs := make([]crdtMessage, len(random)-1)
	for i := range msgs {
		msgs[i] = crdtMessage{
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
		got, n, err := newPushRequest(rd, o, msgs, 0)
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
			c, err := changecodec.EncryptChange(bytes.NewReader(vectors.Unhex(t, random[i])), m.Timestamp, m.Change, o.encryptionKey)
			if err != nil {
				t.Fatal(err)
			}
			enc = append(enc, protocol.EncryptedMessage{Timestamp: m.Timestamp, Change: c})
		}
		fp := vectors.Unhex(t, random[len(random)-1])
		got, added, err := protocol.NewPushRequest(o.id, o.writeKey, enc, 0, bytes.NewReader(fp))
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, added)
	})
}
