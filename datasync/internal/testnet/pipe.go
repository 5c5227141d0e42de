package testnet

import (
	"context"

	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

// Pipe returns two connected in-memory Conns named by the peers they reach:
// a.Peer() is bName, b.Peer() is aName. Messages are delivered reliably and
// in order; closing either end closes both.
func Pipe(aName, bName string) (a, b transport.Conn) {
	ab, ba := make(chan []byte, 1024), make(chan []byte, 1024)
	done := make(chan struct{})
	p := &pipeShared{done: done}
	return &pipeConn{peer: bName, in: ba, out: ab, p: p}, &pipeConn{peer: aName, in: ab, out: ba, p: p}
}

type pipeShared struct {
	done chan struct{}
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
		return transport.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *pipeConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.p.done:
		return nil, transport.ErrClosed
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
