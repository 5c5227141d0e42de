package replica

import (
	"context"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/datasync/attach"
	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/frame"
	"github.com/ferry-sync/ferry/datasync/internal/media"
	"github.com/ferry-sync/ferry/datasync/internal/testnet"
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
