package relay_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// FuzzRelayApply feeds arbitrary requests to a relay over its real SQLite
// storage: it never panics, a request it rejects changes nothing stored,
// and every answer is a Response within the size limit.
func FuzzRelayApply(f *testing.F) {
	o := testOwner(7)
	msg := protocol.EncryptedMessage{Timestamp: protocol.Timestamp{Millis: 9}, Change: make([]byte, 45)}
	push, _, _ := protocol.NewPushRequest(o.ID(), o.WriteKey(), []protocol.EncryptedMessage{msg}, 0, nil)
	f.Add(push)
	syncReq, _ := protocol.NewMessageBuffer(o.ID(), protocol.BufferOptions{Type: protocol.Request, Subscription: protocol.SubscriptionSubscribe}).Bytes()
	f.Add(syncReq)
	f.Add([]byte{1})
	ctx := context.Background()
	srv, err := relay.New(ctx, relay.Config{DBPath: filepath.Join(f.TempDir(), "fuzz.db")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	st := relay.StorageOf(srv)
	state := func(t *testing.T, owner protocol.OwnerID) (int, protocol.Fingerprint) {
		n, err := st.Size(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := st.Fingerprint(ctx, owner, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		return n, fp
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		var owner protocol.OwnerID
		if len(req) >= 17 {
			copy(owner[:], req[1:17])
		}
		n0, fp0 := state(t, owner)
		reply, err := relay.ApplyRequest(ctx, srv, req)
		if err != nil {
			if !errors.Is(err, protocol.ErrInvalidData) {
				t.Fatalf("error %v", err)
			}
			if n, fp := state(t, owner); n != n0 || fp != fp0 {
				t.Fatal("a rejected request changed the store")
			}
			return
		}
		if len(reply) > protocol.DefaultMaxSize {
			t.Fatalf("reply of %d bytes", len(reply))
		}
		if h, err := protocol.ParseHeader(reply); err == nil && h.Version == protocol.Version {
			if m, err := protocol.Decode(reply); err != nil || m.Type != protocol.Response {
				t.Fatalf("reply is not a response: %v", err)
			}
		}
	})
}
