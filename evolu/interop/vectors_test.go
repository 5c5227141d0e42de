package interop

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
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
	"github.com/ferry-sync/ferry/evolu/protocol"
)

// Point (e) of issue 5: Ferry's encoder reproduces the bytes of the real
// @evolu/common 8.11.0 encoder for the same inputs. The vectors in
// testdata/evolu were made by js/gen-vectors.mjs with the real package; these
// tests only read them, so they run without Node.

// loadVectors decodes testdata/evolu/<name> into v.
func loadVectors(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "evolu", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// vTimestamp is a timestamp in the vectors.
type vTimestamp struct {
	Millis  uint64 `json:"millis"`
	Counter uint16 `json:"counter"`
	NodeID  string `json:"nodeId"`
}

func (v vTimestamp) ts(t testing.TB) protocol.Timestamp {
	t.Helper()
	var n protocol.NodeID
	copy(n[:], unhex(t, v.NodeID))
	return protocol.Timestamp{Millis: v.Millis, Counter: v.Counter, NodeID: n}
}

func tsBytes(t testing.TB, s string) protocol.TimestampBytes {
	t.Helper()
	var b protocol.TimestampBytes
	if n := copy(b[:], unhex(t, s)); n != 16 {
		t.Fatalf("timestamp bytes %q", s)
	}
	return b
}

func TestVectorsVarint(t *testing.T) {
	var v struct {
		Encode []struct {
			Value uint64 `json:"value"`
			Hex   string `json:"hex"`
		} `json:"encode"`
		Decode []struct {
			Hex   string  `json:"hex"`
			Value *uint64 `json:"value"`
			Error string  `json:"error"`
		} `json:"decode"`
	}
	loadVectors(t, "varint.json", &v)
	if len(v.Encode) < 20 {
		t.Fatalf("only %d varint vectors", len(v.Encode))
	}
	owner := make([]byte, 16)
	for _, c := range v.Encode {
		if got := hex.EncodeToString(protocol.AppendNonNegativeInt(nil, c.Value)); got != c.Hex {
			t.Errorf("encode %d = %s, want %s", c.Value, got, c.Hex)
		}
		// The version field is a NonNegativeInt: parse it back from a header.
		msg := append(unhex(t, c.Hex), owner...)
		msg = append(msg, byte(protocol.Broadcast))
		h, err := protocol.ParseHeader(msg)
		if err != nil || h.Version != c.Value {
			t.Errorf("decode %s = %d, %v; want %d", c.Hex, h.Version, err, c.Value)
		}
	}
	for _, c := range v.Decode {
		in := unhex(t, c.Hex)
		if c.Error == "" {
			continue // valid prefixes followed by other bytes; covered above
		}
		// Rejected by the TS decoder whatever follows: truncated alone, or
		// over-long/unsafe with an OwnerId after it.
		_, err := protocol.ParseHeader(in)
		if err == nil {
			t.Errorf("ParseHeader(%s) accepted what TS rejects (%s)", c.Hex, c.Error)
		}
		if len(in) >= 8 {
			if _, err := protocol.ParseHeader(append(in, owner...)); err == nil {
				t.Errorf("ParseHeader(%s + OwnerId) accepted what TS rejects (%s)", c.Hex, c.Error)
			}
		}
	}
}

func TestVectorsTimestamps(t *testing.T) {
	var v struct {
		Timestamps []struct {
			Timestamp   vTimestamp `json:"timestamp"`
			Bytes       string     `json:"bytes"`
			Fingerprint string     `json:"fingerprint"`
		} `json:"timestamps"`
		Buffers []struct {
			Name       string       `json:"name"`
			Timestamps []vTimestamp `json:"timestamps"`
			Infinite   int          `json:"infinite"`
			Hex        string       `json:"hex"`
		} `json:"buffers"`
	}
	loadVectors(t, "timestamps.json", &v)
	for _, c := range v.Timestamps {
		ts := c.Timestamp.ts(t)
		b := ts.Bytes()
		if got := hex.EncodeToString(b[:]); got != c.Bytes {
			t.Errorf("%v bytes = %s, want %s", c.Timestamp, got, c.Bytes)
		}
		if back := b.Timestamp(); back != ts {
			t.Errorf("%v round trip = %v", c.Timestamp, back)
		}
		fp := protocol.TimestampFingerprint(b)
		if got := hex.EncodeToString(fp[:]); got != c.Fingerprint {
			t.Errorf("%v fingerprint = %s, want %s", c.Timestamp, got, c.Fingerprint)
		}
	}
	for _, c := range v.Buffers {
		var tb protocol.TimestampsBuffer
		for _, ts := range c.Timestamps {
			if err := tb.Add(ts.ts(t)); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
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
	}
}

// vRange is a range in messages.json.
type vRange struct {
	Type        int          `json:"type"`
	UpperBound  *string      `json:"upperBound"`
	Fingerprint string       `json:"fingerprint"`
	Timestamps  []vTimestamp `json:"timestamps"`
}

func TestVectorsMessages(t *testing.T) {
	var v struct {
		OwnerIDBytes string `json:"ownerIdBytes"`
		Cases        []struct {
			Name    string `json:"name"`
			Options struct {
				MessageType      int     `json:"messageType"`
				WriteKey         *string `json:"writeKey"`
				SubscriptionFlag int     `json:"subscriptionFlag"`
				ErrorCode        int     `json:"errorCode"`
				Version          uint64  `json:"version"`
			} `json:"options"`
			Messages []struct {
				Timestamp vTimestamp `json:"timestamp"`
				Change    string     `json:"change"`
			} `json:"messages"`
			Ranges  []vRange `json:"ranges"`
			GetSize int      `json:"getSize"`
			Hex     string   `json:"hex"`
		} `json:"cases"`
		Limits []struct {
			Name     string `json:"name"`
			Accepted int    `json:"accepted"`
			Sizes    []int  `json:"sizes"`
			SHA256   string `json:"sha256"`
		} `json:"limits"`
	}
	loadVectors(t, "messages.json", &v)
	var owner protocol.OwnerID
	copy(owner[:], unhex(t, v.OwnerIDBytes))
	for _, c := range v.Cases {
		opts := protocol.BufferOptions{
			Type:         protocol.MessageType(c.Options.MessageType),
			Subscription: protocol.SubscriptionFlag(c.Options.SubscriptionFlag),
			ErrorCode:    protocol.ErrorCode(c.Options.ErrorCode),
			Version:      c.Options.Version,
		}
		if c.Options.WriteKey != nil {
			var k protocol.WriteKey
			copy(k[:], unhex(t, *c.Options.WriteKey))
			opts.WriteKey = &k
		}
		b := protocol.NewMessageBuffer(owner, opts)
		for _, m := range c.Messages {
			if err := b.AddMessage(protocol.EncryptedMessage{Timestamp: m.Timestamp.ts(t), Change: unhex(t, m.Change)}); err != nil {
				t.Fatalf("%s: AddMessage: %v", c.Name, err)
			}
		}
		for _, r := range c.Ranges {
			if err := b.AddRange(vectorRange(t, r)); err != nil {
				t.Fatalf("%s: AddRange: %v", c.Name, err)
			}
		}
		if b.Size() != c.GetSize {
			t.Errorf("%s: Size %d, TS getSize %d", c.Name, b.Size(), c.GetSize)
		}
		got, err := b.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if hex.EncodeToString(got) != c.Hex {
			t.Errorf("%s:\n got %x\nwant %s", c.Name, got, c.Hex)
			continue
		}
		// What TS encodes, Ferry decodes, and re-encodes to the same bytes.
		m, err := protocol.Decode(got)
		if err != nil {
			t.Errorf("%s: Decode of the TS bytes: %v", c.Name, err)
			continue
		}
		if m.Version != protocol.Version {
			continue
		}
		again, err := protocol.Encode(m)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("%s: Encode(Decode(ts)) = %x, %v", c.Name, again, err)
		}
	}
	for _, l := range v.Limits {
		var key protocol.WriteKey
		b := protocol.NewMessageBuffer(owner, protocol.BufferOptions{Type: protocol.Request, WriteKey: &key})
		// The vector's write key is testAppOwner's; take it from a case.
		for _, c := range v.Cases {
			if c.Options.WriteKey != nil {
				copy(key[:], unhex(t, *c.Options.WriteKey))
				break
			}
		}
		b = protocol.NewMessageBuffer(owner, protocol.BufferOptions{Type: protocol.Request, WriteKey: &key})
		n := 0
		for {
			m := protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1 + n)}, Change: patternChange(100+n, 60000)}
			if !b.CanAddMessage(m) {
				break
			}
			if err := b.AddMessage(m); err != nil {
				t.Fatal(err)
			}
			if n < len(l.Sizes) && b.Size() != l.Sizes[n] {
				t.Errorf("%s: size after %d = %d, want %d", l.Name, n+1, b.Size(), l.Sizes[n])
			}
			n++
		}
		if n != l.Accepted {
			t.Errorf("%s: accepted %d, TS %d", l.Name, n, l.Accepted)
		}
		got, _ := b.Bytes()
		if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != l.SHA256 {
			t.Errorf("%s: sha256 differs", l.Name)
		}
	}
}

// vectorRange converts a vector range.
func vectorRange(t testing.TB, r vRange) protocol.Range {
	t.Helper()
	out := protocol.Range{Type: protocol.RangeType(r.Type), UpperBound: protocol.InfiniteUpperBound}
	if r.UpperBound != nil {
		out.UpperBound = protocol.BoundAt(tsBytes(t, *r.UpperBound))
	}
	if r.Fingerprint != "" {
		copy(out.Fingerprint[:], unhex(t, r.Fingerprint))
	}
	for _, ts := range r.Timestamps {
		out.Timestamps = append(out.Timestamps, ts.ts(t).Bytes())
	}
	return out
}

// patternChange is the opaque change body of the vectors: byte j of change i
// is (i*7 + j*13) & 0xff.
func patternChange(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*7 + j*13)
	}
	return b
}

// rbsrVectors is rbsr.json.
type rbsrVectors struct {
	OwnerID   string `json:"ownerId"`
	WriteKey  string `json:"writeKey"`
	Exchanges []struct {
		Name     string `json:"name"`
		Universe struct {
			N         int  `json:"n"`
			Seed      int  `json:"seed"`
			ChangeLen *int `json:"changeLen"`
		} `json:"universe"`
		Client        []int  `json:"client"`
		Relay         []int  `json:"relay"`
		RangesMaxSize int    `json:"rangesMaxSize"`
		TotalMaxSize  int    `json:"totalMaxSize"`
		Rounds        int    `json:"rounds"`
		Outcome       string `json:"outcome"`
		Transcript    []struct {
			From   string `json:"from"`
			Hex    string `json:"hex"`
			Length int    `json:"length"`
			SHA256 string `json:"sha256"`
		} `json:"transcript"`
		Final struct {
			Count       int    `json:"count"`
			Fingerprint string `json:"fingerprint"`
		} `json:"final"`
	} `json:"exchanges"`
}

// universeItem is item i of rbsr.json's universe rule.
func universeItems(n, seed int, changeLen *int) []protocol.EncryptedMessage {
	out := make([]protocol.EncryptedMessage, n)
	millis := uint64(1700000000000)
	a := protocol.NodeID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	b := protocol.NodeID{0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	for i := range n {
		millis += uint64(1 + (i*seed)%37)
		node := b
		if i%5 == 0 {
			node = a
		}
		l := 41 + (i*13)%80
		if changeLen != nil {
			l = *changeLen
		}
		out[i] = protocol.EncryptedMessage{
			Timestamp: protocol.Timestamp{Millis: millis, Counter: uint16(i % 4), NodeID: node},
			Change:    patternChange(i, l),
		}
	}
	return out
}

// storeKinds are the Ferry storages the RBSR vectors are replayed on: the
// in-memory one of evolu/protocol and the SQLite store of the relay and
// client (with its persisted fingerprint index).
var storeKinds = []struct {
	name string
	open func(t *testing.T) protocol.RelayStorage
}{
	{"memory", func(*testing.T) protocol.RelayStorage { return protocol.NewMemoryStorage() }},
	{"sqlite", func(t *testing.T) protocol.RelayStorage {
		st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlstore.Config{}, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// TestVectorsRBSR replays every exchange of rbsr.json between two Ferry
// stores and checks each message of the transcript byte for byte.
func TestVectorsRBSR(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) { testVectorsRBSR(t, kind.open) })
	}
}

func testVectorsRBSR(t *testing.T, open func(t *testing.T) protocol.RelayStorage) {
	var v rbsrVectors
	loadVectors(t, "rbsr.json", &v)
	owner, err := protocol.ParseOwnerID(v.OwnerID)
	if err != nil {
		t.Fatal(err)
	}
	var key protocol.WriteKey
	copy(key[:], unhex(t, v.WriteKey))
	for _, ex := range v.Exchanges {
		t.Run(ex.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			items := universeItems(ex.Universe.N, ex.Universe.Seed, ex.Universe.ChangeLen)
			client, relay := open(t), open(t)
			load := func(st protocol.RelayStorage, idx []int) {
				var msgs []protocol.EncryptedMessage
				for _, i := range idx {
					msgs = append(msgs, items[i])
				}
				if len(msgs) > 0 {
					if err := st.WriteMessages(ctx, owner, msgs); err != nil {
						t.Fatal(err)
					}
				}
			}
			load(client, ex.Client)
			load(relay, ex.Relay)
			if _, err := relay.ValidateWriteKey(ctx, owner, key); err != nil {
				t.Fatal(err)
			}
			check := func(i int, got []byte) {
				t.Helper()
				if i >= len(ex.Transcript) {
					t.Fatalf("message %d beyond the TS transcript of %d", i, len(ex.Transcript))
				}
				want := ex.Transcript[i]
				if want.Hex != "" {
					if hex.EncodeToString(got) != want.Hex {
						t.Fatalf("message %d (%s) differs:\n got %x\nwant %s", i, want.From, got, want.Hex)
					}
					return
				}
				sum := sha256.Sum256(got)
				if len(got) != want.Length || hex.EncodeToString(sum[:]) != want.SHA256 {
					t.Fatalf("message %d (%s): %d bytes sha256 %x, want %d bytes %s", i, want.From, len(got), sum, want.Length, want.SHA256)
				}
			}
			req, err := protocol.NewSyncRequest(ctx, client, owner, protocol.SubscriptionNone)
			if err != nil {
				t.Fatal(err)
			}
			outcome := ""
			rounds := 0
			for i := 0; ; i += 2 {
				check(i, req)
				rounds++
				reply, err := protocol.ApplyAsRelay(ctx, relay, req, protocol.RelayOptions{TotalMaxSize: ex.TotalMaxSize, RangesMaxSize: ex.RangesMaxSize})
				if err != nil {
					t.Fatalf("relay: %v", err)
				}
				check(i+1, reply)
				res, err := protocol.ApplyAsClient(ctx, client, reply, protocol.ClientOptions{WriteKey: &key, RangesMaxSize: ex.RangesMaxSize})
				if err != nil {
					t.Fatalf("client: %v", err)
				}
				if res.Outcome != protocol.ContinueResponse {
					outcome = res.Outcome.String()
					break
				}
				if rounds > 200 {
					t.Fatal("no convergence after 200 rounds")
				}
				req = res.Message
			}
			if rounds != ex.Rounds || outcome != ex.Outcome {
				t.Errorf("rounds %d outcome %s, TS %d %s", rounds, outcome, ex.Rounds, ex.Outcome)
			}
			n, _ := client.Size(ctx, owner)
			fp, _ := client.Fingerprint(ctx, owner, 0, n)
			if n != ex.Final.Count || hex.EncodeToString(fp[:]) != ex.Final.Fingerprint {
				t.Errorf("final %d %x, TS %d %s", n, fp, ex.Final.Count, ex.Final.Fingerprint)
			}
		})
	}
}

// TestVectorsReplies checks the relay's replies and the client's outcomes of
// replies.json.
func TestVectorsReplies(t *testing.T) {
	var v struct {
		Relay []struct {
			Name         string  `json:"name"`
			Request      string  `json:"request"`
			RelayVersion int     `json:"relayVersion"`
			OK           bool    `json:"ok"`
			Reply        *string `json:"reply"`
			Error        *string `json:"error"`
		} `json:"relay"`
		Client []struct {
			Name        string  `json:"name"`
			Reply       string  `json:"reply"`
			WithKey     bool    `json:"withWriteKey"`
			OK          bool    `json:"ok"`
			Outcome     *string `json:"outcome"`
			Error       *string `json:"error"`
			IsInitiator *bool   `json:"isInitiator"`
		} `json:"client"`
		WriteKey string `json:"writeKey"`
	}
	loadVectors(t, "replies.json", &v)
	ctx := context.Background()
	relay := protocol.NewMemoryStorage()
	for _, c := range v.Relay {
		if c.RelayVersion != protocol.Version {
			continue // Ferry's relay speaks only version 1
		}
		reply, err := protocol.ApplyAsRelay(ctx, relay, unhex(t, c.Request), protocol.RelayOptions{})
		switch {
		case c.OK && err != nil:
			t.Errorf("%s: relay error %v, TS replied %s", c.Name, err, *c.Reply)
		case c.OK && hex.EncodeToString(reply) != *c.Reply:
			t.Errorf("%s: reply %x, TS %s", c.Name, reply, *c.Reply)
		case !c.OK && !errors.Is(err, protocol.ErrInvalidData):
			t.Errorf("%s: got %x, %v; TS %s", c.Name, reply, err, *c.Error)
		}
	}
	var key protocol.WriteKey
	copy(key[:], unhex(t, v.WriteKey))
	client := protocol.NewMemoryStorage()
	outcomes := map[string]protocol.ClientOutcome{
		"Converged": protocol.Converged, "Response": protocol.ContinueResponse,
		"Broadcast": protocol.Broadcasted, "Readonly": protocol.ReadOnly, "Failed": protocol.Failed,
	}
	codes := map[string]protocol.ErrorCode{
		"ProtocolWriteKeyError": protocol.WriteKeyError, "ProtocolWriteError": protocol.WriteError,
		"ProtocolQuotaError": protocol.QuotaError, "ProtocolSyncError": protocol.SyncError,
	}
	for _, c := range v.Client {
		opts := protocol.ClientOptions{}
		if c.WithKey {
			opts.WriteKey = &key
		}
		res, err := protocol.ApplyAsClient(ctx, client, unhex(t, c.Reply), opts)
		if c.OK {
			if err != nil || res.Outcome != outcomes[*c.Outcome] {
				t.Errorf("%s: %v %v, TS %s", c.Name, res.Outcome, err, *c.Outcome)
			}
			continue
		}
		var ve *protocol.VersionError
		var re *protocol.ResponseError
		switch *c.Error {
		case "ProtocolVersionError":
			if !errors.As(err, &ve) || ve.IsInitiator != *c.IsInitiator {
				t.Errorf("%s: %v, TS version error isInitiator=%v", c.Name, err, *c.IsInitiator)
			}
		case "ProtocolInvalidDataError":
			if !errors.Is(err, protocol.ErrInvalidData) {
				t.Errorf("%s: %v, TS ProtocolInvalidDataError", c.Name, err)
			}
		default:
			if !errors.As(err, &re) || re.Code != codes[*c.Error] {
				t.Errorf("%s: %v, TS %s", c.Name, err, *c.Error)
			}
		}
	}
}
