package protocol_test

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/synctest"
)

func randomChange(r *rand.Rand, n int) []byte {
	c := make([]byte, n)
	for i := range c {
		c[i] = byte(r.Uint32())
	}
	return c
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
		o := synctest.GenOpts{N: 50 + r.IntN(8000), Common: r.IntN(90), MinSize: 41, MaxSize: 41 + r.IntN(3000)}
		totalMax := MinMaxSize + r.IntN(2)*r.IntN(MinMaxSize)
		rangesMax := MinRangesMaxSize + r.IntN(MaxRangesMaxSize-MinRangesMaxSize)
		clientRanges := MinRangesMaxSize + r.IntN(MaxRangesMaxSize-MinRangesMaxSize)
		t.Run(fmt.Sprintf("seed%d_n%d_common%d_max%d_total%d_ranges%d_%d", seed, o.N, o.Common, o.MaxSize, totalMax, rangesMax, clientRanges), func(t *testing.T) {
			owner := OwnerID{byte(seed)}
			key := WriteKey{1}
			client, relay := NewMemoryStorage(), NewMemoryStorage()
			union := synctest.Fill(t, r, client, relay, owner, o)
			rounds := synctest.Session(t, client, relay, owner, key, totalMax, rangesMax, clientRanges)
			synctest.CheckUnion(t, "client", client, owner, union, relay)
			synctest.CheckUnion(t, "relay", relay, owner, union, client)
			if again := synctest.Session(t, client, relay, owner, key, totalMax, rangesMax, clientRanges); again != 1 {
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
	o := synctest.GenOpts{N: 1500, Common: 10, MinSize: 1000, MaxSize: 3000}
	client, relay := NewMemoryStorage(), NewMemoryStorage()
	union := synctest.Fill(t, r, client, relay, owner, o)
	rounds := synctest.Session(t, client, relay, owner, WriteKey{2}, MinMaxSize, MinRangesMaxSize, MinRangesMaxSize)
	synctest.CheckUnion(t, "client", client, owner, union, relay)
	synctest.CheckUnion(t, "relay", relay, owner, union, client)
	if rounds < 3 {
		t.Fatalf("only %d rounds for ~3 MB", rounds)
	}
}

func TestPushRequestContinuation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	owner, key := OwnerID{5}, WriteKey{5}
	var msgs []EncryptedMessage
	for i := range 30 {
		msgs = append(msgs, EncryptedMessage{Timestamp: Timestamp{Millis: uint64(1000 + i)}, Change: randomChange(r, 50_000)})
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

// TestRangeOverflow: with large changes and a relay whose ranges limit is
// small while the client's is large, answering every range of a request can
// outgrow the message (seed 99 did, where @evolu/common 8.11.0 throws). The
// relay must still answer within its limit and the stores must converge.
func TestRangeOverflow(t *testing.T) {
	for seed := 95; seed < 105; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 12345))
		o := synctest.GenOpts{N: 1 + r.IntN(4000), Common: r.IntN(100), MinSize: 41, MaxSize: 41 + r.IntN(20000)}
		totalMax := MinMaxSize + r.IntN(2)*r.IntN(MinMaxSize)
		relayRanges := MinRangesMaxSize + r.IntN(MaxRangesMaxSize-MinRangesMaxSize)
		clientRanges := MinRangesMaxSize + r.IntN(MaxRangesMaxSize-MinRangesMaxSize)
		owner := OwnerID{byte(seed)}
		client, relay := NewMemoryStorage(), NewMemoryStorage()
		union := synctest.Fill(t, r, client, relay, owner, o)
		synctest.Session(t, client, relay, owner, WriteKey{1}, totalMax, relayRanges, clientRanges)
		synctest.CheckUnion(t, "client", client, owner, union, relay)
		synctest.CheckUnion(t, "relay", relay, owner, union, client)
	}
}
