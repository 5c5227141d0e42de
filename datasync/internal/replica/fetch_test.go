package replica

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/attach"
	"github.com/ferry-sync/ferry/datasync/internal/exchange"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
	"github.com/ferry-sync/ferry/datasync/internal/transport"
)

// Issue 17 point 9: a fetch refused because the peer lacks entry 3 records
// nothing, so bytes for that hash arriving afterwards are refused at chunk
// 0 and never stored.
func TestRefusedFetchAdmitsNothing(t *testing.T) {
	ca, cb := testnet.Pipe("a", "b")
	defer ca.Close()
	defer cb.Close()
	kv, _ := engine.NewKV("a")
	l := New(kv, ca, Options{Caps: frame.Caps{engine.KVEncoding.Entry}}) // no entry 3
	blob := []byte("bytes the peer pushes anyway")
	h := attach.Hash(blob)
	if err := l.Fetch(context.Background(), h); err == nil {
		t.Fatal("fetch toward a peer without entry 3 accepted")
	}
	if l.fetcher.Outstanding(h) {
		t.Fatal("refused fetch left a request outstanding")
	}
	tx := &media.Sender{Send: func(_ context.Context, c []byte) error { _ = l.rx.Handle(c); return nil }}
	l.rx.Refuse = tx.Refused
	err := tx.SendData(context.Background(), media.Purpose{P: media.PurposeAttachment, Hash: h}, blob)
	if !errors.Is(err, media.ErrRefusedByPeer) {
		t.Fatalf("push after a refused fetch: %v", err)
	}
	if _, ok := l.Blobs().Get(h); ok {
		t.Fatal("bytes admitted after a refused fetch")
	}
}

// failingConn is a Conn whose every Send fails.
type failingConn struct{ transport.Conn }

func (failingConn) Send(context.Context, []byte) error { return errors.New("radio off") }

// Issue 17 point 12: a send that fails is reported, never dropped in
// silence, with the document the frame names.
func TestFailedSendReported(t *testing.T) {
	ca, cb := testnet.Pipe("a", "b")
	defer ca.Close()
	defer cb.Close()
	kv, _ := engine.NewKV("a")
	var reports []exchange.Report
	l := New(kv, failingConn{ca}, Options{Caps: caps, Report: func(r exchange.Report) { reports = append(reports, r) }})
	_ = kv.Set("notes", "k", []byte("v"))
	if err := l.Commit(context.Background(), "notes", nil); err == nil {
		t.Fatal("failed commit returned no error")
	}
	if len(reports) != 1 || reports[0].Doc != "notes" || !strings.Contains(reports[0].Err.Error(), "radio off") {
		t.Fatalf("reports %v", reports)
	}
}

// Stats counts the documents a link sent and the peer's changes it applied.
func TestLinkStats(t *testing.T) {
	ca, cb := testnet.Pipe("a", "b")
	a, b := newSide(t, "a", ca, 0), newSide(t, "b", cb, 0)
	_ = a.kv.Set("notes", "k", []byte("v"))
	_ = a.kv.Set("todo", "k", []byte("v"))
	stop := run(t, a, b)
	defer stop()
	waitFor(t, "sync", func() bool {
		return b.kv.Has("todo") && len(b.kv.Values("todo")) == 1 && len(b.kv.Values("notes")) == 1
	})
	if sa, sb := a.link.Stats(), b.link.Stats(); sa.Sent < 2 || sb.Received < 2 || sb.Received > sa.Sent {
		t.Fatalf("a %+v, b %+v", sa, sb)
	}
	if s := b.link.Stats(); s.Sent != 0 {
		t.Fatalf("b sent %d documents it did not hold", s.Sent)
	}
}
