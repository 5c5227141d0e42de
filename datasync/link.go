package datasync

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/replica"
	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

// EventKind says what happened to a link.
type EventKind uint8

// The link events.
const (
	LinkConnected EventKind = iota + 1 // handshake and capabilities done
	LinkProgress                       // documents moved since the last event
	LinkEnded                          // the link is over
)

// Event is one step of a link's life, given to Options.Events.
type Event struct {
	Kind EventKind
	Peer PublicKey
	// Addr is the peer's network address.
	Addr string
	// Sent and Received count the documents the link moved so far.
	Sent, Received int
	// Err is why an ended link ended; nil when its context ended.
	Err error
}

// progressEvery is how often a link may report progress.
const progressEvery = time.Second

// tagCaps starts the first message of each side of a link: the
// data_versions entries it speaks, as uvarints (docs/decisions/datasync-node.md).
const tagCaps = 'V'

// maxCaps bounds the entries a peer may advertise.
const maxCaps = 64

// Serve accepts peers on ln until ctx ends, running one link per accepted
// peer whose public key allow accepts (at most Options.MaxLinks at once).
// Refused connections and failed links are reported, not returned; Serve
// returns nil when ctx ends, or the listener's error.
func (n *Node) Serve(ctx context.Context, ln net.Listener, allow func(PublicKey) bool) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	// The links end with Serve, whichever way it returns.
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, n.opts.MaxLinks)
	for {
		c, err := ln.Accept()
		if err != nil {
			// The outer context, not ctx: the listener may be closed by
			// the outer one's end before ctx, its child, has heard of it.
			if outer.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return &Error{Code: CodeLinkClosed, Err: err}
			}
			select { // transient (out of descriptors): back off
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			n.report(&Error{Code: CodeBusy, Peer: remoteIP(c), Err: fmt.Errorf("%d links already open", n.opts.MaxLinks)})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
			offered := ""
			conn, err := transport.Accept(hctx, c, n.key.k, func(pub []byte) bool {
				var p PublicKey
				if len(pub) != len(p) {
					return false
				}
				offered = hex.EncodeToString(pub)
				return allow(PublicKey(pub))
			})
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					e := translate(err, "")
					if e.Peer = remoteIP(c); offered != "" && e.Code == CodeNotAllowed {
						e.Peer = offered
					}
					n.report(e)
				}
				return
			}
			if err := n.run(ctx, conn, c.RemoteAddr().String()); err != nil && ctx.Err() == nil {
				n.report(translate(err, ""))
			}
		}()
	}
}

// Connect dials addr, checks it is the peer with public key peer, and runs
// one link until ctx ends (nil) or the link fails (an *Error: CodeUnreachable,
// CodeHandshake, CodeCapabilities, CodeLinkClosed...). Reconnecting is the
// caller's choice.
func (n *Node) Connect(ctx context.Context, addr string, peer PublicKey) error {
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	c, err := (&net.Dialer{}).DialContext(hctx, "tcp", addr)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		return &Error{Code: CodeUnreachable, Err: err}
	}
	conn, err := transport.Initiate(hctx, c, n.key.k, peer[:])
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return translate(err, "")
	}
	if err := n.run(ctx, conn, addr); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// remoteIP is the address a refusal names: the IP alone, since a client's
// port changes with every attempt.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// run exchanges capabilities over a fresh link and then replicates until
// ctx ends or the link fails.
func (n *Node) run(ctx context.Context, conn transport.Conn, addr string) (err error) {
	defer conn.Close()
	caps, err := n.exchangeCaps(ctx, conn)
	if err != nil {
		return err
	}
	ev := Event{Addr: addr}
	if p, perr := ParsePublicKey(conn.Peer()); perr == nil {
		ev.Peer = p
	}
	n.event(ev, LinkConnected)
	l := replica.NewInSpace(n.space, conn, replica.Options{Caps: caps, Interval: n.opts.Interval, Blobs: n.blobs, Acts: &n.acts})
	n.mu.Lock()
	n.links[l] = struct{}{}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.links, l)
		n.mu.Unlock()
	}()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(lctx, func() { conn.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); n.progress(lctx, l, ev) }()
	if rerr := l.Run(lctx); rerr != nil && ctx.Err() == nil {
		err = translate(rerr, "")
	}
	cancel()
	st := l.Stats()
	ev.Sent, ev.Received, ev.Err = st.Sent, st.Received, err
	n.event(ev, LinkEnded)
	return err
}

func (n *Node) event(ev Event, kind EventKind) {
	if n.opts.Events != nil {
		ev.Kind = kind
		n.opts.Events(ev)
	}
}

// progress gives a LinkProgress event at most once a second while the
// link's counts change, until ctx ends.
func (n *Node) progress(ctx context.Context, l *replica.Link, ev Event) {
	if n.opts.Events == nil {
		return
	}
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
			ev.Sent, ev.Received = st.Sent, st.Received
			n.event(ev, LinkProgress)
		}
	}
}

// ownCaps are the entries this node speaks: its engine's encoding and the
// media path.
func (n *Node) ownCaps() frame.Caps {
	return frame.Caps{n.eng.Encoding().Entry, frame.EntryMedia}
}

// exchangeCaps sends this node's entries and reads the peer's, which must
// include this node's encoding: two engines of different encodings cannot
// read each other's frames.
func (n *Node) exchangeCaps(ctx context.Context, conn transport.Conn) (frame.Caps, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	msg := []byte{tagCaps}
	for _, e := range n.ownCaps() {
		msg = binary.AppendUvarint(msg, e)
	}
	if err := conn.Send(ctx, msg); err != nil {
		return nil, translate(err, "")
	}
	in, err := conn.Recv(ctx)
	if err != nil {
		return nil, &Error{Code: CodeHandshake, Err: fmt.Errorf("no capabilities from the peer: %w", err)}
	}
	caps, err := parseCaps(in)
	if err != nil {
		return nil, &Error{Code: CodeHandshake, Err: err}
	}
	if enc := n.eng.Encoding(); !caps.Has(enc.Entry) {
		return nil, &Error{Code: CodeCapabilities, Err: fmt.Errorf("the peer does not speak %s (entry %d); both sides must use the same engine", enc.Name, enc.Entry)}
	}
	return caps, nil
}

func parseCaps(b []byte) (frame.Caps, error) {
	if len(b) == 0 || b[0] != tagCaps {
		return nil, errors.New("the peer's first message is not its capabilities")
	}
	var caps frame.Caps
	for b = b[1:]; len(b) > 0; {
		e, n := binary.Uvarint(b)
		if n <= 0 || len(caps) == maxCaps {
			return nil, errors.New("malformed capabilities")
		}
		if !slices.Contains(caps, e) {
			caps = append(caps, e)
		}
		b = b[n:]
	}
	return caps, nil
}
