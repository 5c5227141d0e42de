package protocol

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// syncSession runs one client session against a relay until the client sees
// Converged, and returns the number of round trips.
func syncSession(t testing.TB, client Storage, relay RelayStorage, owner OwnerID, key WriteKey, totalMax, rangesMax int) int {
	t.Helper()
	ctx := context.Background()
	req, err := NewSyncRequest(ctx, client, owner, SubscriptionNone)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2000; round++ {
		if len(req) > DefaultMaxSize {
			t.Fatalf("round %d: request of %d bytes", round, len(req))
		}
		reply, err := ApplyAsRelay(ctx, relay, req, RelayOptions{TotalMaxSize: totalMax, RangesMaxSize: rangesMax})
		if err != nil {
			t.Fatalf("round %d: relay: %v", round, err)
		}
		if len(reply) > totalMax {
			t.Fatalf("round %d: reply of %d bytes exceeds %d", round, len(reply), totalMax)
		}
		res, err := ApplyAsClient(ctx, client, reply, ClientOptions{WriteKey: &key, RangesMaxSize: rangesMax})
		if err != nil {
			t.Fatalf("round %d: client: %v", round, err)
		}
		switch res.Outcome {
		case Converged:
			return round
		case ContinueResponse:
			req = res.Message
		default:
			t.Fatalf("round %d: outcome %v (%v)", round, res.Outcome, res.Err)
		}
	}
	t.Fatal("no convergence after 2000 rounds")
	return 0
}

type genOpts struct {
	n, common        int
	minSize, maxSize int
}

// randomStores fills two stores: common messages in both, the rest split.
func randomStores(r *rand.Rand, owner OwnerID, o genOpts) (a, b *MemoryStorage, union []TimestampBytes) {
	a, b = NewMemoryStorage(), NewMemoryStorage()
	ctx := context.Background()
	seen := map[TimestampBytes]bool{}
	for len(union) < o.n {
		var nid NodeID
		nid[7] = byte(r.IntN(4))
		ts := Timestamp{Millis: uint64(1_700_000_000_000 + r.IntN(o.n*3)), Counter: uint16(r.IntN(2)), NodeID: nid}
		tb := ts.Bytes()
		if seen[tb] {
			continue
		}
		seen[tb] = true
		union = append(union, tb)
		m := []EncryptedMessage{{Timestamp: ts, Change: testChange(r, o.minSize+r.IntN(o.maxSize-o.minSize+1))}}
		switch k := r.IntN(100); {
		case k < o.common:
			_ = a.WriteMessages(ctx, owner, m)
			_ = b.WriteMessages(ctx, owner, m)
		case k%2 == 0:
			_ = a.WriteMessages(ctx, owner, m)
		default:
			_ = b.WriteMessages(ctx, owner, m)
		}
	}
	slices.SortFunc(union, TimestampBytes.Compare)
	return a, b, union
}

func checkUnion(t testing.TB, name string, s *MemoryStorage, owner OwnerID, union []TimestampBytes, other *MemoryStorage) {
	t.Helper()
	got := s.Timestamps(owner)
	if !slices.Equal(got, union) {
		t.Fatalf("%s: %d timestamps, want the union of %d", name, len(got), len(union))
	}
	ctx := context.Background()
	for _, ts := range union {
		c1, err1 := s.ReadChange(ctx, owner, ts)
		c2, err2 := other.ReadChange(ctx, owner, ts)
		if err1 != nil || err2 != nil || string(c1) != string(c2) {
			t.Fatalf("%s: change of %v differs", name, ts.Timestamp())
		}
	}
}

// TestPropertyConvergence: two stores of random timestamp sets converge to
// their union under any split of the size limits.
func TestPropertyConvergence(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		o := genOpts{n: 50 + r.IntN(8000), common: r.IntN(90), minSize: 41, maxSize: 41 + r.IntN(3000)}
		totalMax := MinMaxSize + r.IntN(2)*r.IntN(MinMaxSize)
		rangesMax := MinRangesMaxSize + r.IntN(MaxRangesMaxSize-MinRangesMaxSize)
		t.Run(fmt.Sprintf("seed%d_n%d_common%d_max%d_total%d_ranges%d", seed, o.n, o.common, o.maxSize, totalMax, rangesMax), func(t *testing.T) {
			owner := OwnerID{byte(seed)}
			key := WriteKey{1}
			client, relay, union := randomStores(r, owner, o)
			rounds := syncSession(t, client, relay, owner, key, totalMax, rangesMax)
			checkUnion(t, "client", client, owner, union, relay)
			checkUnion(t, "relay", relay, owner, union, client)
			if again := syncSession(t, client, relay, owner, key, totalMax, rangesMax); again != 1 {
				t.Fatalf("a second session took %d rounds", again)
			}
			t.Logf("%d rounds", rounds)
		})
	}
}

// TestConvergenceManyRounds forces several rounds: more than 1 MB to move
// each way, at the minimum limits.
func TestConvergenceManyRounds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	owner := OwnerID{42}
	o := genOpts{n: 1500, common: 10, minSize: 1000, maxSize: 3000}
	client, relay, union := randomStores(r, owner, o)
	rounds := syncSession(t, client, relay, owner, WriteKey{2}, MinMaxSize, MinRangesMaxSize)
	checkUnion(t, "client", client, owner, union, relay)
	checkUnion(t, "relay", relay, owner, union, client)
	if rounds < 3 {
		t.Fatalf("only %d rounds for ~3 MB", rounds)
	}
}

func TestPushRequestContinuation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	owner, key := OwnerID{5}, WriteKey{5}
	var msgs []EncryptedMessage
	for i := range 30 {
		msgs = append(msgs, EncryptedMessage{Timestamp: Timestamp{Millis: uint64(1000 + i)}, Change: testChange(r, 50_000)})
	}
	b, n, err := NewPushRequest(owner, key, msgs, 0, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if n >= len(msgs) || n == 0 || len(b) > DefaultMaxSize {
		t.Fatalf("n=%d len=%d", n, len(b))
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Messages) != n || len(m.Ranges) != 1 || m.Ranges[0].Type != RangeFingerprint || !m.Ranges[0].UpperBound.Infinite {
		t.Fatalf("push: %d messages, ranges %+v", len(m.Messages), m.Ranges)
	}
	// The relay answers with ranges, so the client's store (holding all 30)
	// sends the rest in later rounds.
	client, relay := NewMemoryStorage(), NewMemoryStorage()
	ctx := context.Background()
	if err := client.WriteMessages(ctx, owner, msgs); err != nil {
		t.Fatal(err)
	}
	reply, err := ApplyAsRelay(ctx, relay, b, RelayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		res, err := ApplyAsClient(ctx, client, reply, ClientOptions{WriteKey: &key})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == Converged {
			break
		}
		if reply, err = ApplyAsRelay(ctx, relay, res.Message, RelayOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(relay.Timestamps(owner)); got != 30 {
		t.Fatalf("relay has %d of 30", got)
	}
}

func TestChangeTooLargeSkipped(t *testing.T) {
	ctx := context.Background()
	owner, key := OwnerID{8}, WriteKey{8}
	relay, client := NewMemoryStorage(), NewMemoryStorage()
	big := EncryptedMessage{Timestamp: Timestamp{Millis: 5}, Change: make([]byte, DefaultMaxSize)}
	small := EncryptedMessage{Timestamp: Timestamp{Millis: 6}, Change: make([]byte, 100)}
	if err := relay.WriteMessages(ctx, owner, []EncryptedMessage{big, small}); err != nil {
		t.Fatal(err)
	}
	req, _ := NewSyncRequest(ctx, client, owner, SubscriptionNone)
	reply, err := ApplyAsRelay(ctx, relay, req, RelayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(reply)
	if err != nil {
		t.Fatal(err)
	}
	if m.ErrorCode != NoError || len(m.Messages) != 1 || m.Messages[0].Timestamp != small.Timestamp {
		t.Fatalf("reply: code %v, %d messages", m.ErrorCode, len(m.Messages))
	}
	res, err := ApplyAsClient(ctx, client, reply, ClientOptions{WriteKey: &key})
	if err != nil || (res.Outcome != Converged && res.Outcome != ContinueResponse) {
		t.Fatalf("client: %v %v", res.Outcome, err)
	}
}
