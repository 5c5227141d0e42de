// Package transport carries data-sync-v1 between replicas: [Conn], an
// authenticated, encrypted 1:1 link, and its real implementation over TCP
// encrypted with Noise IK ([Dial], [Accept]). The simulated transports the
// tests use are in datasync/internal/testnet.
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
