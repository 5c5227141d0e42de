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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/internal/sqlstore"
)

// Server is a relay. Create it with New, run it with Serve (or mount
// Handler in your own http.Server and call Shutdown), and release it with
// Close.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *sqlstore.Store
	metrics *metrics
	// shared is set when other relay processes may write the database
	// (Postgres): each request first refreshes the owner's index.
	shared bool
	fanout *fanout // cross-process broadcasts (Postgres), or nil

	mu     sync.Mutex
	subs   map[protocol.OwnerID]map[*conn]struct{}
	conns  map[*conn]struct{}
	byAddr map[string]int // admitted connections per remote IP
	open   int            // admitted connections
	closed bool           // Shutdown has begun: no new connections
	// locks serialize the requests of one owner: an owner always maps to
	// the same stripe, so memory stays bounded however many owners come.
	locks [256]sync.Mutex
	seed  maphash.Seed

	queued atomic.Int64   // outgoing bytes queued over all connections
	wg     sync.WaitGroup // connection goroutines
}

// New opens the relay's database: a SQLite file, locked against a second
// relay process (an error matching ErrDatabaseInUse), or a postgres:// URL.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, metrics: newMetrics(),
		subs:   make(map[protocol.OwnerID]map[*conn]struct{}),
		conns:  make(map[*conn]struct{}),
		byAddr: make(map[string]int),
		seed:   maphash.MakeSeed(),
	}
	if err := s.openStore(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ErrDatabaseInUse is matched by New's error when another relay process
// holds the SQLite database.
var ErrDatabaseInUse = sqlstore.ErrLocked

// ErrWrongDatabase is matched by New's error when the database is not a
// relay's (a client's, or another program's).
var ErrWrongDatabase = sqlstore.ErrWrongKind

func (s *Server) openStore(ctx context.Context) error {
	scfg := sqlstore.Config{WithinQuota: s.cfg.quotaFunc(), Kind: sqlstore.KindRelay}
	if isPostgres(s.cfg.DBPath) {
		st, err := sqlstore.OpenPostgres(ctx, s.cfg.DBPath, scfg)
		if err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		s.store, s.shared = st, true
		s.fanout, err = startFanout(ctx, s)
		if err != nil {
			st.Close()
			return err
		}
		return nil
	}
	scfg.Exclusive = true
	st, err := sqlstore.Open(ctx, s.cfg.DBPath, scfg, "")
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	s.store = st
	return nil
}

// Close closes the database. Call it after Serve (or Shutdown) has
// returned.
func (s *Server) Close() error {
	if s.fanout != nil {
		s.fanout.stop()
	}
	return s.store.Close()
}

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
	defer s.metrics.observeApply(time.Now())
	if s.shared {
		if _, err := s.store.Refresh(ctx, h.OwnerID); err != nil {
			s.log.Error("evolu relay: refresh", "owner", h.OwnerID.String(), "err", err)
		}
	}
	remote := ""
	if c != nil {
		remote = c.remote
	}
	return protocol.ApplyAsRelay(ctx, timedStorage{s.store, s.metrics.storage}, req, protocol.RelayOptions{
		Subscribe:   func(o protocol.OwnerID) { s.subscribe(o, c) },
		Unsubscribe: func(o protocol.OwnerID) { s.unsubscribe(o, c) },
		Broadcast: func(o protocol.OwnerID, msg []byte) {
			s.broadcast(o, c, msg)
			if s.fanout != nil {
				s.fanout.publish(ctx, o, msg)
			}
		},
		Listeners: func(o protocol.OwnerID) bool { return s.fanout != nil || s.hasListeners(o, c) },
		OnError: func(o protocol.OwnerID, code protocol.ErrorCode) {
			s.metrics.errors.WithLabelValues(code.String()).Inc()
			switch code {
			case protocol.QuotaError:
				s.log.Warn("evolu relay: quota refused a write", "owner", o.String(), "remote", remote)
			case protocol.WriteKeyError:
				s.log.Warn("evolu relay: write key refused", "owner", o.String(), "remote", remote)
			}
		},
		TotalMaxSize:  s.cfg.TotalMaxSize,
		RangesMaxSize: s.cfg.RangesMaxSize,
		Logger:        s.log,
	})
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

// hasListeners reports whether a connection other than from is subscribed
// to o.
func (s *Server) hasListeners(o protocol.OwnerID, from *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.subs[o]
	_, self := m[from]
	return len(m) > 1 || len(m) == 1 && !self
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
	s.metrics.broadcasts.Add(float64(len(targets)))
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
		s.Shutdown(context.Background())
		return fmt.Errorf("relay: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("evolu relay: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	s.Shutdown(shutdownCtx)
	<-errc
	s.log.Info("evolu relay: shutdown complete")
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("relay: shutdown: %w", err)
	}
	return nil
}

// Shutdown refuses new WebSockets, closes the open ones with status 1001,
// and waits for their goroutines (until ctx is done). Serve calls it; call
// it yourself when you mount Handler in your own http.Server.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { c.close(websocket.StatusGoingAway, "Ferry relay shutting down", "shutdown") })
	}
	wg.Wait()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
