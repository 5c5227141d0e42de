package transport

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/flynn/noise"
)

// The Noise transport: Noise_IK_25519_ChaChaPoly_BLAKE2s over TCP, from
// github.com/flynn/noise. The initiator knows the responder's static key;
// the responder learns and checks the initiator's. After the handshake each
// message carries its own nonce, because the layer above assumes unordered
// delivery and must not depend on the implicit counter of an ordered stream:
//
//	uint32 length (big-endian) | uint64 nonce (big-endian) | ciphertext
//
// The nonce is authenticated as associated data. A receiver accepts each
// nonce once, within a sliding window of ReplayWindow below the highest
// seen.
var suite = noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s)

const prologue = "ferry datasync v1 noise-ik"

// MaxMessage bounds one transport message's plaintext.
const MaxMessage = 256 * 1024

// ReplayWindow is how far below the highest nonce seen a nonce is still
// accepted (once).
const ReplayWindow = 1024

// Errors of the Noise transport.
var (
	ErrUnknownPeer = errors.New("datasync/transport: peer key not allowed")
	ErrReplay      = errors.New("datasync/transport: nonce replayed or too old")
	ErrTooLarge    = errors.New("datasync/transport: message too large")
	// ErrHandshake means the address answered but the handshake failed: not
	// a peer of this protocol, a peer holding another key, or one that
	// refused ours.
	ErrHandshake = errors.New("datasync/transport: handshake failed")
)

// Key is a Noise static key pair.
type Key = noise.DHKey

// GenerateKey returns a new static key pair.
func GenerateKey() (Key, error) { return suite.GenerateKeypair(rand.Reader) }

// KeyID is the hex form of a public key, the identity a Conn reports.
func KeyID(pub []byte) string { return hex.EncodeToString(pub) }

type noiseConn struct {
	c    net.Conn
	r    *bufio.Reader
	peer string

	sendMu sync.Mutex
	send   noise.Cipher
	nonce  uint64

	recvMu sync.Mutex
	recv   noise.Cipher
	high   uint64
	seen   map[uint64]bool
}

// Dial connects to addr and runs the initiator's handshake. peerPub is the
// responder's public key: a responder holding another key fails the
// handshake.
func Dial(ctx context.Context, addr string, self Key, peerPub []byte) (Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return Initiate(ctx, c, self, peerPub)
}

// Initiate runs the initiator's handshake on c, a connection already
// established (Dial is net.Dialer.DialContext and Initiate). On failure c
// is closed and the error wraps ErrHandshake, so a caller can tell "the
// address answered but is not this peer, or refused our key" from "the
// address could not be reached".
func Initiate(ctx context.Context, c net.Conn, self Key, peerPub []byte) (Conn, error) {
	nc, err := handshake(ctx, c, self, peerPub, true, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return nc, nil
}

// Accept runs the responder's handshake on c. allowed decides whether the
// initiator's authenticated public key may connect.
func Accept(ctx context.Context, c net.Conn, self Key, allowed func(pub []byte) bool) (Conn, error) {
	nc, err := handshake(ctx, c, self, nil, false, allowed)
	if err != nil {
		c.Close()
		return nil, err
	}
	return nc, nil
}

func handshake(ctx context.Context, c net.Conn, self Key, peerPub []byte, initiator bool, allowed func([]byte) bool) (*noiseConn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
		defer c.SetDeadline(time.Time{})
	}
	hs, err := noise.NewHandshakeState(noise.Config{CipherSuite: suite, Random: rand.Reader,
		Pattern: noise.HandshakeIK, Initiator: initiator, Prologue: []byte(prologue),
		StaticKeypair: self, PeerStatic: peerPub})
	if err != nil {
		return nil, err
	}
	nc := &noiseConn{c: c, r: bufio.NewReader(c), seen: map[uint64]bool{}}
	var cs1, cs2 *noise.CipherState
	if initiator {
		msg, _, _, err := hs.WriteMessage(nil, nil)
		if err != nil {
			return nil, err
		}
		if err := writeRecord(c, msg); err != nil {
			return nil, err
		}
		in, err := readRecord(nc.r)
		if err != nil {
			return nil, err
		}
		if _, cs1, cs2, err = hs.ReadMessage(nil, in); err != nil {
			return nil, fmt.Errorf("datasync/transport: handshake: %w", err)
		}
		nc.send, nc.recv = cs1.Cipher(), cs2.Cipher()
	} else {
		in, err := readRecord(nc.r)
		if err != nil {
			return nil, err
		}
		if _, _, _, err = hs.ReadMessage(nil, in); err != nil {
			return nil, fmt.Errorf("datasync/transport: handshake: %w", err)
		}
		if allowed == nil || !allowed(hs.PeerStatic()) {
			return nil, fmt.Errorf("%w: %s", ErrUnknownPeer, KeyID(hs.PeerStatic()))
		}
		msg, c1, c2, err := hs.WriteMessage(nil, nil)
		if err != nil {
			return nil, err
		}
		if err := writeRecord(c, msg); err != nil {
			return nil, err
		}
		cs1, cs2 = c1, c2
		nc.send, nc.recv = cs2.Cipher(), cs1.Cipher()
	}
	nc.peer = KeyID(hs.PeerStatic())
	return nc, nil
}

func writeRecord(w io.Writer, b []byte) error {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err := w.Write(append(out, b...))
	return err
}

func readRecord(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	l := binary.BigEndian.Uint32(n[:])
	if l > MaxMessage+64 {
		return nil, ErrTooLarge
	}
	b := make([]byte, l)
	_, err := io.ReadFull(r, b)
	return b, err
}

func (c *noiseConn) Peer() string { return c.peer }

func (c *noiseConn) Send(ctx context.Context, msg []byte) error {
	if len(msg) > MaxMessage {
		return ErrTooLarge
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	n := c.nonce
	c.nonce++
	var ad [8]byte
	binary.BigEndian.PutUint64(ad[:], n)
	rec := append(ad[:], c.send.Encrypt(nil, n, ad[:], msg)...)
	return writeRecord(c.c, rec)
}

// Recv returns the next message. A record that fails authentication or
// replays a nonce is an error that ends the connection: it can only come
// from an attacker on the wire.
func (c *noiseConn) Recv(ctx context.Context) ([]byte, error) {
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	_ = c.c.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	rec, err := readRecord(c.r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if len(rec) < 8 {
		return nil, fmt.Errorf("datasync/transport: short record")
	}
	n := binary.BigEndian.Uint64(rec[:8])
	if c.seen[n] || (c.high >= ReplayWindow && n < c.high-ReplayWindow) {
		return nil, ErrReplay
	}
	msg, err := c.recv.Decrypt(nil, n, rec[:8], rec[8:])
	if err != nil {
		return nil, fmt.Errorf("datasync/transport: %w", err)
	}
	c.seen[n] = true
	if n > c.high {
		c.high = n
	}
	for k := range c.seen {
		if c.high >= ReplayWindow && k < c.high-ReplayWindow {
			delete(c.seen, k)
		}
	}
	return msg, nil
}

func (c *noiseConn) Close() error { return c.c.Close() }
