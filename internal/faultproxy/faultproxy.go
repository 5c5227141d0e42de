// Package faultproxy is a TCP proxy for tests that inject network faults
// between a client and a real server on 127.0.0.1: it can cut every
// connection, silence them (sockets stay open, nothing passes in either
// direction), refuse new connections, and rewrite what the server sends.
//
// A Proxy is owned by the test that starts it: [Start] registers its Close
// with the test's cleanup, and every goroutine it starts ends by then.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// Proxy forwards connections from its own loopback address to a target.
type Proxy struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	conns   map[*pair]struct{}
	silent  bool
	refuse  bool
	rewrite func([]byte) []byte
	toSrv   func([]byte) []byte
	cutLeft int        // > 0: cut all connections after this many more server bytes
	wake    *sync.Cond // broadcast when silent ends or the proxy closes
	closed  bool
	wg      sync.WaitGroup
	accepts int
	cuts    int    // Cuts so far: a connection accepted before one is not kept
	dialed  func() // tests: called between dialing the target and keeping the pair
}

type pair struct{ client, server net.Conn }

// Start listens on 127.0.0.1 on a free port and forwards to target
// (host:port). The proxy closes when the test ends.
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: %v", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[*pair]struct{}{}}
	p.wake = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted returns how many connections the proxy has accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts
}

// Cut closes every open connection (both sides) at once. New connections
// are still accepted unless Refuse is on.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.client.Close()
		c.server.Close()
		delete(p.conns, c)
	}
	p.cuts++           // and a connection still being set up is dropped when done
	p.wake.Broadcast() // pipes held by Silence see their pair gone
}

// Silence stops (on) or resumes (off) forwarding on every connection, open
// and new: bytes are neither passed on nor refused, the sockets stay open.
// What arrived while silent is passed on after resuming.
func (p *Proxy) Silence(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = on
	if !on {
		p.wake.Broadcast()
	}
}

// Refuse makes the proxy close new connections at once (on) or accept
// them again (off).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Rewrite sets a function applied to every chunk the server sends before
// it is passed to the client (nil: none). A chunk is what one read
// returned; tests rewrite whole short lines such as a CAPABILITY answer.
func (p *Proxy) Rewrite(f func([]byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rewrite = f
}

// RewriteClient sets a function applied to every chunk the client sends
// before it goes to the server (nil: none): a test makes the server refuse
// a command by renaming it.
func (p *Proxy) RewriteClient(f func([]byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.toSrv = f
}

// CutAfter cuts every connection once the server has sent n more bytes
// (through any connection): the client sees an answer end in the middle.
// n <= 0 turns it off.
func (p *Proxy) CutAfter(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLeft = n
}

// Replace returns a rewrite function that replaces old with new.
func Replace(old, new string) func([]byte) []byte {
	return func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(old), []byte(new)) }
}

// DropToken returns a Rewrite function that removes " "+token from every
// chunk (for hiding an IMAP capability).
func DropToken(token string) func([]byte) []byte {
	t := []byte(" " + token)
	return func(b []byte) []byte {
		var out []byte
		for {
			i := bytes.Index(b, t)
			if i < 0 {
				return append(out, b...)
			}
			end := i + len(t)
			if end < len(b) && b[end] != ' ' && b[end] != '\r' && b[end] != ']' {
				out = append(out, b[:end]...)
				b = b[end:]
				continue
			}
			out = append(out, b[:i]...)
			b = b[end:]
		}
	}
}

// Close stops listening and closes every connection; it waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.wake.Broadcast()
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepts++
		refuse, cuts, dialed := p.refuse || p.closed, p.cuts, p.dialed
		p.mu.Unlock()
		if refuse {
			cc.Close()
			continue
		}
		sc, err := net.Dial("tcp", p.target)
		if err != nil {
			cc.Close()
			continue
		}
		if dialed != nil {
			dialed()
		}
		c := &pair{cc, sc}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			cc.Close()
			sc.Close()
			return
		}
		if p.cuts != cuts || p.refuse {
			// Cut (or Refuse and Cut) came while this connection was being
			// set up: it must not outlive them.
			p.mu.Unlock()
			cc.Close()
			sc.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, sc, cc, true)
		go p.pipe(c, cc, sc, false)
	}
}

// pipe copies from src to dst until either fails, holding chunks while
// the proxy is silent.
func (p *Proxy) pipe(c *pair, src, dst net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer func() {
		c.client.Close()
		c.server.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			p.mu.Lock()
			_, open := p.conns[c]
			for p.silent && !p.closed && open {
				p.wake.Wait()
				_, open = p.conns[c]
			}
			rw := p.toSrv
			if fromServer {
				rw = p.rewrite
			}
			cut := false
			if fromServer && p.cutLeft > 0 {
				if len(chunk) >= p.cutLeft {
					chunk, cut = chunk[:p.cutLeft], true
					p.cutLeft = 0
				} else {
					p.cutLeft -= len(chunk)
				}
			}
			p.mu.Unlock()
			if !open {
				return
			}
			if rw != nil {
				chunk = rw(chunk)
			}
			if cut {
				dst.Write(chunk)
				p.Cut()
				return
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a failure: both sides close
		}
	}
}
