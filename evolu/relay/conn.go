package relay

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// conn is one WebSocket connection. Its reader goroutine applies requests
// in order; its writer goroutine sends the queued replies and broadcasts;
// its keepalive goroutine pings it and closes it when idle. The outgoing
// queue is bounded in bytes (docs/decisions/evolu-relay-memory.md).
type conn struct {
	s      *Server
	ws     *websocket.Conn
	remote string // remote IP address
	done   chan struct{}
	cancel context.CancelFunc
	owners map[protocol.OwnerID]struct{} // guarded by Server.mu

	mu     sync.Mutex
	queue  [][]byte
	queued int64  // bytes in queue
	reason string // why the relay ends c ("" while it does not)
	code   websocket.StatusCode
	text   string
	wake   chan struct{} // capacity 1: the queue has frames

	lastRead atomic.Int64 // unix nanoseconds of the last frame received
}

// send queues msg, or closes the connection when msg would take it over
// its budget, or the relay over its total.
func (c *conn) send(msg []byte) {
	n := int64(len(msg))
	c.mu.Lock()
	if c.reason != "" {
		c.mu.Unlock()
		return
	}
	over := ""
	switch {
	case c.queued+n > c.s.cfg.QueueBytes:
		over = "queue"
	case c.s.queued.Add(n) > c.s.cfg.TotalQueueBytes:
		c.s.queued.Add(-n)
		over = "total queue"
	}
	if over == "" {
		c.queue = append(c.queue, msg)
		c.queued += n
		c.mu.Unlock()
		c.s.metrics.queued.Add(float64(n))
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	}
	c.mu.Unlock()
	c.overBudget(over, n)
}

// overBudget logs and closes c, whose next frame of n bytes would take it
// over the budget named by over.
func (c *conn) overBudget(over string, n int64) {
	c.mu.Lock()
	queued := c.queued
	c.mu.Unlock()
	c.s.log.Warn("evolu relay: closing a connection over its outgoing budget (a client that does not read)",
		"remote", c.remote, "budget", over, "queued_bytes", queued, "frame_bytes", n)
	c.end(websocket.StatusPolicyViolation, "outgoing queue over budget", "over budget")
}

// end stops c's goroutines without waiting; serveConn then closes the
// WebSocket with code and text (at once, without the close handshake, for
// a peer that does not read).
func (c *conn) end(code websocket.StatusCode, text, reason string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason, c.code, c.text = reason, code, text
	}
	c.mu.Unlock()
	c.cancel()
}

// backlogged reports whether the queue has no room left for a reply of
// the largest size.
func (c *conn) backlogged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued+int64(c.s.cfg.TotalMaxSize) > c.s.cfg.QueueBytes
}

// take removes the queued frames.
func (c *conn) take() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

// sent accounts for a frame written (or dropped at close).
func (c *conn) sent(n int64) {
	c.mu.Lock()
	c.queued -= n
	c.mu.Unlock()
	c.s.queued.Add(-n)
	c.s.metrics.queued.Sub(float64(n))
}

// close sends a close frame (waiting for the peer's, at most 5 s), then
// stops the connection's goroutines. The first reason is the one logged.
func (c *conn) close(code websocket.StatusCode, text, reason string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = reason
	}
	c.mu.Unlock()
	_ = c.ws.Close(code, text)
	c.cancel()
}

// admit registers a new connection from remote, or reports why not.
func (s *Server) admit(remote string) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return http.StatusServiceUnavailable, "shutting down"
	case s.open >= s.cfg.MaxConns:
		return http.StatusServiceUnavailable, "connection limit"
	case s.cfg.MaxConnsPerAddr > 0 && s.byAddr[remote] >= s.cfg.MaxConnsPerAddr:
		return http.StatusTooManyRequests, "per-address connection limit"
	}
	s.byAddr[remote]++
	s.open++
	return 0, ""
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Handler returns the WebSocket endpoint; a plain GET /healthz is the
// health check of AdminHandler. ctx carries values only: the
// connections it accepts live until their peer leaves or Shutdown closes
// them with status 1001.
func (s *Server) Handler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" && r.Header.Get("Upgrade") == "" {
			s.health(w, r) // for load balancers that check the serving port
			return
		}
		if !s.allowed(w, r) {
			return
		}
		remote := remoteIP(r)
		if code, why := s.admit(remote); code != 0 {
			s.metrics.refused.WithLabelValues(why).Inc()
			s.log.Warn("evolu relay: connection refused", "remote", remote, "reason", why)
			http.Error(w, "relay busy: "+why, code)
			return
		}
		registered := false
		defer func() {
			if !registered {
				s.mu.Lock()
				s.release(remote)
				s.mu.Unlock()
			}
		}()
		// Like the TS relay (ws without perMessageDeflate): no compression, so
		// bytes on the wire are the protocol bytes; and any Origin, since web
		// apps of any site connect to a relay (the data is encrypted).
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			s.log.Debug("evolu relay: accept", "remote", remote, "err", err)
			return
		}
		ws.SetReadLimit(int64(s.cfg.TotalMaxSize))
		// Connections outlive ctx: Shutdown closes them with a close frame.
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c := &conn{s: s, ws: ws, remote: remote, done: make(chan struct{}), cancel: cancel,
			owners: make(map[protocol.OwnerID]struct{}), wake: make(chan struct{}, 1)}
		c.lastRead.Store(time.Now().UnixNano())
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			cancel()
			ws.Close(websocket.StatusGoingAway, "Ferry relay shutting down")
			return
		}
		s.conns[c] = struct{}{}
		registered = true
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()
		s.serveConn(cctx, c, r.URL.Query().Get("ownerId"))
	})
}

// allowed applies Config.IsOwnerAllowed, answering a refusal itself.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.IsOwnerAllowed == nil {
		return true
	}
	owner, err := protocol.ParseOwnerID(r.URL.Query().Get("ownerId"))
	if err != nil {
		s.metrics.refused.WithLabelValues("invalid owner").Inc()
		http.Error(w, "invalid or missing ownerId", http.StatusBadRequest)
		return false
	}
	ok, err := s.cfg.IsOwnerAllowed(r.Context(), owner)
	if err != nil {
		s.log.Error("evolu relay: isOwnerAllowed", "owner", owner.String(), "err", err)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return false
	}
	if !ok {
		s.metrics.refused.WithLabelValues("owner not allowed").Inc()
		s.log.Warn("evolu relay: owner not allowed", "owner", owner.String(), "remote", remoteIP(r))
		http.Error(w, "unauthorized owner", http.StatusUnauthorized)
		return false
	}
	return true
}

// release forgets one connection of remote; s.mu is held.
func (s *Server) release(remote string) {
	s.open--
	if s.byAddr[remote]--; s.byAddr[remote] <= 0 {
		delete(s.byAddr, remote)
	}
}

// serveConn runs c until it ends, then unregisters it.
func (s *Server) serveConn(ctx context.Context, c *conn, owner string) {
	start := time.Now()
	s.metrics.accepted.Inc()
	s.metrics.conns.Inc()
	s.log.Info("evolu relay: connected", "remote", c.remote, "owner", owner)
	go func() {
		<-ctx.Done()
		close(c.done)
	}()
	var bg sync.WaitGroup
	bg.Go(func() { s.writeLoop(ctx, c) })
	bg.Go(func() { s.keepalive(ctx, c) })
	s.readLoop(ctx, c)
	c.cancel()
	bg.Wait()
	for _, m := range c.take() {
		c.sent(int64(len(m)))
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.release(c.remote)
	for o := range c.owners {
		s.removeSub(o, c)
	}
	s.mu.Unlock()
	c.mu.Lock()
	reason, code, text := c.reason, c.code, c.text
	c.mu.Unlock()
	switch {
	case code == 0:
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
	case reason == "over budget" || reason == "no pong" || reason == "write failed":
		// A peer that does not read would not answer a close handshake
		// either: drop the connection at once.
		_ = c.ws.CloseNow()
	default:
		_ = c.ws.Close(code, text)
	}
	if reason == "" {
		reason = "peer left"
	}
	s.metrics.conns.Dec()
	s.metrics.closed.WithLabelValues(reason).Inc()
	s.log.Info("evolu relay: disconnected", "remote", c.remote, "owner", owner, "reason", reason, "duration", time.Since(start).Round(time.Millisecond))
}

func (s *Server) readLoop(ctx context.Context, c *conn) {
	for {
		typ, msg, err := c.ws.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) {
				s.log.Debug("evolu relay: read", "remote", c.remote, "err", err)
			}
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		s.metrics.bytesIn.Add(float64(len(msg)))
		if typ != websocket.MessageBinary {
			continue
		}
		if c.backlogged() {
			// No room for a reply of the largest size: the peer is not
			// reading. Close before building one more.
			c.overBudget("queue", int64(s.cfg.TotalMaxSize))
			return
		}
		reply, err := s.apply(ctx, c, msg)
		if err != nil {
			s.metrics.dropped.Inc()
			s.log.Debug("evolu relay: dropped request", "remote", c.remote, "err", err)
			continue
		}
		s.metrics.requests.Inc()
		c.send(reply)
	}
}

func (s *Server) writeLoop(ctx context.Context, c *conn) {
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			return
		}
		for _, msg := range c.take() {
			wctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
			err := c.ws.Write(wctx, websocket.MessageBinary, msg)
			cancel()
			c.sent(int64(len(msg)))
			if err != nil {
				if ctx.Err() == nil {
					c.end(websocket.StatusPolicyViolation, "write timeout", "write failed")
				}
				return
			}
			s.metrics.bytesOut.Add(float64(len(msg)))
		}
	}
}

// keepalive pings c every PingInterval and closes it when a ping is not
// answered in time, or when it sent nothing for IdleTimeout and is
// subscribed to no owner.
func (s *Server) keepalive(ctx context.Context, c *conn) {
	every := s.cfg.PingInterval
	if every < 0 || s.cfg.IdleTimeout > 0 && s.cfg.IdleTimeout/2 < every {
		every = s.cfg.IdleTimeout / 2
	}
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.cfg.IdleTimeout > 0 && time.Since(time.Unix(0, c.lastRead.Load())) >= s.cfg.IdleTimeout && !s.subscribed(c) {
			c.close(websocket.StatusNormalClosure, "idle", "idle")
			return
		}
		if s.cfg.PingInterval > 0 && time.Since(lastPing) >= s.cfg.PingInterval {
			lastPing = time.Now()
			pctx, cancel := context.WithTimeout(ctx, s.cfg.PingInterval)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				c.end(websocket.StatusPolicyViolation, "no pong", "no pong")
				return
			}
		}
	}
}

func (s *Server) subscribed(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(c.owners) > 0
}
