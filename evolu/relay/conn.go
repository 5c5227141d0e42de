package relay

import (
	"context"
	"errors"
	"net/http"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/protocol"
)

// conn is one WebSocket connection. Its reader goroutine applies requests
// in order; its writer goroutine sends replies and broadcasts from out.
type conn struct {
	ws     *websocket.Conn
	out    chan []byte
	done   chan struct{}
	cancel context.CancelFunc
	owners map[protocol.OwnerID]struct{} // guarded by Server.mu
}

// send queues msg; a connection whose queue is full is closed as too slow.
func (c *conn) send(msg []byte) {
	select {
	case c.out <- msg:
	case <-c.done:
	default:
		// Too slow: end the connection; its handler goroutine cleans up.
		c.cancel()
	}
}

// close sends a close frame (waiting for the peer's, at most 5 s), then
// stops the connection's goroutines.
func (c *conn) close(code websocket.StatusCode, reason string) {
	_ = c.ws.Close(code, reason)
	c.cancel()
}

// Handler returns the WebSocket endpoint. ctx carries values only: the
// connections it accepts live until their peer leaves or Serve shuts down,
// which closes them with status 1001.
func (s *Server) Handler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.IsOwnerAllowed != nil {
			owner, err := protocol.ParseOwnerID(r.URL.Query().Get("ownerId"))
			if err != nil {
				http.Error(w, "invalid or missing ownerId", http.StatusBadRequest)
				return
			}
			ok, err := s.cfg.IsOwnerAllowed(r.Context(), owner)
			if err != nil {
				s.log.Error("evolu relay: isOwnerAllowed", "owner", owner.String(), "err", err)
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			if !ok {
				http.Error(w, "unauthorized owner", http.StatusUnauthorized)
				return
			}
		}
		// Like the TS relay (ws without perMessageDeflate): no compression, so
		// bytes on the wire are the protocol bytes; and any Origin, since web
		// apps of any site connect to a relay (the data is encrypted).
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			s.log.Debug("evolu relay: accept", "err", err)
			return
		}
		ws.SetReadLimit(int64(s.cfg.TotalMaxSize))
		// Connections outlive ctx: Serve closes them with a close frame.
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c := &conn{ws: ws, out: make(chan []byte, s.cfg.SendQueue), done: make(chan struct{}), cancel: cancel,
			owners: make(map[protocol.OwnerID]struct{})}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		defer s.wg.Done()
		go func() {
			<-cctx.Done()
			close(c.done)
		}()
		writerDone := make(chan struct{})
		go func() {
			defer close(writerDone)
			s.writeLoop(cctx, c)
		}()
		s.readLoop(cctx, c)
		cancel()
		<-writerDone
		s.mu.Lock()
		delete(s.conns, c)
		for o := range c.owners {
			s.removeSub(o, c)
		}
		s.mu.Unlock()
		_ = ws.Close(websocket.StatusNormalClosure, "")
	})
}

func (s *Server) readLoop(ctx context.Context, c *conn) {
	for {
		typ, msg, err := c.ws.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) {
				s.log.Debug("evolu relay: read", "err", err)
			}
			return
		}
		if typ != websocket.MessageBinary {
			continue
		}
		reply, err := s.apply(ctx, c, msg)
		if err != nil {
			s.log.Debug("evolu relay: dropped request", "err", err)
			continue
		}
		select {
		case c.out <- reply:
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) writeLoop(ctx context.Context, c *conn) {
	for {
		select {
		case msg := <-c.out:
			if err := c.ws.Write(ctx, websocket.MessageBinary, msg); err != nil {
				c.cancel()
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
