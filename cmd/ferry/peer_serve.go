package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferry-sync/ferry/datasync"
)

// Bounds of "ferry peer run".
const (
	// peerReach is how long the connecting side keeps trying before its
	// first link: past it (or past --for) it gives up and exits non-zero.
	peerReach = 30 * time.Second
	// handshakeTries is how many handshakes in a row may fail before the
	// connecting side gives up.
	handshakeTries = 3
	// refusalEvery is how often a listener logs refusals of one key.
	refusalEvery = time.Minute
)

// peerServer is the command's side of a datasync.Node: it turns the node's
// events and reports into stderr lines and keeps the connecting side
// redialing. The node does the replication.
type peerServer struct {
	node *datasync.Node
	self datasync.PublicKey
	peer datasync.PublicKey
	log  io.Writer

	mu       sync.Mutex
	refusals map[string]time.Time // key (or address) -> last refusal logged
}

func (s *peerServer) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.log, "ferry peer: "+format+"\n", args...)
}

// short is a key's first 16 hex digits, enough to tell peers apart in logs.
func short(key string) string { return key[:min(len(key), 16)] }

// event is the node's Options.Events.
func (s *peerServer) event(ev datasync.Event) {
	who := short(ev.Peer.String())
	switch ev.Kind {
	case datasync.LinkConnected:
		s.logf("connected to %s (%s)", who, ev.Addr)
	case datasync.LinkProgress:
		s.logf("with %s: %d documents sent, %d received", who, ev.Sent, ev.Received)
	case datasync.LinkEnded:
		why := "stopped"
		if ev.Err != nil {
			why = cause(ev.Err).Error()
		}
		s.logf("link to %s ended (%s): %d documents sent, %d received", who, why, ev.Sent, ev.Received)
	}
}

// report is the node's Options.Report: refused connections (logged once a
// minute per key or address) and documents a link could not replicate.
func (s *peerServer) report(e *datasync.Error) {
	switch e.Code {
	case datasync.CodeNotAllowed:
		s.refused("key "+e.Peer, "not the --peer key")
	case datasync.CodeHandshake:
		s.refused(e.Peer, "it "+handshakeWhy(e))
	case datasync.CodeBusy:
		s.refused(e.Peer, cause(e).Error())
	case datasync.CodeCapabilities:
		s.logf("cannot replicate with %s: %v", cmp.Or(e.Peer, "the peer"), cause(e))
	default:
		msg := "frame dropped: " + cause(e).Error()
		if e.Doc != "" {
			msg = fmt.Sprintf("document %q: %v", e.Doc, cause(e))
		}
		s.logf("cannot replicate: %s", strings.ReplaceAll(msg, "\n", "; "))
	}
}

// cause is the error under a *datasync.Error, which names its code for
// programs; a person reads the cause.
func cause(err error) error {
	var e *datasync.Error
	if errors.As(err, &e) && e.Err != nil {
		return e.Err
	}
	return err
}

// refused logs a refused connection, at most once a minute per who.
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

// listen serves the peer on ln until ctx ends.
func (s *peerServer) listen(ctx context.Context, ln net.Listener) error {
	s.logf("listening on %s", ln.Addr())
	if err := s.node.Serve(ctx, ln, func(p datasync.PublicKey) bool { return p == s.peer }); err != nil {
		return fmt.Errorf("listener closed: %w", cause(err))
	}
	return nil
}

// dial keeps a link to addr up until ctx ends: it redials after a link
// ends, and gives up when the first link never comes (peerReach) or the
// handshake keeps failing.
func (s *peerServer) dial(ctx context.Context, addr string) error {
	start, connected, failed := time.Now(), false, 0
	why := ""
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.node.Connect(ctx, addr, s.peer)
		var de *datasync.Error
		errors.As(err, &de)
		switch {
		case ctx.Err() != nil:
		case err == nil || de == nil || linked(de.Code):
			connected, failed, backoff = true, 0, 100*time.Millisecond
			continue
		case de.Code == datasync.CodeCapabilities:
			return fmt.Errorf("%s: %v", addr, cause(err))
		case de.Code == datasync.CodeHandshake || de.Code == datasync.CodeNotAllowed:
			if failed++; failed >= handshakeTries { // not a listener shutting down mid-handshake
				return fmt.Errorf("%s %s: it is not a ferry peer, or it refused our key (is its --peer %s?), or its key is not --peer",
					addr, handshakeWhy(err), s.self)
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

// linked reports whether an error of Connect came after the link was up.
func linked(c datasync.Code) bool {
	switch c {
	case datasync.CodeUnreachable, datasync.CodeHandshake, datasync.CodeNotAllowed, datasync.CodeCapabilities:
		return false
	}
	return true
}

// reachWhy is the short reason a dial failed: "connection refused", "no
// answer".
func reachWhy(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer"
	}
	return cause(err).Error()
}

// handshakeWhy says how a handshake failed, from the connection's error.
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
