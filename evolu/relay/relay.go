// Package relay is an Evolu relay: applyProtocolMessageAsRelay over a
// SQLite store (package evolu/internal/sqlstore, pure-Go modernc.org/sqlite),
// served over WebSocket like the TypeScript relay of @evolu/nodejs:
// ws://host:port?ownerId=…, one binary frame per protocol message, replies in
// order, and Broadcast messages to the other connections subscribed to the
// owner.
//
// The relay is blind: it stores and forwards encrypted changes, checks write
// keys, and enforces a per-owner quota on stored bytes. Request ordering,
// slow subscribers and shutdown: docs/decisions/evolu-relay-connections.md.
package relay

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
	"github.com/ferry-sync/ferry/evolu/protocol"
)

// Config configures a relay.
type Config struct {
	// DBPath is the SQLite database file; it is created if missing.
	DBPath string
	// QuotaBytes, when positive, is the most change bytes one owner may
	// store; a write beyond it is answered ProtocolQuotaError and stores
	// nothing.
	QuotaBytes int64
	// TotalMaxSize is the ProtocolMessageMaxSize (default 1 MB, at most
	// 100 MB). A larger request is dropped unanswered.
	TotalMaxSize int
	// RangesMaxSize is the ProtocolMessageRangesMaxSize (default 30 KB).
	RangesMaxSize int
	// IsOwnerAllowed, when set, is asked before a WebSocket is accepted,
	// with the ownerId of the URL; a URL without a valid ownerId is then
	// refused with 400, a refused owner with 401.
	IsOwnerAllowed func(ctx context.Context, owner protocol.OwnerID) (bool, error)
	// Logger receives the relay's logs; nil discards them.
	Logger *slog.Logger
	// SendQueue is how many outgoing frames a connection may have queued
	// before it is closed as too slow (default 256).
	SendQueue int
}

// Server is a relay. Create it with New, run it with Serve, and release it
// with Close.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *sqlstore.Store

	mu    sync.Mutex
	subs  map[protocol.OwnerID]map[*conn]struct{}
	conns map[*conn]struct{}
	// locks serialize the requests of one owner: an owner always maps to
	// the same stripe, so memory stays bounded however many owners come.
	locks [256]sync.Mutex
	seed  maphash.Seed

	wg sync.WaitGroup // connection goroutines
}

// New opens the relay's database.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DBPath == "" {
		return nil, errors.New("relay: Config.DBPath is empty")
	}
	if cfg.TotalMaxSize == 0 {
		cfg.TotalMaxSize = protocol.DefaultMaxSize
	}
	if cfg.TotalMaxSize < protocol.MinMaxSize || cfg.TotalMaxSize > protocol.MaxMaxSize {
		return nil, fmt.Errorf("relay: TotalMaxSize %d outside [%d, %d]", cfg.TotalMaxSize, protocol.MinMaxSize, protocol.MaxMaxSize)
	}
	if cfg.RangesMaxSize == 0 {
		cfg.RangesMaxSize = protocol.DefaultRangesMaxSize
	}
	if cfg.RangesMaxSize < protocol.MinRangesMaxSize || cfg.RangesMaxSize > protocol.MaxRangesMaxSize {
		return nil, fmt.Errorf("relay: RangesMaxSize %d outside [%d, %d]", cfg.RangesMaxSize, protocol.MinRangesMaxSize, protocol.MaxRangesMaxSize)
	}
	if cfg.SendQueue == 0 {
		cfg.SendQueue = 256
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var quota func(protocol.OwnerID, int64) bool
	if cfg.QuotaBytes > 0 {
		quota = func(_ protocol.OwnerID, n int64) bool { return n <= cfg.QuotaBytes }
	}
	st, err := sqlstore.Open(ctx, cfg.DBPath, sqlstore.Config{WithinQuota: quota, Kind: sqlstore.KindRelay, Exclusive: true}, "")
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return &Server{
		cfg: cfg, log: log, store: st,
		subs:  make(map[protocol.OwnerID]map[*conn]struct{}),
		conns: make(map[*conn]struct{}),
		seed:  maphash.MakeSeed(),
	}, nil
}

// Storage is the relay's storage.
func (s *Server) Storage() protocol.RelayStorage { return s.store }

// Close closes the database. Call it after Serve has returned.
func (s *Server) Close() error { return s.store.Close() }

func (s *Server) ownerLock(o protocol.OwnerID) *sync.Mutex {
	return &s.locks[maphash.Bytes(s.seed, o[:])%uint64(len(s.locks))]
}

// apply answers one request as a relay, for the connection c (nil when
// called without a connection: no subscription, no broadcast to the caller
// excluded). Requests of one owner are applied one at a time. A nil reply
// means the request is dropped (malformed or oversize).
func (s *Server) apply(ctx context.Context, c *conn, req []byte) ([]byte, error) {
	h, err := protocol.ParseHeader(req)
	if err != nil {
		return nil, err
	}
	lock := s.ownerLock(h.OwnerID)
	lock.Lock()
	defer lock.Unlock()
	return protocol.ApplyAsRelay(ctx, s.store, req, protocol.RelayOptions{
		Subscribe:     func(o protocol.OwnerID) { s.subscribe(o, c) },
		Unsubscribe:   func(o protocol.OwnerID) { s.unsubscribe(o, c) },
		Broadcast:     func(o protocol.OwnerID, msg []byte) { s.broadcast(o, c, msg) },
		TotalMaxSize:  s.cfg.TotalMaxSize,
		RangesMaxSize: s.cfg.RangesMaxSize,
		Logger:        s.log,
	})
}

// ApplyRequest is Apply without a connection, for in-process use.
func (s *Server) ApplyRequest(ctx context.Context, req []byte) ([]byte, error) {
	return s.apply(ctx, nil, req)
}

func (s *Server) subscribe(o protocol.OwnerID, c *conn) {
	if c == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, open := s.conns[c]; !open {
		return
	}
	m := s.subs[o]
	if m == nil {
		m = make(map[*conn]struct{})
		s.subs[o] = m
	}
	m[c] = struct{}{}
	c.owners[o] = struct{}{}
}

func (s *Server) unsubscribe(o protocol.OwnerID, c *conn) {
	if c == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeSub(o, c)
}

func (s *Server) removeSub(o protocol.OwnerID, c *conn) {
	if m := s.subs[o]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(s.subs, o)
		}
	}
	delete(c.owners, o)
}

func (s *Server) broadcast(o protocol.OwnerID, from *conn, msg []byte) {
	s.mu.Lock()
	targets := make([]*conn, 0, len(s.subs[o]))
	for c := range s.subs[o] {
		if c != from {
			targets = append(targets, c)
		}
	}
	s.mu.Unlock()
	for _, c := range targets {
		c.send(msg)
	}
	s.log.Debug("evolu relay: broadcast", "owner", o.String(), "subscribers", len(targets))
}

// Serve accepts WebSocket connections on ln until ctx is done, then shuts
// down gracefully: it stops accepting, closes every connection with status
// 1001, and waits for their goroutines. It returns nil after a shutdown
// caused by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(ctx),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("evolu relay: listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		s.closeAll()
		s.wg.Wait()
		return fmt.Errorf("relay: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("evolu relay: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	s.closeAll()
	s.wg.Wait()
	<-errc
	s.log.Info("evolu relay: shutdown complete")
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("relay: shutdown: %w", err)
	}
	return nil
}

func (s *Server) closeAll() {
	s.mu.Lock()
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { c.close(websocket.StatusGoingAway, "Ferry relay shutting down") })
	}
	wg.Wait()
}
