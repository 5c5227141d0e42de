package faultproxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echo starts a line echo server on 127.0.0.1.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte("* IDLE " + l))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, wait time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("hi\n")); err != nil {
		return "", err
	}
	return r.ReadString('\n')
}

func TestProxyFaults(t *testing.T) {
	p := Start(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if l, err := roundTrip(c, r, time.Second); err != nil || l != "* IDLE hi\n" {
		t.Fatalf("through the proxy: %q %v", l, err)
	}
	p.Rewrite(DropToken("IDLE"))
	if l, err := roundTrip(c, r, time.Second); err != nil || l != "* hi\n" {
		t.Fatalf("rewritten: %q %v", l, err)
	}
	p.Rewrite(nil)
	p.Silence(true)
	if _, err := roundTrip(c, r, 200*time.Millisecond); err == nil {
		t.Fatal("an answer came through a silenced proxy")
	}
	p.Silence(false)
	c.SetDeadline(time.Now().Add(time.Second))
	if l, err := r.ReadString('\n'); err != nil || !strings.HasSuffix(l, "hi\n") {
		t.Fatalf("after silence: %q %v", l, err)
	}
	p.Cut()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a cut connection still reads")
	}
	p.Refuse(true)
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		c2.SetDeadline(time.Now().Add(time.Second))
		if _, err := bufio.NewReader(c2).ReadString('\n'); err == nil {
			t.Fatal("a refused connection reads")
		}
		c2.Close()
	}
	if p.Accepted() < 2 {
		t.Fatalf("accepted %d", p.Accepted())
	}
}

func TestProxyCutAfterAndClientRewrite(t *testing.T) {
	p := Start(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	p.RewriteClient(Replace("hi", "yo"))
	if l, err := roundTrip(c, r, time.Second); err != nil || l != "* IDLE yo\n" {
		t.Fatalf("client rewrite: %q %v", l, err)
	}
	p.CutAfter(3)
	c.SetDeadline(time.Now().Add(time.Second))
	c.Write([]byte("hello\n"))
	b := make([]byte, 100)
	n, _ := io.ReadFull(r, b)
	if string(b[:n]) != "* I" {
		t.Fatalf("cut after 3 bytes: read %q", b[:n])
	}
}

// A connection the proxy is still setting up when Refuse and Cut come does
// not outlive them: it would keep a client online through a test's "cut
// everything" (TestBrowserTwoPeople waited 90 s for a page to go offline).
func TestCutReachesConnectionBeingSetUp(t *testing.T) {
	p := Start(t, echo(t))
	p.mu.Lock()
	p.dialed = func() { // the test cuts between the proxy's accept and its keeping the pair
		p.Refuse(true)
		p.Cut()
	}
	p.mu.Unlock()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if l, err := roundTrip(c, bufio.NewReader(c), time.Second); err == nil {
		t.Fatalf("a connection set up across a cut still answers: %q", l)
	}
}
