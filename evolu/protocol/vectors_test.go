package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The vectors in testdata/evolu are made by the real @evolu/common 8.11.0
// (see testdata/evolu/README.md); Ferry must reproduce them.

func loadVectors(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "evolu", name))
	if err != nil {
		t.Fatalf("vectors: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("vectors %s: %v", name, err)
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

type jsonTimestamp struct {
	Millis  uint64 `json:"millis"`
	Counter uint16 `json:"counter"`
	NodeID  string `json:"nodeId"`
}

func (j jsonTimestamp) ts(t *testing.T) Timestamp {
	var n NodeID
	copy(n[:], unhex(t, j.NodeID))
	return Timestamp{Millis: j.Millis, Counter: j.Counter, NodeID: n}
}

func TestVectorsVarint(t *testing.T) {
	var v struct {
		Encode []struct {
			Value uint64 `json:"value"`
			Hex   string `json:"hex"`
		} `json:"encode"`
		Decode []struct {
			Hex   string  `json:"hex"`
			Error string  `json:"error"`
			Value *uint64 `json:"value"`
			Rest  string  `json:"rest"`
		} `json:"decode"`
	}
	loadVectors(t, "varint.json", &v)
	if len(v.Encode) == 0 || len(v.Decode) == 0 {
		t.Fatal("no vectors")
	}
	for _, c := range v.Encode {
		if got := hex.EncodeToString(AppendNonNegativeInt(nil, c.Value)); got != c.Hex {
			t.Errorf("encode %d = %s, want %s", c.Value, got, c.Hex)
		}
	}
	for _, c := range v.Decode {
		d := decoder{b: unhex(t, c.Hex)}
		got, err := d.nonNegativeInt()
		if c.Error != "" {
			if err == nil {
				t.Errorf("decode %s = %d, want error %q", c.Hex, got, c.Error)
			}
			continue
		}
		if err != nil || got != *c.Value || hex.EncodeToString(d.b) != c.Rest {
			t.Errorf("decode %s = %d rest %x (%v), want %d rest %s", c.Hex, got, d.b, err, *c.Value, c.Rest)
		}
	}
}

func TestVectorsTimestamps(t *testing.T) {
	var v struct {
		Timestamps []struct {
			Timestamp   jsonTimestamp `json:"timestamp"`
			Bytes       string        `json:"bytes"`
			Fingerprint string        `json:"fingerprint"`
		} `json:"timestamps"`
		Buffers []struct {
			Name       string          `json:"name"`
			Timestamps []jsonTimestamp `json:"timestamps"`
			Infinite   int             `json:"infinite"`
			Hex        string          `json:"hex"`
		} `json:"buffers"`
	}
	loadVectors(t, "timestamps.json", &v)
	for _, c := range v.Timestamps {
		ts := c.Timestamp.ts(t)
		b := ts.Bytes()
		if hex.EncodeToString(b[:]) != c.Bytes {
			t.Errorf("%v bytes %x, want %s", ts, b, c.Bytes)
		}
		if b.Timestamp() != ts {
			t.Errorf("%v round trip", ts)
		}
		fp := TimestampFingerprint(b)
		if hex.EncodeToString(fp[:]) != c.Fingerprint {
			t.Errorf("%v fingerprint %x, want %s", ts, fp, c.Fingerprint)
		}
	}
	for _, c := range v.Buffers {
		var tb TimestampsBuffer
		for _, j := range c.Timestamps {
			if err := tb.Add(j.ts(t)); err != nil {
				t.Fatal(err)
			}
		}
		for range c.Infinite {
			tb.AddInfinite()
		}
		got := tb.Append(nil)
		if hex.EncodeToString(got) != c.Hex {
			t.Errorf("%s: %x, want %s", c.Name, got, c.Hex)
		}
		if tb.Len() != len(got) {
			t.Errorf("%s: Len %d, encoded %d", c.Name, tb.Len(), len(got))
		}
		if c.Infinite == 0 {
			d := decoder{b: got}
			n, _ := d.nonNegativeInt()
			ts, err := d.timestamps(n)
			if err != nil || len(ts) != len(c.Timestamps) || d.remaining() != 0 {
				t.Errorf("%s: decode %v", c.Name, err)
			}
			for i := range ts {
				if ts[i] != c.Timestamps[i].ts(t) {
					t.Errorf("%s: decoded %d differs", c.Name, i)
				}
			}
		}
	}
}

type jsonRange struct {
	Type        RangeType       `json:"type"`
	UpperBound  *string         `json:"upperBound"`
	Fingerprint string          `json:"fingerprint"`
	Timestamps  []jsonTimestamp `json:"timestamps"`
}

func (j jsonRange) rng(t *testing.T) Range {
	r := Range{Type: j.Type, UpperBound: InfiniteUpperBound}
	if j.UpperBound != nil {
		var b TimestampBytes
		copy(b[:], unhex(t, *j.UpperBound))
		r.UpperBound = BoundAt(b)
	}
	copy(r.Fingerprint[:], unhex(t, j.Fingerprint))
	if j.Type == RangeTimestamps {
		r.Timestamps = []TimestampBytes{}
		for _, ts := range j.Timestamps {
			r.Timestamps = append(r.Timestamps, ts.ts(t).Bytes())
		}
	}
	return r
}

func TestVectorsMessages(t *testing.T) {
	var v struct {
		OwnerIDBytes string `json:"ownerIdBytes"`
		WriteKey     string `json:"writeKey"`
		Cases        []struct {
			Name    string `json:"name"`
			Options struct {
				MessageType      MessageType       `json:"messageType"`
				WriteKey         string            `json:"writeKey"`
				SubscriptionFlag *SubscriptionFlag `json:"subscriptionFlag"`
				ErrorCode        ErrorCode         `json:"errorCode"`
				Version          uint64            `json:"version"`
			} `json:"options"`
			Messages []struct {
				Timestamp jsonTimestamp `json:"timestamp"`
				Change    string        `json:"change"`
			} `json:"messages"`
			Ranges  []jsonRange `json:"ranges"`
			GetSize int         `json:"getSize"`
			Hex     string      `json:"hex"`
		} `json:"cases"`
		Limits []struct {
			Name     string `json:"name"`
			Accepted int    `json:"accepted"`
			Sizes    []int  `json:"sizes"`
			Sha256   string `json:"sha256"`
		} `json:"limits"`
	}
	loadVectors(t, "messages.json", &v)
	var owner OwnerID
	copy(owner[:], unhex(t, v.OwnerIDBytes))
	for _, c := range v.Cases {
		opts := BufferOptions{Type: c.Options.MessageType, ErrorCode: c.Options.ErrorCode, Version: c.Options.Version}
		if c.Options.SubscriptionFlag != nil {
			opts.Subscription = *c.Options.SubscriptionFlag
		}
		if c.Options.WriteKey != "" {
			var k WriteKey
			copy(k[:], unhex(t, c.Options.WriteKey))
			opts.WriteKey = &k
		}
		b := NewMessageBuffer(owner, opts)
		var msgs []EncryptedMessage
		for _, m := range c.Messages {
			em := EncryptedMessage{Timestamp: m.Timestamp.ts(t), Change: unhex(t, m.Change)}
			msgs = append(msgs, em)
			if err := b.AddMessage(em); err != nil {
				// TS asserts delta >= 0 only per timestamps buffer; a
				// vector with decreasing millis documents what TS produced.
				t.Fatalf("%s: AddMessage: %v", c.Name, err)
			}
		}
		var rs []Range
		for _, jr := range c.Ranges {
			r := jr.rng(t)
			rs = append(rs, r)
			if err := b.AddRange(r); err != nil {
				t.Fatalf("%s: AddRange: %v", c.Name, err)
			}
		}
		if b.Size() != c.GetSize {
			t.Errorf("%s: Size %d, want %d", c.Name, b.Size(), c.GetSize)
		}
		got, err := b.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if hex.EncodeToString(got) != c.Hex {
			t.Errorf("%s:\n got %x\nwant %s", c.Name, got, c.Hex)
			continue
		}
		// And decode back.
		m, err := Decode(got)
		if err != nil {
			t.Errorf("%s: decode: %v", c.Name, err)
			continue
		}
		if opts.Version != 0 && opts.Version != Version {
			continue
		}
		if len(m.Messages) != len(msgs) || len(m.Ranges) != len(rs) {
			t.Errorf("%s: decoded %d messages %d ranges", c.Name, len(m.Messages), len(m.Ranges))
		}
		for i := range msgs {
			if m.Messages[i].Timestamp != msgs[i].Timestamp || !bytes.Equal(m.Messages[i].Change, msgs[i].Change) {
				t.Errorf("%s: message %d differs", c.Name, i)
			}
		}
	}
	if len(v.Limits) == 0 {
		t.Fatal("no limit vectors")
	}
	for _, l := range v.Limits {
		// 1 MB request with the write key filled by CanAddMessage.
		var key WriteKey
		copy(key[:], unhex(t, v.WriteKey))
		b := NewMessageBuffer(owner, BufferOptions{Type: Request, WriteKey: &key})
		var sizes []int
		for i := 0; ; i++ {
			m := EncryptedMessage{Timestamp: Timestamp{Millis: uint64(1 + i)}, Change: patternChange(100+i, 60000)}
			if !b.CanAddMessage(m) {
				break
			}
			if err := b.AddMessage(m); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, b.Size())
		}
		got, _ := b.Bytes()
		if len(sizes) != l.Accepted || !slicesEqual(sizes, l.Sizes) {
			t.Errorf("%s: sizes %v, want %v", l.Name, sizes, l.Sizes)
		}
		if sha(got) != l.Sha256 {
			t.Errorf("%s: sha256 differs", l.Name)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// patternChange is the vectors' opaque change body.
func patternChange(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*7 + j*13)
	}
	return b
}

func TestVectorsReplies(t *testing.T) {
	var v struct {
		Relay []struct {
			Name         string `json:"name"`
			Request      string `json:"request"`
			RelayVersion uint64 `json:"relayVersion"`
			OK           bool   `json:"ok"`
			Reply        string `json:"reply"`
			Error        string `json:"error"`
		} `json:"relay"`
		Client []struct {
			Name         string `json:"name"`
			Reply        string `json:"reply"`
			WithWriteKey bool   `json:"withWriteKey"`
			OK           bool   `json:"ok"`
			Outcome      string `json:"outcome"`
			Error        string `json:"error"`
			IsInitiator  *bool  `json:"isInitiator"`
		} `json:"client"`
		WriteKey string `json:"writeKey"`
	}
	loadVectors(t, "replies.json", &v)
	ctx := context.Background()
	st := NewMemoryStorage()
	for _, c := range v.Relay {
		got, err := ApplyAsRelay(ctx, st, unhex(t, c.Request), RelayOptions{Version: c.RelayVersion})
		if !c.OK {
			if !errors.Is(err, ErrInvalidData) || got != nil {
				t.Errorf("%s: got %x, %v; want ProtocolInvalidDataError", c.Name, got, err)
			}
			continue
		}
		if err != nil || hex.EncodeToString(got) != c.Reply {
			t.Errorf("%s: got %x, %v; want %s", c.Name, got, err, c.Reply)
		}
	}
	var key WriteKey
	copy(key[:], unhex(t, v.WriteKey))
	for _, c := range v.Client {
		opts := ClientOptions{}
		if c.WithWriteKey {
			opts.WriteKey = &key
		}
		res, err := ApplyAsClient(ctx, NewMemoryStorage(), unhex(t, c.Reply), opts)
		if c.OK {
			if err != nil || res.Outcome.String() != c.Outcome {
				t.Errorf("%s: %v %v, want %s", c.Name, res.Outcome, err, c.Outcome)
			}
			continue
		}
		if got := errorType(err); got != c.Error {
			t.Errorf("%s: error %v (%s), want %s", c.Name, err, got, c.Error)
		}
		var ve *VersionError
		if c.IsInitiator != nil && (!errors.As(err, &ve) || ve.IsInitiator != *c.IsInitiator) {
			t.Errorf("%s: isInitiator mismatch: %v", c.Name, err)
		}
	}
}

// errorType names err as the TS error type.
func errorType(err error) string {
	var ve *VersionError
	var re *ResponseError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrInvalidData):
		return "ProtocolInvalidDataError"
	case errors.As(err, &ve):
		return "ProtocolVersionError"
	case errors.As(err, &re):
		return re.Code.String()
	}
	return err.Error()
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
