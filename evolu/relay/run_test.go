package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// TestRunLiveSync: two devices of one owner stay connected; a change put on
// one reaches the other as a broadcast, without a new sync.
func TestRunLiveSync(t *testing.T) {
	_, url := startRelay(t, relay.Config{})
	o := testOwner(6)
	a, b := openStore(t, "a.db"), openStore(t, "b.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	synced := map[string]chan client.SyncReport{"a": make(chan client.SyncReport, 10), "b": make(chan client.SyncReport, 10)}
	broadcasts := make(chan int, 10)
	done := make(chan error, 2)
	for name, st := range map[string]*client.Store{"a": a, "b": b} {
		opts := client.RunOptions{OnSync: func(r client.SyncReport) { synced[name] <- r }}
		if name == "b" {
			opts.OnBroadcast = func(n int) { broadcasts <- n }
		}
		go func() { done <- client.Run(ctx, url, o, st, opts) }()
	}
	for _, name := range []string{"a", "b"} {
		select {
		case <-synced[name]:
		case <-ctx.Done():
			t.Fatalf("%s never synced", name)
		}
	}
	id := protocol.ID{7}
	if _, err := a.Put(ctx, o, client.DbChange{Table: "todo", ID: id, Values: []client.Column{{Name: "title", Value: "live"}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-synced["a"]:
		if r.Sent != 1 {
			t.Fatalf("a's session after Put: %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("a did not push its change")
	}
	select {
	case n := <-broadcasts:
		if n != 1 {
			t.Fatalf("b got a broadcast of %d", n)
		}
	case <-ctx.Done():
		t.Fatal("b got no broadcast")
	}
	rows, err := b.Rows(ctx, o.ID(), "todo")
	if err != nil || len(rows) != 1 || rows[0].Columns[0].Value != "live" {
		t.Fatalf("b rows %+v %v", rows, err)
	}
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}
