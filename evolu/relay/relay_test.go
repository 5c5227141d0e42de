package relay_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// startRelay runs a relay on 127.0.0.1:0 until the test ends.
func startRelay(t testing.TB, cfg relay.Config) (*relay.Server, string) {
	t.Helper()
	if cfg.DBPath == "" {
		cfg.DBPath = filepath.Join(t.TempDir(), "relay.db")
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := relay.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		srv.Close()
	})
	return srv, "ws://" + ln.Addr().String()
}

func openStore(t testing.TB, name string) *client.Store {
	t.Helper()
	st, err := client.OpenStore(context.Background(), filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func testOwner(b byte) client.Owner {
	var s client.Secret
	s[0] = b
	return client.OwnerFromSecret(s)
}

func TestTwoClientsThroughRelay(t *testing.T) {
	ctx := context.Background()
	_, url := startRelay(t, relay.Config{})
	o := testOwner(1)
	a, b := openStore(t, "a.db"), openStore(t, "b.db")
	id, _ := protocol.ParseID("AAAAAAAAAAAAAAAAAAAAAA")
	for i := range 50 {
		c := client.DbChange{Table: "todo", ID: id, Values: []client.Column{{Name: "title", Value: "t" + string(rune('a'+i%26))}, {Name: "n", Value: float64(i)}}, IsInsert: i == 0}
		if _, err := a.Put(ctx, o, c); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := client.Sync(ctx, url, o, a, client.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 50 || rep.Outcome != "Converged" {
		t.Fatalf("a: %+v", rep)
	}
	rep, err = client.Sync(ctx, url, o, b, client.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Received != 50 || rep.Sent != 0 {
		t.Fatalf("b: %+v", rep)
	}
	ra, _ := a.Rows(ctx, o.ID(), "")
	rb, _ := b.Rows(ctx, o.ID(), "")
	if len(ra) != 1 || len(rb) != 1 || len(rb[0].Columns) != 2 || rb[0].Columns[0].Value != float64(49) {
		t.Fatalf("rows a=%+v b=%+v", ra, rb)
	}
	// A second sync converges at once.
	rep, err = client.Sync(ctx, url, o, b, client.SyncOptions{})
	if err != nil || rep.Rounds != 1 || rep.Sent+rep.Received != 0 {
		t.Fatalf("resync: %+v %v", rep, err)
	}
}

func dial(t *testing.T, url string, o protocol.OwnerID) *websocket.Conn {
	t.Helper()
	u := url + "?ownerId=" + o.String()
	ws, _, err := websocket.Dial(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

func roundTrip(t *testing.T, ws *websocket.Conn, req []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

func TestBroadcastAndMalformed(t *testing.T) {
	_, url := startRelay(t, relay.Config{})
	o := testOwner(2)
	sub := dial(t, url, o.ID())
	pub := dial(t, url, o.ID())
	subReq := protocol.NewMessageBuffer(o.ID(), protocol.BufferOptions{Type: protocol.Request, Subscription: protocol.SubscriptionSubscribe})
	b, _ := subReq.Bytes()
	if m, err := protocol.Decode(roundTrip(t, sub, b)); err != nil || m.Type != protocol.Response {
		t.Fatalf("subscribe reply: %v", err)
	}
	// A malformed request gets no reply; the next one does.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	msg := protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: 7}, Change: make([]byte, 60)}
	push, _, err := protocol.NewPushRequest(o.ID(), o.WriteKey(), []protocol.EncryptedMessage{msg}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := protocol.Decode(roundTrip(t, pub, push))
	if err != nil || reply.ErrorCode != protocol.NoError {
		t.Fatalf("push reply %+v %v", reply, err)
	}
	_, bc, err := sub.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := protocol.Decode(bc)
	if err != nil || m.Type != protocol.Broadcast || len(m.Messages) != 1 || m.Messages[0].Timestamp != msg.Timestamp {
		t.Fatalf("broadcast %+v %v", m, err)
	}
	// A wrong write key is refused and stores nothing.
	bad := o.WriteKey()
	bad[0] ^= 1
	msg2 := protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: 8}, Change: make([]byte, 60)}
	push2, _, _ := protocol.NewPushRequest(o.ID(), bad, []protocol.EncryptedMessage{msg2}, 0, nil)
	reply, err = protocol.Decode(roundTrip(t, pub, push2))
	if err != nil || reply.ErrorCode != protocol.WriteKeyError {
		t.Fatalf("wrong key reply %+v %v", reply, err)
	}
}

func TestQuota(t *testing.T) {
	srv, url := startRelay(t, relay.Config{QuotaBytes: 150})
	o := testOwner(3)
	ws := dial(t, url, o.ID())
	mk := func(ms uint64) []byte {
		p, _, _ := protocol.NewPushRequest(o.ID(), o.WriteKey(), []protocol.EncryptedMessage{{Timestamp: protocol.Timestamp{Millis: ms}, Change: make([]byte, 100)}}, 0, nil)
		return p
	}
	if m, _ := protocol.Decode(roundTrip(t, ws, mk(1))); m.ErrorCode != protocol.NoError {
		t.Fatalf("first: %v", m.ErrorCode)
	}
	if m, _ := protocol.Decode(roundTrip(t, ws, mk(2))); m.ErrorCode != protocol.QuotaError {
		t.Fatalf("second: %v", m.ErrorCode)
	}
	if n, _ := relay.StorageOf(srv).Size(context.Background(), o.ID()); n != 1 {
		t.Fatalf("stored %d", n)
	}
}

func TestGracefulShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := relay.New(ctx, relay.Config{DBPath: filepath.Join(t.TempDir(), "r.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	ws := dial(t, "ws://"+ln.Addr().String(), protocol.OwnerID{})
	// A round trip proves the relay has registered the connection.
	req, _ := protocol.NewMessageBuffer(protocol.OwnerID{}, protocol.BufferOptions{Type: protocol.Request}).Bytes()
	roundTrip(t, ws, req)
	readErr := make(chan error, 1)
	go func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		_, _, err := ws.Read(rctx)
		readErr <- err
	}()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-readErr; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("client saw %v, want close 1001", err)
	}
}

func TestIsOwnerAllowed(t *testing.T) {
	allowed := testOwner(4)
	_, url := startRelay(t, relay.Config{IsOwnerAllowed: func(_ context.Context, o protocol.OwnerID) (bool, error) {
		return o == allowed.ID(), nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		url    string
		status int
	}{
		{url + "?ownerId=nope", 400},
		{url, 400},
		{url + "?ownerId=" + testOwner(5).ID().String(), 401},
	} {
		_, resp, err := websocket.Dial(ctx, c.url, nil)
		if err == nil || resp == nil || resp.StatusCode != c.status {
			t.Errorf("%s: %v, want HTTP %d", c.url, err, c.status)
		}
	}
	ws := dial(t, url, allowed.ID())
	req, _ := protocol.NewMessageBuffer(allowed.ID(), protocol.BufferOptions{Type: protocol.Request}).Bytes()
	if m, err := protocol.Decode(roundTrip(t, ws, req)); err != nil || m.Type != protocol.Response {
		t.Fatalf("allowed owner: %v", err)
	}
}
