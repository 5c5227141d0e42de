package relay_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/evolu/protocol"
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
		reply, err := srv.ApplyRequest(ctx, req)
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
	writeAll(b, srv.Storage(), o, append(append([]protocol.EncryptedMessage{}, all[:99_990]...), all[100_000:]...))
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
