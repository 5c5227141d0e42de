package relay_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// pushAll stores msgs of o in the relay at url, in requests that fit.
func pushAll(t testing.TB, url string, o client.Owner, msgs []protocol.EncryptedMessage) {
	t.Helper()
	ws := dialCtx(t, url, o.ID())
	defer ws.CloseNow()
	for len(msgs) > 0 {
		req, n, err := protocol.NewPushRequest(o.ID(), o.WriteKey(), msgs, 0, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		reply := roundTripTB(t, ws, req)
		if m, err := protocol.Decode(reply); err != nil || m.ErrorCode != protocol.NoError {
			t.Fatalf("push: %v %v", m, err)
		}
		msgs = msgs[n:]
	}
}

func dialCtx(t testing.TB, url string, o protocol.OwnerID) *websocket.Conn {
	t.Helper()
	u := url + "?ownerId=" + o.String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(protocol.MaxMaxSize)
	return ws
}

func roundTripTB(t testing.TB, ws *websocket.Conn, req []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageBinary, req); err != nil {
		t.Fatal(err)
	}
	_, msg, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// bigMessages are n messages of size bytes each.
func bigMessages(node byte, n, size int) []protocol.EncryptedMessage {
	msgs := make([]protocol.EncryptedMessage, n)
	for i := range msgs {
		c := make([]byte, size)
		rand.Read(c)
		msgs[i] = protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: uint64(1_700_000_000_000 + i), NodeID: protocol.NodeID{node}}, Change: c}
	}
	return msgs
}

// TestNeverReadingClientsBoundedMemory is issue 16's memory goal: 4
// connections that pipeline 300 small sync requests each (no write key
// needed), every reply about 1 MB, and never read grow the relay process's
// peak RSS by at most 64 MB; the relay closes them, and other clients keep
// syncing meanwhile. Before the queue was bounded in bytes, each such
// connection could hold 256 replies (~256 MB).
func TestNeverReadingClientsBoundedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	c := startChild(t, filepath.Join(t.TempDir(), "relay.db"))
	big := testOwner(40)
	pushAll(t, c.url, big, bigMessages(1, 6000, 500)) // 3 MB: every full reply is ~1 MB
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	warm := openStore(t, "warm.db")
	if rep, err := client.Sync(ctx, c.url, big, warm, client.SyncOptions{}); err != nil || rep.Received != 6000 {
		t.Fatalf("warm-up sync: %+v %v", rep, err)
	}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", c.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset peak RSS: %v", err)
	}
	before, _ := c.memory(t)
	req, err := protocol.NewSyncRequest(ctx, protocol.NewMemoryStorage(), big.ID(), protocol.SubscriptionNone)
	if err != nil {
		t.Fatal(err)
	}
	attackers := make([]*websocket.Conn, 4)
	var wg sync.WaitGroup
	for i := range attackers {
		attackers[i] = dialCtx(t, c.url, big.ID())
		defer attackers[i].CloseNow()
		wg.Go(func() {
			for range 300 {
				if attackers[i].Write(ctx, websocket.MessageBinary, req) != nil {
					return
				}
			}
		})
	}
	// Other clients keep syncing meanwhile.
	o := testOwner(41)
	st := openStore(t, "other.db")
	for i := range 10 {
		if _, err := st.Put(ctx, o, client.DbChange{Table: "t", ID: protocol.ID{byte(i)}, Values: []client.Column{{Name: "n", Value: float64(i)}}}); err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
		rep, err := client.Sync(sctx, c.url, o, st, client.SyncOptions{})
		scancel()
		if err != nil || rep.Sent != 1 {
			t.Fatalf("sync %d of another client while the relay is flooded: %+v %v", i, rep, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	_, peak := c.memory(t)
	t.Logf("relay RSS before %d MB, peak during %d MB", before>>20, peak>>20)
	if grow := peak - before; grow > 64<<20 {
		t.Fatalf("relay peak RSS grew by %d MB, want at most 64 MB", grow>>20)
	}
	// The relay closed them: reading drains what was in flight, not 300 replies.
	for i, ws := range attackers {
		n := 0
		for {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			_, _, err := ws.Read(rctx)
			rcancel()
			if err != nil {
				break
			}
			n++
		}
		if n >= 300 {
			t.Fatalf("attacker %d read %d replies: the relay did not close it", i, n)
		}
	}
}
