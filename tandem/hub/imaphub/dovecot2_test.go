package imaphub

import (
	"bytes"
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestBothRemovalPaths watches one folder through the QRESYNC instance and
// the plain one (prefix INBOX.): a cursor of one instance is a full resync
// on the other (another server address and folder name: the cursor says
// whose it is), and a destroy shows up as VANISHED (EARLIER) on one and by
// UID SEARCH ALL on the other.
func TestBothRemovalPaths(t *testing.T) {
	qcfg := dovecot(t, "FERRY_DOVECOT_ADDR", "dave")
	pcfg := dovecot(t, "FERRY_DOVECOT_PLAIN_ADDR", "dave")
	newAdmin(t, qcfg).reset()
	q, p := openT(t, qcfg), openT(t, pcfg)
	defer q.Close()
	defer p.Close()
	ctx := ctx5(t)
	if err := q.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.EnsureFolder(ctx); err != nil { // INBOX.Tandem is the same folder
		t.Fatal(err)
	}
	var added []hub.ID
	for i := range 3 {
		added = append(added, must[hub.ID](t)(q.Append(ctx, hubtest.Channel(i), hubtest.Envelope(80))))
	}
	c0 := must[hub.Changes](t)(q.Changes(ctx, nil))
	if !slices.Equal(ids(c0), added) {
		t.Fatalf("added %v, want %v", ids(c0), added)
	}
	cur := must[cursor](t)(decodeCursor(c0.Cursor))
	if cur.modSeq == 0 {
		t.Fatal("the QRESYNC instance gave no HIGHESTMODSEQ")
	}
	cp := must[hub.Changes](t)(p.Changes(ctx, c0.Cursor))
	if !cp.Reset || !slices.Equal(ids(cp), added) || !slices.Equal(cp.Removed, added) {
		t.Fatalf("the other instance's cursor on the plain one: %+v; want a Reset with everything added", cp)
	}
	if err := p.Destroy(ctx, added[1:2]); err != nil {
		t.Fatal(err)
	}
	// The QRESYNC path, seen directly: SELECT (QRESYNC …) answers VANISHED.
	q.mu.Lock()
	sel, err := q.c.selectFolder(ctx, q.mailbox, &cur)
	q.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	_, uid, _ := parseID(added[1])
	if !sel.vanished.contains(uid) || sel.vanished.count() != 1 {
		t.Fatalf("VANISHED (EARLIER) = %v, want UID %d", sel.vanished, uid)
	}
	// The same QRESYNC server with the client told not to use it.
	ncfg := qcfg
	ncfg.DisableQRESYNC = true
	n := openT(t, ncfg)
	defer n.Close()
	if n.c.qresync {
		t.Fatal("DisableQRESYNC: QRESYNC enabled anyway")
	}
	for name, s := range map[string]*Store{"QRESYNC": q, "SEARCH ALL": p, "DisableQRESYNC": n} {
		since := c0.Cursor
		if s == p {
			since = cp.Cursor
		}
		c := must[hub.Changes](t)(s.Changes(ctx, since))
		if len(c.Added) != 0 || !slices.Equal(c.Removed, added[1:2]) {
			t.Errorf("%s path: %+v, want removed %v", name, c, added[1:2])
		}
	}
}

// TestUIDValidityChange: a folder deleted and created again has a new
// UIDVALIDITY; changes from an old cursor are a full resync.
func TestUIDValidityChange(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_ADDR", "erin")
	a := newAdmin(t, cfg)
	a.reset()
	s := openT(t, cfg)
	defer s.Close()
	ctx := ctx5(t)
	s.EnsureFolder(ctx)
	var old []hub.ID
	for i := range 2 {
		old = append(old, must[hub.ID](t)(s.Append(ctx, hubtest.Channel(i), hubtest.Envelope(80))))
	}
	c0 := must[hub.Changes](t)(s.Changes(ctx, nil))
	a.reset()
	time.Sleep(1100 * time.Millisecond) // Dovecot's UIDVALIDITY is a time in seconds
	ctx = ctx5(t)                       // the calls after the sleep get their own budget
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	env := hubtest.Envelope(80)
	fresh := must[hub.ID](t)(s.Append(ctx, hubtest.Channel(5), env))
	c1 := must[hub.Changes](t)(s.Changes(ctx, c0.Cursor))
	if !slices.Equal(ids(c1), []hub.ID{fresh}) || !slices.Equal(c1.Removed, old) {
		t.Fatalf("after a UIDVALIDITY change: added %v removed %v; want [%s], %v", ids(c1), c1.Removed, fresh, old)
	}
	b := must[[]hub.Body](t)(s.Fetch(ctx, append([]hub.ID{fresh}, old...)))
	if !bytes.Equal(b[0].Envelope, env) || b[1].Err == nil || b[2].Err == nil {
		t.Fatalf("fetch after the resync: %+v", b)
	}
}

// countingConn counts the IDLE commands a connection sends.
type countingConn struct {
	net.Conn
	idles *atomic.Int32
}

func (c countingConn) Write(p []byte) (int, error) {
	if bytes.HasSuffix(p, []byte(" IDLE\r\n")) {
		c.idles.Add(1)
	}
	return c.Conn.Write(p)
}

// TestIdleReissued: IDLE is re-issued on schedule and notifications still
// arrive afterwards.
func TestIdleReissued(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_ADDR", "frank")
	newAdmin(t, cfg).reset()
	var idles atomic.Int32
	wcfg := cfg
	wcfg.IdleRefresh = 150 * time.Millisecond
	wcfg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{nc, &idles}, err
	}
	w, s := openT(t, wcfg), openT(t, cfg)
	defer w.Close()
	defer s.Close()
	if err := s.EnsureFolder(ctx5(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx5(t))
	defer cancel()
	calls := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, func() { calls <- struct{}{} }) }()
	<-calls // listening
	deadline := time.Now().Add(3 * time.Second)
	for idles.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := idles.Load(); n < 4 {
		t.Fatalf("IDLE sent %d times in 3s with a 150ms refresh", n)
	}
	must[hub.ID](t)(s.Append(ctx5(t), hubtest.Channel(1), hubtest.Envelope(80)))
	select {
	case <-calls:
	case err := <-done:
		t.Fatalf("Watch ended: %v", err)
	case <-time.After(realtest.Scale(5 * time.Second)):
		t.Fatal("no notification after IDLE was re-issued")
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Watch returned %v", err)
	}
}
