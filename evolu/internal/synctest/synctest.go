// Package synctest drives client/relay reconciliation between any two
// protocol.Storage implementations, for the property tests of the evolu
// packages.
package synctest

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Session runs one client session against a relay until the client sees
// Converged, checking every message against the size limits, and returns
// the number of round trips. The relay uses totalMax and relayRanges, the
// client clientRanges (its messages are limited to the default 1 MB).
func Session(t testing.TB, client protocol.Storage, relay protocol.RelayStorage, owner protocol.OwnerID, key protocol.WriteKey, totalMax, relayRanges, clientRanges int) int {
	t.Helper()
	ctx := context.Background()
	req, err := protocol.NewSyncRequest(ctx, client, owner, protocol.SubscriptionNone)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2000; round++ {
		if len(req) > protocol.DefaultMaxSize {
			t.Fatalf("round %d: request of %d bytes", round, len(req))
		}
		reply, err := protocol.ApplyAsRelay(ctx, relay, req, protocol.RelayOptions{TotalMaxSize: totalMax, RangesMaxSize: relayRanges})
		if err != nil {
			t.Fatalf("round %d: relay: %v", round, err)
		}
		if len(reply) > totalMax {
			t.Fatalf("round %d: reply of %d bytes exceeds %d", round, len(reply), totalMax)
		}
		res, err := protocol.ApplyAsClient(ctx, client, reply, protocol.ClientOptions{WriteKey: &key, RangesMaxSize: clientRanges})
		if err != nil {
			t.Fatalf("round %d: client: %v", round, err)
		}
		switch res.Outcome {
		case protocol.Converged:
			return round
		case protocol.ContinueResponse:
			req = res.Message
		default:
			t.Fatalf("round %d: outcome %v", round, res.Outcome)
		}
	}
	t.Fatal("no convergence after 2000 rounds")
	return 0
}

// GenOpts shape Fill: N distinct timestamps, Common percent of them in both
// stores, change sizes in [MinSize, MaxSize].
type GenOpts struct {
	N, Common        int
	MinSize, MaxSize int
}

// Fill writes random messages into a and b: Common percent in both, the rest
// split between them. It returns the sorted union of their timestamps.
func Fill(t testing.TB, r *rand.Rand, a, b protocol.Storage, owner protocol.OwnerID, o GenOpts) []protocol.TimestampBytes {
	t.Helper()
	ctx := context.Background()
	var pending [2][]protocol.EncryptedMessage
	var union []protocol.TimestampBytes
	seen := map[protocol.TimestampBytes]bool{}
	for len(union) < o.N {
		var nid protocol.NodeID
		nid[7] = byte(r.IntN(4))
		ts := protocol.Timestamp{Millis: uint64(1_700_000_000_000 + r.IntN(o.N*3)), Counter: uint16(r.IntN(2)), NodeID: nid}
		tb := ts.Bytes()
		if seen[tb] {
			continue
		}
		seen[tb] = true
		union = append(union, tb)
		change := make([]byte, o.MinSize+r.IntN(o.MaxSize-o.MinSize+1))
		for i := range change {
			change[i] = byte(r.Uint32())
		}
		m := protocol.EncryptedMessage{Timestamp: ts, Change: change}
		switch k := r.IntN(100); {
		case k < o.Common:
			pending[0] = append(pending[0], m)
			pending[1] = append(pending[1], m)
		case k%2 == 0:
			pending[0] = append(pending[0], m)
		default:
			pending[1] = append(pending[1], m)
		}
	}
	for i, st := range []protocol.Storage{a, b} {
		if len(pending[i]) > 0 {
			if err := st.WriteMessages(ctx, owner, pending[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.SortFunc(union, protocol.TimestampBytes.Compare)
	return union
}

// CheckUnion fails unless s holds exactly union, each with the same change
// as other.
func CheckUnion(t testing.TB, name string, s protocol.Storage, owner protocol.OwnerID, union []protocol.TimestampBytes, other protocol.Storage) {
	t.Helper()
	ctx := context.Background()
	n, err := s.Size(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	var got []protocol.TimestampBytes
	if err := s.Iterate(ctx, owner, 0, n, func(ts protocol.TimestampBytes, _ int) bool {
		got = append(got, ts)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, union) {
		t.Fatalf("%s: %d timestamps, want the union of %d", name, len(got), len(union))
	}
	for _, ts := range union {
		c1, err1 := s.ReadChange(ctx, owner, ts)
		c2, err2 := other.ReadChange(ctx, owner, ts)
		if err1 != nil || err2 != nil || string(c1) != string(c2) {
			t.Fatalf("%s: change of %v differs", name, ts.Timestamp())
		}
	}
}
