package transport

import (
	"context"
	"errors"
)

// Conn is an authenticated, encrypted 1:1 link. Peer is derived from the
// authenticated key, never from anything a message says: it is what a
// receiver derives the space from (§The space is derived). Send and Recv
// are safe for concurrent use with each other; Send is safe for concurrent
// use with itself.
type Conn interface {
	Peer() string
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
	Close() error
}

// ErrClosed is returned by a closed Conn.
var ErrClosed = errors.New("datasync/transport: connection closed")

// Pipe returns two connected in-memory Conns named by the peers they reach:
// a.Peer() is bName, b.Peer() is aName. Messages are delivered reliably and
// in order; closing either end closes both.
func Pipe(aName, bName string) (a, b Conn) {
	ab, ba := make(chan []byte, 1024), make(chan []byte, 1024)
	done := make(chan struct{})
	p := &pipeShared{done: done}
	return &pipeConn{peer: bName, in: ba, out: ab, p: p}, &pipeConn{peer: aName, in: ab, out: ba, p: p}
}

type pipeShared struct {
	done   chan struct{}
	closed bool
}

type pipeConn struct {
	peer    string
	in, out chan []byte
	p       *pipeShared
}

func (c *pipeConn) Peer() string { return c.peer }

func (c *pipeConn) Send(ctx context.Context, msg []byte) error {
	select {
	case c.out <- append([]byte{}, msg...):
		return nil
	case <-c.p.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *pipeConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.p.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *pipeConn) Close() error {
	select {
	case <-c.p.done:
	default:
		close(c.p.done)
	}
	return nil
}
