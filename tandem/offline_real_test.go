package tandem

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// forwarder is a TCP proxy on 127.0.0.1 that the test switches on and off:
// the hub "comes back" when it starts forwarding to the real server.
type forwarder struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newForwarder(t *testing.T, target string) (*forwarder, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // closed: the hub is unreachable until start
	return &forwarder{target: target}, port
}

func (f *forwarder) start(t *testing.T, port int) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	f.ln = ln
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.DialTimeout("tcp", f.target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, s)
			f.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

// A device created while its real hub is unreachable works offline, says
// so, and syncs when the hub comes back (issue 10: "Open never needs the
// network").
func TestOfflineStartDovecot(t *testing.T) {
	real := dovecotHub(t, "ken")
	fw, port := newForwarder(t, net.JoinHostPort(real.d.Host, strconv.Itoa(real.d.Port)))
	h := IMAPHub("127.0.0.1", port, real.d.User, real.d.Password)
	d := openT(t, filepath.Join(t.TempDir(), "d"), Options{Name: "Offline", Hub: h})
	defer d.Close()
	c, _ := d.NewCollection("Made offline")
	id, _ := d.NewRecord(c, map[string][]byte{"title": []byte("written offline")})
	start := time.Now()
	if _, err := d.Sync(t.Context()); CodeOf(err) != CodeOffline {
		t.Fatalf("Sync with the hub down = %v, want CodeOffline", err)
	}
	if time.Since(start) > 15*time.Second || !d.Status().Offline {
		t.Fatalf("offline took %v, status %+v", time.Since(start), d.Status())
	}
	fw.start(t, port)
	if _, err := d.Sync(t.Context()); err != nil {
		t.Fatalf("Sync after the hub came back: %v", err)
	}
	e, err := Restore(t.Context(), filepath.Join(t.TempDir(), "e"), d.ShowBackupKey(), Options{Hub: real, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	syncT(t, e)
	if r, err := e.Record(c, id); err != nil || r.Get("title") != "written offline" {
		t.Fatalf("another device: %v %+v", err, r)
	}
}

// Run on real servers leaves no goroutine behind once it has returned and
// the device is closed.
func TestRunLeavesNothingDovecotCyrus(t *testing.T) {
	jm, _, _, _ := cyrusJMAP(t, "ivan")
	for _, h := range []Hub{dovecotHub(t, "ken"), jm} {
		base := runtime.NumGoroutine()
		d := openT(t, filepath.Join(t.TempDir(), "d"), Options{Hub: h})
		d.NewCollection("Leak check")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		waitFor(t, "online on "+h.String(), 20*time.Second, func() bool { return d.Status().Online })
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run on %s: %v", h, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Run on %s did not return", h)
		}
		d.Close()
		waitFor(t, "goroutines to end on "+h.String(), 20*time.Second, func() bool {
			return runtime.NumGoroutine() <= base
		})
	}
}

var _ = strings.Cut
