package interop

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// The Ferry client's live loop (client.Run: subscribe, apply broadcasts,
// re-sync after each Put) with the real TS relay and a subscribed real TS
// client: changes flow both ways without anyone asking for a sync.
func TestLiveFerryClientWithTSRelay(t *testing.T) {
	e := needReal(t)
	tsRelay := startTSRelay(t, e)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 2*time.Minute)
	st := openFerryClient(t, owner)

	synced := make(chan client.SyncReport, 16)
	broadcasts := make(chan int, 16)
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() {
		runDone <- client.Run(runCtx, tsRelay.URL, owner, st, client.RunOptions{
			OnSync:      func(r client.SyncReport) { synced <- r },
			OnBroadcast: func(n int) { broadcasts <- n },
		})
	}()
	defer func() {
		stop()
		if err := <-runDone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("client.Run: %v", err)
		}
	}()
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("client.Run never converged with the TS relay")
	}

	// A TS client subscribes and waits for one broadcast.
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	type out struct {
		res tsClientResult
		err error
	}
	subDone := make(chan out, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		res, err := execTSClient(e, tsClientConfig{DB: filepath.Join(dir, "sub.db"), Secret: testSecret, Relay: tsRelay.URL,
			Subscribe: true, ReadyFile: ready, Broadcasts: 1, Dump: true})
		subDone <- out{res, err}
	}()
	waitFile(t, ready, ended)

	// TS pushes: the Ferry client gets it as a broadcast (so does the TS
	// subscriber, which then stops).
	runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "push.db"), Secret: testSecret, Gen: &tsGen{To: 3}, Relay: tsRelay.URL})
	select {
	case n := <-broadcasts:
		if n != 3 {
			t.Fatalf("Ferry client got a broadcast of %d, want 3", n)
		}
	case <-ctx.Done():
		t.Fatal("Ferry client got no broadcast")
	}
	checkFerryItems(ctx, t, st, owner, seq(0, 3), 0)
	o := <-subDone
	if o.err != nil || o.res.Broadcasts < 1 {
		t.Fatalf("TS subscriber: %+v %v", o.res, o.err)
	}

	// Ferry puts a row: client.Run syncs it on its own; a fresh TS client
	// reads it from the relay.
	id, _ := protocol.ParseID("AAAAAAAAAAAAAAAAAAAABA")
	if _, err := st.Put(ctx, owner, client.DbChange{Table: "note", ID: id, Values: []client.Column{{Name: "text", Value: "from Ferry"}}, IsInsert: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "check.db"), Secret: testSecret, Relay: tsRelay.URL, Dump: true})
		found := false
		for _, r := range res.Rows {
			if r.Table == "note" && r.ID == id.String() && normJSON(r.Values["text"]) == norm("from Ferry") {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TS relay never got Ferry's Put: %d rows", len(res.Rows))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
