package protocol

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzSeeds are the messages of the conformance vectors.
func fuzzSeeds(f *testing.F) {
	var v struct {
		Cases []struct {
			Hex string `json:"hex"`
		} `json:"cases"`
	}
	// Package protocol cannot import evolu/internal/vectors (it imports
	// protocol), so the seeds read the file directly.
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "evolu", "messages.json"))
	if err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		f.Fatal(err)
	}
	for _, c := range v.Cases {
		if b, err := hex.DecodeString(c.Hex); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1})
}

// FuzzDecode: decoding never panics, and what decodes re-encodes to a
// message that decodes to the same value.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidData) {
				t.Fatalf("error %v is not ProtocolInvalidDataError", err)
			}
			return
		}
		if m.Version != Version {
			return
		}
		out, err := Encode(m)
		if err != nil {
			// Messages whose millis decrease cannot be re-encoded by a
			// TimestampsBuffer; they are still valid input.
			return
		}
		m2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(m), normalize(m2)) {
			t.Fatalf("round trip differs")
		}
	})
}

func normalize(m *Message) *Message {
	c := *m
	for i := range c.Ranges {
		if c.Ranges[i].Type != RangeTimestamps {
			c.Ranges[i].Timestamps = nil
		} else if c.Ranges[i].Timestamps == nil {
			c.Ranges[i].Timestamps = []TimestampBytes{}
		}
	}
	return &c
}

type storeState struct {
	size int
	fp   Fingerprint
	key  bool
}

func state(t *testing.T, st *MemoryStorage, o OwnerID) storeState {
	ctx := context.Background()
	n, _ := st.Size(ctx, o)
	fp, _ := st.Fingerprint(ctx, o, 0, n)
	st.mu.Lock()
	key := st.owner(o).key != nil
	st.mu.Unlock()
	return storeState{n, fp, key}
}

// FuzzApplyAsRelay: the relay never panics; input it rejects changes no
// state, subscribes nobody and broadcasts nothing; every reply is a
// decodable Response within the size limit.
func FuzzApplyAsRelay(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		st := NewMemoryStorage()
		var owner OwnerID
		if len(b) >= 17 {
			copy(owner[:], b[1:17])
		}
		seed := []EncryptedMessage{{Timestamp: Timestamp{Millis: 5}, Change: bytes.Repeat([]byte{1}, 50)}}
		_ = st.WriteMessages(ctx, owner, seed)
		before := state(t, st, owner)
		effects := 0
		reply, err := ApplyAsRelay(ctx, st, b, RelayOptions{
			Subscribe:   func(OwnerID) { effects++ },
			Unsubscribe: func(OwnerID) { effects++ },
			Broadcast:   func(OwnerID, []byte) { effects++ },
		})
		if err != nil {
			if !errors.Is(err, ErrInvalidData) || reply != nil {
				t.Fatalf("err %v reply %x", err, reply)
			}
			if effects != 0 || state(t, st, owner) != before {
				t.Fatal("rejected input had an effect")
			}
			return
		}
		if len(reply) > DefaultMaxSize {
			t.Fatalf("reply of %d bytes", len(reply))
		}
		h, err := ParseHeader(reply)
		if err == nil && h.Version == Version {
			m, err := Decode(reply)
			if err != nil || m.Type != Response {
				t.Fatalf("reply does not decode as a response: %v", err)
			}
		}
	})
}

// FuzzApplyAsClient: the client never panics and writes nothing from a
// message it cannot decode.
func FuzzApplyAsClient(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		st := NewMemoryStorage()
		var owner OwnerID
		if len(b) >= 17 {
			copy(owner[:], b[1:17])
		}
		key := WriteKey{1}
		res, err := ApplyAsClient(ctx, st, b, ClientOptions{WriteKey: &key})
		if err != nil {
			if n, _ := st.Size(ctx, owner); n != 0 {
				t.Fatal("failed input wrote messages")
			}
			return
		}
		if res.Outcome == ContinueResponse && len(res.Message) > DefaultMaxSize {
			t.Fatalf("continuation of %d bytes", len(res.Message))
		}
	})
}
