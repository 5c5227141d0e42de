package relay_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// exchange runs a client session against the relay in process (no
// WebSocket), so profiles show the relay's own work.
func exchange(b *testing.B, srv *relay.Server, client protocol.Storage, o protocol.OwnerID, key protocol.WriteKey) {
	ctx := context.Background()
	req, err := protocol.NewSyncRequest(ctx, client, o, protocol.SubscriptionNone)
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		reply, err := relay.ApplyRequest(ctx, srv, req)
		if err != nil {
			b.Fatal(err)
		}
		res, err := protocol.ApplyAsClient(ctx, client, reply, protocol.ClientOptions{WriteKey: &key})
		if err != nil {
			b.Fatal(err)
		}
		if res.Outcome != protocol.ContinueResponse {
			return
		}
		req = res.Message
	}
	b.Fatal("no convergence")
}

// BenchmarkApplyPush20kPull is BenchmarkWorkloadPush20kPull without the
// WebSocket and with in-memory clients: the relay's share of the work.
func BenchmarkApplyPush20kPull(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		srv, err := relay.New(context.Background(), relay.Config{DBPath: filepath.Join(b.TempDir(), "r.db")})
		if err != nil {
			b.Fatal(err)
		}
		o := protocol.OwnerID{1}
		key := protocol.WriteKey{1}
		a, fresh := protocol.NewMemoryStorage(), protocol.NewMemoryStorage()
		writeAll(b, a, o, opaqueMessages(b, 20_000, 1))
		b.StartTimer()
		exchange(b, srv, a, o, key)
		exchange(b, srv, fresh, o, key)
		b.StopTimer()
		if n, _ := fresh.Size(context.Background(), o); n != 20_000 {
			b.Fatalf("pulled %d", n)
		}
		srv.Close()
		b.StartTimer()
	}
}

// BenchmarkApplyReconcile100k is BenchmarkWorkloadReconcile100k without the
// WebSocket and with an in-memory client: the relay's share of the work.
func BenchmarkApplyReconcile100k(b *testing.B) {
	srv, err := relay.New(context.Background(), relay.Config{DBPath: filepath.Join(b.TempDir(), "r.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	o := protocol.OwnerID{2}
	key := protocol.WriteKey{2}
	all := opaqueMessages(b, 100_010, 1)
	writeAll(b, relay.StorageOf(srv), o, append(append([]protocol.EncryptedMessage{}, all[:99_990]...), all[100_000:]...))
	clientSet := append(append([]protocol.EncryptedMessage{}, all[:50_000]...), all[50_010:]...)
	for b.Loop() {
		b.StopTimer()
		a := protocol.NewMemoryStorage()
		writeAll(b, a, o, clientSet)
		a.Fingerprint(context.Background(), o, 0, 0) // build the client's prefix XORs
		b.StartTimer()
		exchange(b, srv, a, o, key)
	}
}

// BenchmarkApplyReconcile100kScattered is the reconciliation of the
// side-by-side benchmark (evolu/interop BenchmarkRelayReconcile100k) in
// process: 100,005 timestamps, 5 only on the client and 5 only on the relay,
// scattered over the whole range (more ranges to split than the clustered
// differences of BenchmarkApplyReconcile100k). So that every iteration
// reconciles the same differences without reloading the relay, the client's
// 5 get new timestamps (same millis, next counter) in each iteration, and
// the client also holds those of the earlier iterations, which the relay
// already has.
func BenchmarkApplyReconcile100kScattered(b *testing.B) { benchScattered(b, false) }

// BenchmarkApplyReconcile100kScatteredCold is
// BenchmarkApplyReconcile100kScattered against a relay just reopened on its
// database (outside the timer): nothing of the owner in memory, as after a
// restart.
func BenchmarkApplyReconcile100kScatteredCold(b *testing.B) { benchScattered(b, true) }

func benchScattered(b *testing.B, cold bool) {
	path := filepath.Join(b.TempDir(), "r.db")
	open := func() *relay.Server {
		srv, err := relay.New(context.Background(), relay.Config{DBPath: path})
		if err != nil {
			b.Fatal(err)
		}
		return srv
	}
	srv := open()
	defer func() { srv.Close() }()
	o := protocol.OwnerID{3}
	key := protocol.WriteKey{3}
	const n = 100_005
	at := func(i, round int) protocol.EncryptedMessage {
		c := make([]byte, 100)
		c[0], c[1] = byte(i), byte(i>>8)
		return protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1_700_000_000_000 + i), Counter: uint16(round), NodeID: protocol.NodeID{1}}, Change: c}
	}
	onlyClient := []int{10, 20_000, 50_000, 77_777, 100_004}
	onlyRelay := map[int]bool{0: true, 33_333: true, 50_001: true, 99_999: true, 100_003: true}
	var shared []protocol.EncryptedMessage
	for i := range n {
		if !onlyRelay[i] && !slices.Contains(onlyClient, i) {
			shared = append(shared, at(i, 0))
		}
	}
	var relaySet []protocol.EncryptedMessage
	for i := range onlyRelay {
		relaySet = append(relaySet, at(i, 0))
	}
	writeAll(b, relay.StorageOf(srv), o, append(relaySet, shared...))
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		a := protocol.NewMemoryStorage()
		var own []protocol.EncryptedMessage
		for r := 1; r <= round; r++ {
			for _, i := range onlyClient {
				own = append(own, at(i, r))
			}
		}
		writeAll(b, a, o, append(own, shared...))
		a.Fingerprint(context.Background(), o, 0, 0) // build the client's prefix XORs
		if cold {
			srv.Close()
			srv = open()
		}
		b.StartTimer()
		exchange(b, srv, a, o, key)
	}
}
