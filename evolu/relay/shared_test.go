package relay_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// TestSecondRelayProcessRefused: a second relay process on the same SQLite
// file does not start, with a clear error (issue 16: both started and
// disagreed), and the first keeps serving.
func TestSecondRelayProcessRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "relay.db")
	first := startChild(t, db)
	second, line := startChildErr(t, db)
	if second != nil || !strings.Contains(line, "in use by another relay process") {
		t.Fatalf("second relay process: %q", line)
	}
	if _, err := relay.New(context.Background(), relay.Config{DBPath: db}); !errors.Is(err, relay.ErrDatabaseInUse) {
		t.Fatalf("in-process relay on the same file: %v", err)
	}
	o := testOwner(60)
	st := openStore(t, "c.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Put(ctx, o, client.DbChange{Table: "t", ID: protocol.ID{1}, Values: []client.Column{{Name: "a", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	if rep, err := client.Sync(ctx, first.url, o, st, client.SyncOptions{}); err != nil || rep.Sent != 1 {
		t.Fatalf("sync with the first: %+v %v", rep, err)
	}
	first.stop()
	third := startChild(t, db) // the lock went with the first process
	fresh := openStore(t, "d.db")
	if rep, err := client.Sync(ctx, third.url, o, fresh, client.SyncOptions{}); err != nil || rep.Received != 1 {
		t.Fatalf("sync after restart: %+v %v", rep, err)
	}
}

// TestRunPushesAnotherProcessPut: a change put into a client database by
// another process (ferry evolu put while ferry evolu sync --watch runs on
// it) is pushed by the running sync (issue 16: it stayed local forever).
func TestRunPushesAnotherProcessPut(t *testing.T) {
	_, url := startRelay(t, relay.Config{})
	o := testOwner(61)
	path := filepath.Join(t.TempDir(), "client.db")
	watch, err := client.OpenStore(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	synced := make(chan client.SyncReport, 10)
	done := make(chan error, 1)
	go func() {
		done <- client.Run(ctx, url, o, watch, client.RunOptions{PollInterval: 50 * time.Millisecond, OnSync: func(r client.SyncReport) { synced <- r }})
	}()
	<-synced
	put, err := client.OpenStore(ctx, path) // the other process
	if err != nil {
		t.Fatal(err)
	}
	if _, err := put.Put(ctx, o, client.DbChange{Table: "todo", ID: protocol.ID{9}, Values: []client.Column{{Name: "title", Value: "from put"}}}); err != nil {
		t.Fatal(err)
	}
	put.Close()
	select {
	case r := <-synced:
		if r.Sent != 1 {
			t.Fatalf("watch after another process's put: %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("the running sync never pushed the other process's change")
	}
	other := openStore(t, "other.db")
	if rep, err := client.Sync(ctx, url, o, other, client.SyncOptions{}); err != nil || rep.Received != 1 {
		t.Fatalf("another device: %+v %v", rep, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
