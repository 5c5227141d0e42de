package imaphub

import (
	"net"
	"sync/atomic"
	"time"
)

// DefaultReplyTimeout is how long the binding waits for any progress from
// the server (a read or write that moves bytes) before it calls the
// connection dead (hub.ErrUnavailable). A large answer may take longer in
// all; each read only has to bring some of it in time.
const DefaultReplyTimeout = 30 * time.Second

// timeoutConn gives every Read and Write its own deadline, so that a
// server (or a path to it) that goes silent ends the wait within the
// timeout even when the caller's context has no deadline. interrupt
// (context end, Close) wins over the timeout.
type timeoutConn struct {
	net.Conn
	timeout     time.Duration // for writes, and reads unless readOff
	readOff     atomic.Bool   // reads wait without a deadline of their own
	interrupted atomic.Bool
}

func newTimeoutConn(nc net.Conn, d time.Duration) *timeoutConn {
	return &timeoutConn{Conn: nc, timeout: d}
}

// deadline returns the deadline for the next I/O.
func (c *timeoutConn) deadline(read bool) time.Time {
	if c.interrupted.Load() {
		return time.Unix(1, 0)
	}
	if read && c.readOff.Load() {
		return time.Time{}
	}
	return time.Now().Add(c.timeout)
}

func (c *timeoutConn) Read(p []byte) (int, error) {
	c.Conn.SetReadDeadline(c.deadline(true))
	return c.Conn.Read(p)
}

func (c *timeoutConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(c.deadline(false))
	return c.Conn.Write(p)
}

// interrupt makes blocked and later I/O fail at once, from any goroutine.
func (c *timeoutConn) interrupt() {
	c.interrupted.Store(true)
	c.Conn.SetDeadline(time.Unix(1, 0))
}

// resume undoes interrupt (for the next command on a healthy connection).
func (c *timeoutConn) resume() { c.interrupted.Store(false) }

// readsWithoutDeadline lets reads wait indefinitely: Watch's reader
// goroutine, whose waits the idle loop bounds with timers of its own.
func (c *timeoutConn) readsWithoutDeadline() { c.readOff.Store(true) }
