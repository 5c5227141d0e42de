package replica

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

var caps = frame.Caps{engine.KVEncoding.Entry, frame.EntryMedia}

type side struct {
	kv      *engine.KV
	link    *Link
	mu      sync.Mutex
	reports []exchange.Report
}

func (s *side) Reports() []exchange.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]exchange.Report{}, s.reports...)
}

func newSide(t *testing.T, actor string, conn transport.Conn, maxRecord int) *side {
	kv, err := engine.NewKV(actor)
	if err != nil {
		t.Fatal(err)
	}
	s := &side{kv: kv}
	s.link = New(kv, conn, Options{Caps: caps, Interval: 20 * time.Millisecond, MaxRecord: maxRecord,
		Report: func(r exchange.Report) { s.mu.Lock(); s.reports = append(s.reports, r); s.mu.Unlock() }})
	return s
}

// waitFor polls cond; the deadline only bounds a failing test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func same(a, b *engine.KV) bool {
	if fmt.Sprint(a.Docs()) != fmt.Sprint(b.Docs()) {
		return false
	}
	for _, d := range a.Docs() {
		if !maps.Equal(a.Values(d), b.Values(d)) {
			return false
		}
	}
	return true
}

func run(t *testing.T, sides ...*side) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range sides {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.link.Run(ctx) }()
	}
	return func() { cancel(); wg.Wait() }
}

func exercise(t *testing.T, a, b *side) {
	_ = a.kv.Set("notes", "title", []byte("from a"))
	_ = b.kv.Set("todo", "milk", []byte("yes"))
	big := make([]byte, 100_000) // far over the 32 KiB frame budget
	for i := range big {
		big[i] = byte(i * 7)
	}
	_ = a.kv.Set("big", "blob", big)
	photo := []byte("pretend this is a photo")
	ref, _ := attach.Of(photo, "photo.jpg", "image/jpeg")
	_ = a.link.Blobs().Put(ref.Hash, photo)
	_ = a.kv.SetRef("notes", "picture", ref)
	stop := run(t, a, b)
	defer stop()
	waitFor(t, "convergence", func() bool { return same(a.kv, b.kv) })
	if v, _ := b.kv.Get("big", "blob"); len(v) != len(big) {
		t.Fatal("oversized document did not cross the media path")
	}
	got, ok := b.kv.Ref("notes", "picture")
	if !ok || got != ref {
		t.Fatalf("reference did not replicate: %+v", got)
	}
	if err := b.link.Fetch(context.Background(), got.Hash); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "attachment", func() bool { _, ok := b.link.Blobs().Get(got.Hash); return ok })
	// A live edit after convergence is committed and arrives.
	before, _ := b.kv.Version("todo")
	_ = b.kv.Set("todo", "eggs", []byte("12"))
	if err := b.link.Commit(context.Background(), "todo", before); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "commit", func() bool { v, _ := a.kv.Get("todo", "eggs"); return string(v) == "12" })
	gone := attach.Hash([]byte("nobody holds this"))
	_ = b.link.Fetch(context.Background(), gone)
	waitFor(t, "blob_gone", func() bool { return errors.Is(b.link.FetchStatus(gone), attach.ErrGone) })
	if r := append(a.Reports(), b.Reports()...); len(r) != 0 {
		t.Fatalf("reports %v", r)
	}
}

func TestLinkOverPipe(t *testing.T) {
	ca, cb := testnet.Pipe("a", "b")
	exercise(t, newSide(t, "a", ca, 0), newSide(t, "b", cb, 0))
}

// TestLinkOverNoiseTCP runs the same exchange over the real transport:
// Noise IK on TCP, each side's space derived from the peer's key.
func TestLinkOverNoiseTCP(t *testing.T) {
	ka, _ := transport.GenerateKey()
	kb, _ := transport.GenerateKey()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan transport.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		nc, _ := transport.Accept(ctx, c, kb, func(p []byte) bool { return transport.KeyID(p) == transport.KeyID(ka.Public) })
		got <- nc
	}()
	ca, err := transport.Dial(ctx, ln.Addr().String(), ka, kb.Public)
	if err != nil {
		t.Fatal(err)
	}
	cb := <-got
	if cb == nil {
		t.Fatal("accept failed")
	}
	defer ca.Close()
	defer cb.Close()
	exercise(t, newSide(t, "a", ca, 0), newSide(t, "b", cb, 0))
}

// §Documents too large for a frame: a receiver refuses a snapshot over its
// record bound at identification; the sender reports the document.
func TestOversizedSnapshotRefused(t *testing.T) {
	ca, cb := testnet.Pipe("a", "b")
	a, b := newSide(t, "a", ca, 0), newSide(t, "b", cb, 50_000)
	_ = a.kv.Set("big", "blob", make([]byte, 100_000))
	stop := run(t, a, b)
	defer stop()
	waitFor(t, "report", func() bool {
		for _, r := range a.Reports() {
			if r.Doc == "big" && errors.Is(r.Err, media.ErrRefusedByPeer) {
				return true
			}
		}
		return false
	})
	if v, ok := b.kv.Get("big", "blob"); ok {
		t.Fatalf("refused snapshot imported (%d bytes)", len(v))
	}
	// Refused at chunk 0: nothing of the transfer was ever buffered. (Chunks
	// the sender had in flight before it heard the refusal are dropped.)
	refusals, released, _ := b.link.rx.Stats()
	if released != 0 || refusals == 0 {
		t.Fatalf("%d bytes buffered before refusal, %d refusals", released, refusals)
	}
}
