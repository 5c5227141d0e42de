package tandemcli_test

import (
	"io"
	"net"
	"os"
	"sync"
	"testing"
)

// cutProxy forwards TCP connections to a server until cut, and can come
// back on the same address.
type cutProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, addr: "127.0.0.1:0", target: target}
	p.up()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection through it.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestWatchReconnects: sync --watch says when the account can't be
// reached, and when it is back, and then gets the other device's change.
func TestWatchReconnects(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	proxy := newCutProxy(t, addr)
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass, "connect", "imap", proxy.addr, "--user", user, "--security", "none", "--password-file", "-")
	a.ok("new", "Groceries")
	a.ok("sync")
	var hq struct{ Text string }
	a.jsonOut(&hq, "hub", "qr", "--yes")
	var key struct {
		BackupKey string `json:"backup_key"`
	}
	a.jsonOut(&key, "backup-key", "--yes")
	b.okIn(key.BackupKey+"\n", "restore", "--name", "Aimee", "--backup-key-file", "-")
	b.okIn(hq.Text, "connect", "paste")

	watch := a.start("sync", "--watch")
	watch.line(`^Connected: changes from elsewhere appear here`)
	wantErr(t, a.run("sync", "--watch"), 1, "another ferry sync --watch (or a share or device add that waits) has "+a.dir+" open: one at a time")
	proxy.cut()
	watch.line(`^The sync hub can't be reached; everything keeps working here and syncs when it's back\.$`)
	b.env = nil
	wantErr(t, b.run("sync"), 1, "The sync hub can't be reached")
	b.ok("add", "Groceries", "Milk") // offline work goes on
	proxy.up()
	watch.line(`^Connected: changes from elsewhere appear here`)
	b.ok("sync")
	watch.line(`^Groceries: \+ Milk \(by Aimee\)$`)
	watch.cmd.Process.Signal(os.Interrupt)
	watch.line(`^Stopped\.$`)
	watch.wait()
}

// TestWatchStartsOffline: sync --watch with the account unreachable from
// the start says so, keeps trying, and connects when it is back.
func TestWatchStartsOffline(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	proxy := newCutProxy(t, addr)
	a := newDevice(t, "a")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass, "connect", "imap", proxy.addr, "--user", user, "--security", "none", "--password-file", "-")
	proxy.cut()
	watch := a.start("sync", "--watch")
	watch.line(`^The sync hub can't be reached; everything keeps working here and syncs when it's back\.$`)
	proxy.up()
	watch.line(`^Connected: changes from elsewhere appear here`)
	watch.cmd.Process.Signal(os.Interrupt)
	watch.line(`^Stopped\.$`)
	watch.wait()
}
