package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// recorder keeps every byte written through it.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.out.Write(b)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func keys(t *testing.T) (Key, Key) {
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKey()
	return a, b
}

func tcpPair(t *testing.T, ka, kb Key, allowed func([]byte) bool) (Conn, Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), realtest.Scale(5*time.Second))
	defer cancel()
	type res struct {
		c   Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{nil, err}
			return
		}
		nc, err := Accept(ctx, c, kb, allowed)
		ch <- res{nc, err}
	}()
	a, errA := Dial(ctx, ln.Addr().String(), ka, kb.Public)
	r := <-ch
	if errA != nil {
		return nil, nil, errA
	}
	return a, r.c, r.err
}

func TestNoiseRoundTripAndIdentity(t *testing.T) {
	ka, kb := keys(t)
	a, b, err := tcpPair(t, ka, kb, func(p []byte) bool { return bytes.Equal(p, ka.Public) })
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	if a.Peer() != KeyID(kb.Public) || b.Peer() != KeyID(ka.Public) {
		t.Fatal("peer identity is not the authenticated key")
	}
	ctx := context.Background()
	for i := range 5 {
		msg := bytes.Repeat([]byte{byte(i)}, 1000*i)
		if err := a.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
		got, err := b.Recv(ctx)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("recv %d: %v", i, err)
		}
		if err := b.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if got, err := a.Recv(ctx); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("reverse %d: %v", i, err)
		}
	}
}

func TestNoiseRejectsUnknownInitiator(t *testing.T) {
	ka, kb := keys(t)
	_, _, err := tcpPair(t, ka, kb, func([]byte) bool { return false })
	if err == nil {
		t.Fatal("disallowed initiator accepted")
	}
}

func TestNoiseRejectsWrongResponderKey(t *testing.T) {
	ka, kb := keys(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = Accept(context.Background(), c, kb, func([]byte) bool { return true })
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), realtest.Scale(3*time.Second))
	defer cancel()
	other, _ := GenerateKey()
	if c, err := Dial(ctx, ln.Addr().String(), ka, other.Public); err == nil {
		c.Close()
		t.Fatal("handshake with a responder holding another key succeeded")
	}
}

// Explicit nonces: a replayed record is refused, and a tampered one fails
// authentication.
func TestNoiseReplayAndTamper(t *testing.T) {
	ka, kb := keys(t)
	c1, c2 := net.Pipe()
	rec := &recorder{Conn: c1}
	var a, b Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b, _ = Accept(context.Background(), c2, kb, func([]byte) bool { return true })
	}()
	a, err := handshake(context.Background(), rec, ka, kb.Public, true, nil)
	wg.Wait()
	if err != nil || b == nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec.mu.Lock()
	rec.out.Reset()
	rec.mu.Unlock()
	go func() { _ = a.Send(ctx, []byte("once")) }()
	if m, err := b.Recv(ctx); err != nil || string(m) != "once" {
		t.Fatal(err)
	}
	rec.mu.Lock()
	raw := append([]byte{}, rec.out.Bytes()...)
	rec.mu.Unlock()
	go func() { _, _ = c1.Write(raw) }()
	if _, err := b.Recv(ctx); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	tampered := append([]byte{}, raw...)
	tampered[len(tampered)-1] ^= 1
	tampered[11] = 9 // a fresh nonce, so only authentication can catch it
	go func() { _, _ = c1.Write(tampered) }()
	if _, err := b.Recv(ctx); err == nil {
		t.Fatal("tampered record accepted")
	}
}
