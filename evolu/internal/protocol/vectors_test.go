package protocol_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/vectors"
)

// The vectors in testdata/evolu are made by the real @evolu/common 8.11.0
// (see testdata/evolu/README.md); Ferry must reproduce them. They are loaded
// and converted by evolu/internal/vectors.

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
	vectors.Load(t, "varint.json", &v)
	if len(v.Encode) < 20 || len(v.Decode) == 0 {
		t.Fatalf("only %d encode and %d decode vectors", len(v.Encode), len(v.Decode))
	}
	owner := make([]byte, 16)
	for _, c := range v.Encode {
		if got := hex.EncodeToString(protocol.AppendNonNegativeInt(nil, c.Value)); got != c.Hex {
			t.Errorf("encode %d = %s, want %s", c.Value, got, c.Hex)
		}
		// The version field is a NonNegativeInt: parse it back from a header.
		msg := append(vectors.Unhex(t, c.Hex), owner...)
		msg = append(msg, byte(protocol.Broadcast))
		h, err := protocol.ParseHeader(msg)
		if err != nil || h.Version != c.Value {
			t.Errorf("header with version %s = %d, %v; want %d", c.Hex, h.Version, err, c.Value)
		}
	}
	for _, c := range v.Decode {
		got, rest, err := protocol.DecodeNonNegativeInt(vectors.Unhex(t, c.Hex))
		if c.Error != "" {
			if err == nil {
				t.Errorf("decode %s = %d, want error %q", c.Hex, got, c.Error)
			}
			// Rejected as a header's version too, whatever follows:
			// truncated alone, or over-long/unsafe with an OwnerId after it.
			in := vectors.Unhex(t, c.Hex)
			if _, err := protocol.ParseHeader(in); err == nil {
				t.Errorf("ParseHeader(%s) accepted what TS rejects (%s)", c.Hex, c.Error)
			}
			if len(in) >= 8 {
				if _, err := protocol.ParseHeader(append(in, owner...)); err == nil {
					t.Errorf("ParseHeader(%s + OwnerId) accepted what TS rejects (%s)", c.Hex, c.Error)
				}
			}
			continue
		}
		if err != nil || got != *c.Value || hex.EncodeToString(rest) != c.Rest {
			t.Errorf("decode %s = %d rest %x (%v), want %d rest %s", c.Hex, got, rest, err, *c.Value, c.Rest)
		}
	}
}

func TestVectorsTimestamps(t *testing.T) {
	var v struct {
		Timestamps []struct {
			Timestamp   vectors.Timestamp `json:"timestamp"`
			Bytes       string            `json:"bytes"`
			Fingerprint string            `json:"fingerprint"`
		} `json:"timestamps"`
		Buffers []struct {
			Name       string              `json:"name"`
			Timestamps []vectors.Timestamp `json:"timestamps"`
			Infinite   int                 `json:"infinite"`
			Hex        string              `json:"hex"`
		} `json:"buffers"`
	}
	vectors.Load(t, "timestamps.json", &v)
	for _, c := range v.Timestamps {
		ts := c.Timestamp.Timestamp(t)
		b := ts.Bytes()
		if hex.EncodeToString(b[:]) != c.Bytes {
			t.Errorf("%v bytes %x, want %s", ts, b, c.Bytes)
		}
		if b.Timestamp() != ts {
			t.Errorf("%v round trip", ts)
		}
		fp := protocol.TimestampFingerprint(b)
		if hex.EncodeToString(fp[:]) != c.Fingerprint {
			t.Errorf("%v fingerprint %x, want %s", ts, fp, c.Fingerprint)
		}
	}
	for _, c := range v.Buffers {
		var tb protocol.TimestampsBuffer
		for _, j := range c.Timestamps {
			if err := tb.Add(j.Timestamp(t)); err != nil {
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
			ts, left, err := protocol.DecodeTimestamps(got)
			if err != nil || len(ts) != len(c.Timestamps) || left != 0 {
				t.Errorf("%s: decode %v", c.Name, err)
			}
			for i := range ts {
				if ts[i] != c.Timestamps[i].Timestamp(t) {
					t.Errorf("%s: decoded %d differs", c.Name, i)
				}
			}
		}
	}
}

type jsonRange struct {
	Type        protocol.RangeType  `json:"type"`
	UpperBound  *string             `json:"upperBound"`
	Fingerprint string              `json:"fingerprint"`
	Timestamps  []vectors.Timestamp `json:"timestamps"`
}

func (j jsonRange) rng(t testing.TB) protocol.Range {
	r := protocol.Range{Type: j.Type, UpperBound: protocol.InfiniteUpperBound}
	if j.UpperBound != nil {
		var b protocol.TimestampBytes
		copy(b[:], vectors.Unhex(t, *j.UpperBound))
		r.UpperBound = protocol.BoundAt(b)
	}
	copy(r.Fingerprint[:], vectors.Unhex(t, j.Fingerprint))
	if j.Type == protocol.RangeTimestamps {
		r.Timestamps = []protocol.TimestampBytes{}
		for _, ts := range j.Timestamps {
			r.Timestamps = append(r.Timestamps, ts.Timestamp(t).Bytes())
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
				MessageType      protocol.MessageType       `json:"messageType"`
				WriteKey         string                     `json:"writeKey"`
				SubscriptionFlag *protocol.SubscriptionFlag `json:"subscriptionFlag"`
				ErrorCode        protocol.ErrorCode         `json:"errorCode"`
				Version          uint64                     `json:"version"`
			} `json:"options"`
			Messages []struct {
				Timestamp vectors.Timestamp `json:"timestamp"`
				Change    string            `json:"change"`
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
	vectors.Load(t, "messages.json", &v)
	var owner protocol.OwnerID
	copy(owner[:], vectors.Unhex(t, v.OwnerIDBytes))
	for _, c := range v.Cases {
		opts := protocol.WithBufferVersion(protocol.BufferOptions{Type: c.Options.MessageType, ErrorCode: c.Options.ErrorCode}, c.Options.Version)
		if c.Options.SubscriptionFlag != nil {
			opts.Subscription = *c.Options.SubscriptionFlag
		}
		if c.Options.WriteKey != "" {
			var k protocol.WriteKey
			copy(k[:], vectors.Unhex(t, c.Options.WriteKey))
			opts.WriteKey = &k
		}
		b := protocol.NewMessageBuffer(owner, opts)
		var msgs []protocol.EncryptedMessage
		for _, m := range c.Messages {
			em := protocol.EncryptedMessage{Timestamp: m.Timestamp.Timestamp(t), Change: vectors.Unhex(t, m.Change)}
			msgs = append(msgs, em)
			if err := b.AddMessage(em); err != nil {
				// TS asserts delta >= 0 only per timestamps buffer; a
				// vector with decreasing millis documents what TS produced.
				t.Fatalf("%s: AddMessage: %v", c.Name, err)
			}
		}
		var rs []protocol.Range
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
		m, err := protocol.Decode(got)
		if err != nil {
			t.Errorf("%s: decode: %v", c.Name, err)
			continue
		}
		if c.Options.Version != 0 && c.Options.Version != protocol.Version {
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
		// What TS encodes, Ferry decodes and re-encodes to the same bytes.
		if again, err := protocol.Encode(m); err != nil || !bytes.Equal(again, got) {
			t.Errorf("%s: Encode(Decode(ts)) = %x, %v", c.Name, again, err)
		}
	}
	if len(v.Limits) == 0 {
		t.Fatal("no limit vectors")
	}
	for _, l := range v.Limits {
		// 1 MB request with the write key filled by CanAddMessage.
		var key protocol.WriteKey
		copy(key[:], vectors.Unhex(t, v.WriteKey))
		b := protocol.NewMessageBuffer(owner, protocol.BufferOptions{Type: protocol.Request, WriteKey: &key})
		var sizes []int
		for i := 0; ; i++ {
			m := protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1 + i)}, Change: vectors.PatternChange(100+i, 60000)}
			if !b.CanAddMessage(m) {
				break
			}
			if err := b.AddMessage(m); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, b.Size())
		}
		got, _ := b.Bytes()
		if len(sizes) != l.Accepted || !slices.Equal(sizes, l.Sizes) {
			t.Errorf("%s: sizes %v, want %v", l.Name, sizes, l.Sizes)
		}
		if vectors.SHA256(got) != l.Sha256 {
			t.Errorf("%s: sha256 differs", l.Name)
		}
	}
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
	vectors.Load(t, "replies.json", &v)
	ctx := context.Background()
	st := protocol.NewMemoryStorage()
	for _, c := range v.Relay {
		got, err := protocol.ApplyAsRelay(ctx, st, vectors.Unhex(t, c.Request), protocol.WithRelayVersion(protocol.RelayOptions{}, c.RelayVersion))
		if !c.OK {
			if !errors.Is(err, protocol.ErrInvalidData) || got != nil {
				t.Errorf("%s: got %x, %v; want ProtocolInvalidDataError", c.Name, got, err)
			}
			continue
		}
		if err != nil || hex.EncodeToString(got) != c.Reply {
			t.Errorf("%s: got %x, %v; want %s", c.Name, got, err, c.Reply)
		}
	}
	var key protocol.WriteKey
	copy(key[:], vectors.Unhex(t, v.WriteKey))
	for _, c := range v.Client {
		opts := protocol.ClientOptions{}
		if c.WithWriteKey {
			opts.WriteKey = &key
		}
		res, err := protocol.ApplyAsClient(ctx, protocol.NewMemoryStorage(), vectors.Unhex(t, c.Reply), opts)
		if c.OK {
			if err != nil || res.Outcome.String() != c.Outcome {
				t.Errorf("%s: %v %v, want %s", c.Name, res.Outcome, err, c.Outcome)
			}
			continue
		}
		if got := errorType(err); got != c.Error {
			t.Errorf("%s: error %v (%s), want %s", c.Name, err, got, c.Error)
		}
		var ve *protocol.VersionError
		if c.IsInitiator != nil && (!errors.As(err, &ve) || ve.IsInitiator != *c.IsInitiator) {
			t.Errorf("%s: isInitiator mismatch: %v", c.Name, err)
		}
	}
}

// errorType names err as the TS error type.
func errorType(err error) string {
	var ve *protocol.VersionError
	var re *protocol.ResponseError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, protocol.ErrInvalidData):
		return "ProtocolInvalidDataError"
	case errors.As(err, &ve):
		return "ProtocolVersionError"
	case errors.As(err, &re):
		return re.Code.String()
	}
	return err.Error()
}
