package relay_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
	"github.com/ferry-sync/ferry/internal/realtest"
)

func dialStatus(t *testing.T, url string, o protocol.OwnerID) (*websocket.Conn, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := url + "?ownerId=" + o.String()
	ws, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		if resp == nil {
			t.Fatal(err)
		}
		return nil, resp.StatusCode
	}
	t.Cleanup(func() { ws.CloseNow() })
	return ws, 101
}

func TestConnectionLimits(t *testing.T) {
	_, url := startRelay(t, relay.Config{MaxConns: 2})
	o := testOwner(50)
	for i, want := range []int{101, 101, 503} {
		if _, got := dialStatus(t, url, o.ID()); got != want {
			t.Fatalf("connection %d: HTTP %d, want %d", i, got, want)
		}
	}
	_, url = startRelay(t, relay.Config{MaxConnsPerAddr: 1})
	a, got := dialStatus(t, url, o.ID())
	if got != 101 {
		t.Fatalf("first: %d", got)
	}
	if _, got := dialStatus(t, url, o.ID()); got != 429 {
		t.Fatalf("second from one address: HTTP %d, want 429", got)
	}
	a.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, got := dialStatus(t, url, o.ID()); got == 101 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after the first left: HTTP %d", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIdleTimeout: a connection that sends nothing and is subscribed to no
// owner is closed; a subscribed one stays.
func TestIdleTimeout(t *testing.T) {
	_, url := startRelay(t, relay.Config{IdleTimeout: 300 * time.Millisecond, PingInterval: 100 * time.Millisecond})
	o := testOwner(51)
	idle := dial(t, url, o.ID())
	sub := dial(t, url, o.ID())
	subReq, _ := protocol.NewMessageBuffer(o.ID(), protocol.BufferOptions{Type: protocol.Request, Subscription: protocol.SubscriptionSubscribe}).Bytes()
	roundTrip(t, sub, subReq)
	ctx, cancel := context.WithTimeout(context.Background(), realtest.Scale(5*time.Second))
	defer cancel()
	// The subscribed one reads (so it answers pings) and stays open.
	readErr := make(chan error, 1)
	go func() {
		_, _, err := sub.Read(ctx)
		readErr <- err
	}()
	start := time.Now()
	if _, _, err := idle.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("idle connection: %v, want a close", err)
	}
	if d := time.Since(start); d > realtest.Scale(3*time.Second) {
		t.Fatalf("closed after %v", d)
	}
	select {
	case err := <-readErr:
		t.Fatalf("subscribed connection ended: %v", err)
	case <-time.After(time.Second):
	}
}

// syncBuffer is a goroutine-safe log buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOperatorLogsAndAdmin: connects, disconnects and quota and write-key
// refusals are logged with the remote address; /healthz and /metrics
// answer on the admin handler.
func TestOperatorLogsAndAdmin(t *testing.T) {
	var logs syncBuffer
	srv, url := startRelay(t, relay.Config{QuotaBytes: 150, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	o := testOwner(52)
	ws := dial(t, url, o.ID())
	push := func(ms uint64, key protocol.WriteKey) protocol.ErrorCode {
		p, _, _ := protocol.NewPushRequest(o.ID(), key, []protocol.EncryptedMessage{{Timestamp: protocol.Timestamp{Millis: ms}, Change: make([]byte, 100)}}, 0, nil)
		m, _ := protocol.Decode(roundTrip(t, ws, p))
		return m.ErrorCode
	}
	if c := push(1, o.WriteKey()); c != protocol.NoError {
		t.Fatal(c)
	}
	if c := push(2, o.WriteKey()); c != protocol.QuotaError {
		t.Fatal(c)
	}
	bad := o.WriteKey()
	bad[0] ^= 1
	if c := push(3, bad); c != protocol.WriteKeyError {
		t.Fatal(c)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	admin := httptest.NewServer(srv.AdminHandler())
	defer admin.Close()
	get := func(path string) string {
		resp, err := http.Get(admin.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", path, resp.StatusCode)
		}
		return string(b)
	}
	if got := get("/healthz"); got != "ok\n" {
		t.Fatalf("/healthz: %q", got)
	}
	// Also on the WebSocket port, for load balancers (issue 16: a plain GET answered 426).
	resp, err := http.Get("http" + strings.TrimPrefix(url, "ws") + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /healthz on the relay port: %v %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "disconnected") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	m := get("/metrics")
	for _, want := range []string{"evolu_relay_connections_accepted_total 1", `evolu_relay_protocol_errors_total{code="ProtocolQuotaError"} 1`,
		"evolu_relay_requests_total 3", "evolu_relay_apply_seconds_count 3", "evolu_relay_connections 0",
		`evolu_relay_storage_seconds_count{op="write"} 2`, `evolu_relay_storage_seconds_count{op="validate_write_key"} 3`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	l := logs.String()
	for _, want := range []string{`msg="evolu relay: connected" remote=127.0.0.1`, `msg="evolu relay: disconnected" remote=127.0.0.1`, "quota refused a write", "write key refused"} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q:\n%s", want, l)
		}
	}
}

// TestPingTimeout: a subscribed connection that does not answer pings (it
// never reads) is closed, and the close is logged with its reason.
func TestPingTimeout(t *testing.T) {
	var logs syncBuffer
	_, url := startRelay(t, relay.Config{PingInterval: 100 * time.Millisecond, IdleTimeout: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	o := testOwner(53)
	ws := dial(t, url, o.ID())
	subReq, _ := protocol.NewMessageBuffer(o.ID(), protocol.BufferOptions{Type: protocol.Request, Subscription: protocol.SubscriptionSubscribe}).Bytes()
	roundTrip(t, ws, subReq) // then it never reads again
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `reason="no pong"`) {
		if time.Now().After(deadline) {
			t.Fatalf("a connection that answers no ping was not closed:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShutdownMountedHandler: with only Handler mounted in the operator's
// own http.Server, Shutdown closes the live WebSockets (1001) and refuses
// new ones.
func TestShutdownMountedHandler(t *testing.T) {
	ctx := context.Background()
	srv, err := relay.New(ctx, relay.Config{DBPath: filepath.Join(t.TempDir(), "r.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler(ctx))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	o := testOwner(54)
	ws := dial(t, url, o.ID())
	req, _ := protocol.NewMessageBuffer(o.ID(), protocol.BufferOptions{Type: protocol.Request}).Bytes()
	roundTrip(t, ws, req)
	readErr := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, _, err := ws.Read(rctx)
		readErr <- err
	}()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-readErr; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("client saw %v, want close 1001", err)
	}
	if _, code := dialStatus(t, url, o.ID()); code != 503 {
		t.Fatalf("dial after Shutdown: HTTP %d, want 503", code)
	}
}
