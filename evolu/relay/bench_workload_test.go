package relay_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// opaqueMessages makes n messages with 100-byte random changes; the relay
// never reads them and the client stores them as unreadable, so the
// workload measures sync, not encryption.
func opaqueMessages(b testing.TB, n int, node byte) []protocol.EncryptedMessage {
	msgs := make([]protocol.EncryptedMessage, n)
	for i := range msgs {
		c := make([]byte, 100)
		rand.Read(c)
		msgs[i] = protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1_700_000_000_000 + i), NodeID: protocol.NodeID{node}}, Change: c}
	}
	return msgs
}

func writeAll(b testing.TB, st protocol.Storage, o protocol.OwnerID, msgs []protocol.EncryptedMessage) {
	ctx := context.Background()
	for len(msgs) > 0 {
		n := min(len(msgs), 5000)
		if err := st.WriteMessages(ctx, o, msgs[:n]); err != nil {
			b.Fatal(err)
		}
		msgs = msgs[n:]
	}
}

// BenchmarkWorkloadPush20kPull: a client pushes 20,000 changes into an
// empty Ferry relay, then a fresh client pulls them all (the first
// relay workload, Ferry against Ferry).
func BenchmarkWorkloadPush20kPull(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		srv, url := startRelay(b, relay.Config{})
		o := testOwner(9)
		a := preloadedStore(b, filepath.Join(b.TempDir(), "a.db"), o.ID(), opaqueMessages(b, 20_000, 1))
		fresh := openStore(b, "b.db")
		b.StartTimer()
		ctx := context.Background()
		rep, err := client.Sync(ctx, url, o, a, client.SyncOptions{})
		if err != nil || rep.Sent != 20_000 {
			b.Fatalf("push: %+v %v", rep, err)
		}
		rep2, err := client.Sync(ctx, url, o, fresh, client.SyncOptions{})
		if err != nil || rep2.Received != 20_000 {
			b.Fatalf("pull: %+v %v", rep2, err)
		}
		b.StopTimer()
		if n, _ := relay.StorageOf(srv).Size(ctx, o.ID()); n != 20_000 {
			b.Fatalf("relay has %d", n)
		}
		b.ReportMetric(float64(rep.Rounds+rep2.Rounds), "rounds")
		b.ReportMetric(float64(rep.BytesSent+rep.BytesReceived+rep2.BytesSent+rep2.BytesReceived), "wire-bytes")
		b.StartTimer()
	}
}

// BenchmarkWorkloadReconcile100k: client and relay hold the same 100,000
// changes but for 10 on each side.
func BenchmarkWorkloadReconcile100k(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		srv, url := startRelay(b, relay.Config{})
		o := testOwner(10)
		all := opaqueMessages(b, 100_010, 1)
		clientSet := append(append([]protocol.EncryptedMessage{}, all[:50_000]...), all[50_010:]...)
		relaySet := append(append([]protocol.EncryptedMessage{}, all[:99_990]...), all[100_000:]...)
		a := preloadedStore(b, filepath.Join(b.TempDir(), "a.db"), o.ID(), clientSet)
		writeAll(b, relay.StorageOf(srv), o.ID(), relaySet)
		b.StartTimer()
		rep, err := client.Sync(context.Background(), url, o, a, client.SyncOptions{})
		if err != nil || rep.Sent != 10 || rep.Received != 10 {
			b.Fatalf("reconcile: %+v %v", rep, err)
		}
		b.StopTimer()
		b.ReportMetric(float64(rep.Rounds), "rounds")
		b.ReportMetric(float64(rep.BytesSent+rep.BytesReceived), "wire-bytes")
		b.StartTimer()
	}
}
