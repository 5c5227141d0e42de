// Package vectors loads the conformance vectors of testdata/evolu, made by
// the real @evolu/common (testdata/evolu/README.md), for the tests of the
// evolu packages: it is the one place that reads those files (Load) and
// converts their hex strings (Unhex), digests (SHA256) and timestamps
// (Timestamp), and it holds the generators the vectors describe by rule
// (PatternChange, Universe) and the RBSR transcript replay (ReplayRBSR),
// run on the memory store by evolu/internal/protocol and on the SQLite store by
// evolu/internal/sqlstore.
//
// Package protocol's own (in-package) tests cannot import this package,
// which imports protocol; the vector tests of evolu/internal/protocol are therefore
// package protocol_test (export_test.go opens the decoder to them).
package vectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Dir is the directory of the vectors.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "evolu")
}

// Load decodes the vector file name into v.
func Load(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatalf("vectors: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("vectors %s: %v", name, err)
	}
}

// Unhex decodes the hex string s of a vector, failing t if it is not hex.
func Unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// SHA256 is the lower-case hex SHA-256 of b, as the vectors write digests.
func SHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Timestamp is a timestamp as the vectors write it:
// {"millis", "counter", "nodeId" (16 hex digits)}.
type Timestamp struct {
	Millis  uint64 `json:"millis"`
	Counter uint16 `json:"counter"`
	NodeID  string `json:"nodeId"`
}

// Timestamp converts j, failing t if the node ID is not 8 bytes of hex.
func (j Timestamp) Timestamp(t testing.TB) protocol.Timestamp {
	t.Helper()
	var n protocol.NodeID
	b := Unhex(t, j.NodeID)
	if len(b) != len(n) {
		t.Fatalf("nodeId %q is not %d bytes", j.NodeID, len(n))
	}
	copy(n[:], b)
	return protocol.Timestamp{Millis: j.Millis, Counter: j.Counter, NodeID: n}
}

// PatternChange is the vectors' opaque change body: byte j is (i*7 + j*13) & 0xff.
func PatternChange(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*7 + j*13)
	}
	return b
}

// Universe is the vectors' universeRule.
func Universe(n, seed, changeLen int) []protocol.EncryptedMessage {
	out := make([]protocol.EncryptedMessage, n)
	millis := uint64(1_700_000_000_000)
	for i := range out {
		millis += uint64(1 + (i*seed)%37)
		nid := protocol.NodeID{0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
		if i%5 == 0 {
			nid = protocol.NodeID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
		}
		l := changeLen
		if l == 0 {
			l = 41 + (i*13)%80
		}
		out[i] = protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: millis, Counter: uint16(i % 4), NodeID: nid}, Change: PatternChange(i, l)}
	}
	return out
}

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
			Sha256 string `json:"sha256"`
		} `json:"transcript"`
		Final struct {
			Count       int    `json:"count"`
			Fingerprint string `json:"fingerprint"`
		} `json:"final"`
	} `json:"exchanges"`
}

// ReplayRBSR replays every exchange of rbsr.json between a client and a
// relay storage made by newStorage, comparing each message of the
// transcript byte for byte, the rounds, the outcome and the final sets.
func ReplayRBSR(t *testing.T, newStorage func(t *testing.T) protocol.RelayStorage) {
	var v rbsrVectors
	Load(t, "rbsr.json", &v)
	owner, err := protocol.ParseOwnerID(v.OwnerID)
	if err != nil {
		t.Fatal(err)
	}
	var key protocol.WriteKey
	copy(key[:], Unhex(t, v.WriteKey))
	ctx := context.Background()
	for _, e := range v.Exchanges {
		t.Run(e.Name, func(t *testing.T) {
			cl := 0
			if e.Universe.ChangeLen != nil {
				cl = *e.Universe.ChangeLen
			}
			u := Universe(e.Universe.N, e.Universe.Seed, cl)
			client, relay := newStorage(t), newStorage(t)
			pick := func(st protocol.Storage, idx []int) {
				var ms []protocol.EncryptedMessage
				for _, i := range idx {
					ms = append(ms, u[i])
				}
				if len(ms) > 0 {
					if err := st.WriteMessages(ctx, owner, ms); err != nil {
						t.Fatal(err)
					}
				}
			}
			pick(client, e.Client)
			pick(relay, e.Relay)
			if _, err := relay.ValidateWriteKey(ctx, owner, key); err != nil {
				t.Fatal(err)
			}
			check := func(step int, from string, got []byte) {
				if step >= len(e.Transcript) {
					t.Fatalf("step %d beyond the transcript of %d", step, len(e.Transcript))
				}
				w := e.Transcript[step]
				if w.From != from {
					t.Fatalf("step %d from %s, want %s", step, from, w.From)
				}
				if w.Hex != "" || w.Sha256 == "" {
					if hex.EncodeToString(got) != w.Hex {
						t.Fatalf("step %d (%s):\n got %x\nwant %s", step, from, got, w.Hex)
					}
				} else if len(got) != w.Length || SHA256(got) != w.Sha256 {
					t.Fatalf("step %d (%s): %d bytes sha %s, want %d bytes %s", step, from, len(got), SHA256(got), w.Length, w.Sha256)
				}
			}
			req, err := protocol.NewSyncRequest(ctx, client, owner, protocol.SubscriptionNone)
			if err != nil {
				t.Fatal(err)
			}
			step, rounds, outcome := 0, 0, ""
			for rounds < 100 {
				check(step, "client", req)
				step++
				reply, err := protocol.ApplyAsRelay(ctx, relay, req, protocol.RelayOptions{TotalMaxSize: e.TotalMaxSize, RangesMaxSize: e.RangesMaxSize})
				if err != nil {
					t.Fatal(err)
				}
				check(step, "relay", reply)
				step++
				rounds++
				res, err := protocol.ApplyAsClient(ctx, client, reply, protocol.ClientOptions{WriteKey: &key, RangesMaxSize: e.RangesMaxSize})
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != protocol.ContinueResponse {
					outcome = res.Outcome.String()
					break
				}
				req = res.Message
			}
			if rounds != e.Rounds || outcome != e.Outcome || step != len(e.Transcript) {
				t.Fatalf("rounds %d outcome %s steps %d; want %d %s %d", rounds, outcome, step, e.Rounds, e.Outcome, len(e.Transcript))
			}
			for _, st := range []protocol.Storage{client, relay} {
				n, _ := st.Size(ctx, owner)
				fp, _ := st.Fingerprint(ctx, owner, 0, n)
				if n != e.Final.Count || hex.EncodeToString(fp[:]) != e.Final.Fingerprint {
					t.Fatalf("final %d %x, want %d %s", n, fp, e.Final.Count, e.Final.Fingerprint)
				}
			}
		})
	}
}
