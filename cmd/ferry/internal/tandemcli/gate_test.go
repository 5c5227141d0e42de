package tandemcli_test

import (
	"maps"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/faultproxy"
)

// appendGate sits in a faultproxy between the ferry processes and Dovecot
// and reads the channel of every message they APPEND (the Tandem-Channel
// header of the literal, §10.4). Armed with a rule, it can cut the
// network at a chosen append — before the message reaches the server, so
// nothing of it is stored — or hold appends until released. This is how
// the tests stop a sharing change at a known step of the user's own
// command, from outside the process.
type appendGate struct {
	t *testing.T
	p *faultproxy.Proxy

	mu     sync.Mutex
	seen   map[string]bool                             // channels appended to so far
	before map[string]bool                             // channels appended to before the rule was armed
	rule   func(channel string, known bool) gateAction // known: appended to before arming
	held   int
	open   chan struct{} // closed to release held appends
	cutHit bool
}

type gateAction int

const (
	gatePass gateAction = iota
	gateCut             // cut every connection and refuse new ones
	gateHold            // wait until release
)

var channelHeader = regexp.MustCompile(`(?m)^Tandem-Channel: ([^\r\n]+)\r?$`)

func newAppendGate(t *testing.T, target string) *appendGate {
	g := &appendGate{t: t, p: faultproxy.Start(t, target), seen: map[string]bool{}, open: make(chan struct{})}
	g.p.RewriteClient(g.filter)
	t.Cleanup(g.release)
	return g
}

func (g *appendGate) addr() string { return g.p.Addr() }

// filter runs in the proxy for every chunk a client sends.
func (g *appendGate) filter(b []byte) []byte {
	m := channelHeader.FindSubmatch(b)
	if m == nil {
		return b
	}
	ch := string(m[1])
	g.mu.Lock()
	known := g.before[ch]
	act := gatePass
	if g.rule != nil {
		act = g.rule(ch, known)
	}
	switch act {
	case gateCut:
		g.rule, g.cutHit = nil, true
		g.mu.Unlock()
		g.p.Refuse(true)
		g.p.Cut()
		return nil
	case gateHold:
		g.held++
		open := g.open
		g.mu.Unlock()
		select {
		case <-open:
		case <-time.After(50 * time.Second):
		}
		g.mu.Lock()
	}
	g.seen[ch] = true
	g.mu.Unlock()
	return b
}

// arm sets the rule for the appends that follow.
func (g *appendGate) arm(rule func(channel string, known bool) gateAction) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rule, g.cutHit = rule, false
	g.open = make(chan struct{})
	g.before = maps.Clone(g.seen)
}

// disarm lets everything through again and reopens the network; it
// reports whether the rule cut it.
func (g *appendGate) disarm() bool {
	g.mu.Lock()
	cut := g.cutHit
	g.rule, g.cutHit = nil, false
	g.mu.Unlock()
	g.p.Refuse(false)
	return cut
}

// waitHeld waits until n appends are held.
func (g *appendGate) waitHeld(n int) {
	g.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		h := g.held
		g.mu.Unlock()
		if h >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("%d append(s) held in 60s, want %d", g.held, n)
}

// release lets every held append through and holds no more.
func (g *appendGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
	g.rule, g.held = nil, 0
}

// cutAtUpload cuts at the first append to a channel not appended to
// before arming: a sharing change's new channel (§11.6 step 3), after its note
// went to home.
func cutAtUpload(_ string, known bool) gateAction {
	if !known {
		return gateCut
	}
	return gatePass
}

// cutAtAnnounce cuts at the first append to a known channel after one to
// a new channel: the announcement in the old channel (§11.6 step 4),
// once the new channel is complete.
func cutAtAnnounce() func(string, bool) gateAction {
	uploading := false
	return func(_ string, known bool) gateAction {
		switch {
		case !known:
			uploading = true
		case uploading:
			return gateCut
		}
		return gatePass
	}
}

// holdAll holds every append.
func holdAll(string, bool) gateAction { return gateHold }
