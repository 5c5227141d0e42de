package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/ferry-sync/ferry/datasync/attach"
	"github.com/ferry-sync/ferry/datasync/exchange"
	"github.com/ferry-sync/ferry/datasync/frame"
	"github.com/ferry-sync/ferry/datasync/replica"
	"github.com/ferry-sync/ferry/datasync/transport"
)

// Bounds of "ferry peer run".
const (
	// peerReach is how long the connecting side keeps trying before its
	// first link: past it (or past --for) it gives up and exits non-zero.
	peerReach = 30 * time.Second
	// peerHandshake bounds one handshake, on either side.
	peerHandshake = 10 * time.Second
	// handshakeTries is how many handshakes in a row may fail before the
	// connecting side gives up.
	handshakeTries = 3
	// peerMaxLinks bounds the links a listener serves at once.
	peerMaxLinks = 8
	// refusalEvery is how often a listener logs refusals of one key.
	refusalEvery = time.Minute
	// progressEvery is how often a link's progress line may be printed.
	progressEvery = time.Second
)

// peerServer keeps links to the peer up, one space (and so one peer-named
// count and one quarantine ledger) for all of them.
type peerServer struct {
	space    *exchange.Space
	self     transport.Key
	peerPub  []byte
	interval time.Duration
	log      io.Writer
	acts     attach.Acts // the blob holder's bounds, across every link

	mu       sync.Mutex
	refusals map[string]time.Time // key (or address) -> last refusal logged
}

func (s *peerServer) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.log, "ferry peer: "+format+"\n", args...)
}

func (s *peerServer) short(key string) string { return key[:min(len(key), 16)] }

// listen serves every connection ln accepts until ctx ends, each on its
// own goroutine (at most peerMaxLinks at once), all in one space.
func (s *peerServer) listen(ctx context.Context, ln net.Listener) error {
	s.logf("listening on %s", ln.Addr())
	stopLn := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopLn()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, peerMaxLinks)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("listener closed: %w", err)
			}
			select { // a transient failure (out of descriptors): back off
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			s.refused(remoteIP(c), fmt.Sprintf("%d links already open", peerMaxLinks))
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.accept(ctx, c)
		}()
	}
}

// accept runs the responder's handshake on c and then the link.
func (s *peerServer) accept(ctx context.Context, c net.Conn) {
	want := transport.KeyID(s.peerPub)
	var offered string
	hctx, cancel := context.WithTimeout(ctx, peerHandshake) // a silent client must not hold a slot
	conn, err := transport.Accept(hctx, c, s.self, func(p []byte) bool {
		offered = transport.KeyID(p)
		return offered == want
	})
	cancel()
	if err != nil {
		if offered != "" && offered != want {
			s.refused("key "+offered, "not the --peer key")
		} else if ctx.Err() == nil {
			s.refused(remoteIP(c), "it "+handshakeWhy(err))
		}
		return
	}
	s.runLink(ctx, conn, c.RemoteAddr().String())
}

// remoteIP names c's peer by address without the port, so refusals of
// one host are counted together.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// refused logs a refused connection, once per who per refusalEvery.
func (s *peerServer) refused(who, why string) {
	s.mu.Lock()
	now := time.Now()
	if s.refusals == nil || len(s.refusals) > 1024 {
		s.refusals = map[string]time.Time{}
	}
	last, seen := s.refusals[who]
	if seen && now.Sub(last) < refusalEvery {
		s.mu.Unlock()
		return
	}
	s.refusals[who] = now
	s.mu.Unlock()
	s.logf("refused a connection from %s: %s (logged once a minute)", who, why)
}

// dial keeps a link to addr up until ctx ends; after a link ends it
// redials. It gives up, with an error, when it has not reached the peer
// within peerReach of starting (or before ctx ends), and when
// handshakeTries handshakes in a row fail: an address that is not a ferry
// peer, or a peer that refused our key, does not change by retrying.
func (s *peerServer) dial(ctx context.Context, addr string) error {
	start, connected, failed := time.Now(), false, 0
	why := ""
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := s.connect(ctx, addr)
		switch {
		case err == nil:
			connected, failed, backoff = true, 0, 100*time.Millisecond
			s.runLink(ctx, conn, addr)
			continue
		case ctx.Err() != nil:
		case errors.Is(err, transport.ErrHandshake):
			if failed++; failed >= handshakeTries { // not a listener shutting down mid-handshake
				return fmt.Errorf("%s %s: it is not a ferry peer, or it refused our key (is its --peer %s?), or its key is not --peer",
					addr, handshakeWhy(err), transport.KeyID(s.self.Public))
			}
		default:
			if w := reachWhy(err); w != why {
				why = w
				s.logf("cannot reach %s yet (%s); retrying", addr, why)
			}
			if !connected && time.Since(start) > peerReach {
				return fmt.Errorf("cannot reach %s (%s); is the peer running with --listen %s?", addr, why, addr)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	if !connected && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("cannot reach %s before --for ended (%s); is the peer running with --listen %s?", addr, cmp.Or(why, "no answer"), addr)
	}
	return nil
}

// connect dials addr and runs the initiator's handshake, both within
// peerHandshake.
func (s *peerServer) connect(ctx context.Context, addr string) (transport.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, peerHandshake)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return transport.Initiate(ctx, c, s.self, s.peerPub)
}

// runLink replicates over conn until it ends or ctx does, printing
// progress lines.
func (s *peerServer) runLink(ctx context.Context, conn transport.Conn, addr string) {
	who := s.short(conn.Peer())
	s.logf("connected to %s (%s)", who, addr)
	opts := replica.Options{Caps: frame.Caps{s.space.Engine.Encoding().Entry, frame.EntryMedia}, Interval: s.interval, Acts: &s.acts}
	l := replica.NewInSpace(s.space, conn, opts)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopClose := context.AfterFunc(lctx, func() { conn.Close() })
	defer stopClose()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.progress(lctx, l, who) }()
	err := l.Run(lctx)
	conn.Close()
	cancel()
	wg.Wait()
	st := l.Stats()
	why := "stopped"
	if err != nil && ctx.Err() == nil {
		why = err.Error()
	}
	s.logf("link to %s ended (%s): %d documents sent, %d received", who, why, st.Sent, st.Received)
}

// progress prints the link's counts when they change, at most once per
// progressEvery.
func (s *peerServer) progress(ctx context.Context, l *replica.Link, who string) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	var last replica.Stats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st := l.Stats(); st != last {
			last = st
			s.logf("with %s: %d documents sent, %d received", who, st.Sent, st.Received)
		}
	}
}

// reachWhy is the human part of a dial error ("connection refused").
func reachWhy(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer"
	}
	return err.Error()
}

// handshakeWhy says how a handshake failed, in words.
func handshakeWhy(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "did not answer the handshake"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "closed the connection during the handshake"
	}
	return "answered with something that is not a ferry peer handshake"
}
