package interop

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// Beyond (a)–(d): broadcasts to subscribers and protocol errors cross the
// implementation boundary too.

// waitFile waits until path exists or the subscriber ends.
func waitFile(t *testing.T, path string, ended <-chan struct{}) {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-ended:
			t.Fatal("subscriber ended before it was ready")
		case <-deadline:
			t.Fatal("subscriber not ready after 90 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A TS client subscribed to the Ferry relay receives, as a Broadcast, the
// changes a Ferry client pushes, and reads them.
func TestBroadcastFerryRelayToTSClient(t *testing.T) {
	e := needReal(t)
	url, _ := startFerryRelay(t)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 2*time.Minute)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")

	type out struct {
		res tsClientResult
		err error
	}
	done := make(chan out, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		res, err := execTSClient(e, tsClientConfig{DB: filepath.Join(dir, "ts.db"), Secret: testSecret, Relay: url,
			Subscribe: true, ReadyFile: ready, Broadcasts: 1, Dump: true})
		done <- out{res, err}
	}()
	waitFile(t, ready, ended)

	st := openFerryClient(t, owner)
	writeFerryItems(ctx, t, st, owner, seq(0, 3), 0)
	if _, err := client.Sync(ctx, url, owner, st, client.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("the TS subscriber got no broadcast")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Broadcasts < 1 || o.res.Count != 3 {
		t.Fatalf("TS subscriber: %d broadcasts, %d messages", o.res.Broadcasts, o.res.Count)
	}
	checkTSItems(t, o.res.Rows, seq(0, 3), 0)
}

// A Ferry client store subscribed to the real TS relay receives, as a
// Broadcast, the changes the real TS client pushes, and reads them.
func TestBroadcastTSRelayToFerryClient(t *testing.T) {
	e := needReal(t)
	tsRelay := startTSRelay(t, e)
	owner := ferryOwner(t, testSecret)
	ctx := withTimeout(t, 2*time.Minute)
	st := openFerryClient(t, owner)

	// The client's own subscribing loop: once its first sync converges the
	// TS client pushes 3 changes, which must arrive as a broadcast.
	synced, broadcast := make(chan struct{}, 1), make(chan int, 4)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- client.Run(runCtx, tsRelay.URL, owner, st, client.RunOptions{
			OnSync: func(client.SyncReport) {
				select {
				case synced <- struct{}{}:
				default:
				}
			},
			OnBroadcast: func(n int) { broadcast <- n },
		})
	}()
	defer func() { stop(); <-done }()
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("first sync did not converge")
	}
	runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "ts.db"), Secret: testSecret,
		Gen: &tsGen{To: 3}, Relay: tsRelay.URL})
	select {
	case n := <-broadcast:
		if n != 3 {
			t.Fatalf("broadcast carried %d messages, want 3", n)
		}
	case <-ctx.Done():
		t.Fatal("no broadcast")
	}
	checkFerryItems(ctx, t, st, owner, seq(0, 3), 0)
}

// A wrong write key is answered ProtocolWriteKeyError and a write over quota
// ProtocolQuotaError, whichever implementation is on either end, and the
// rejected changes are not stored.
func TestProtocolErrorsAcrossImplementations(t *testing.T) {
	e := needReal(t)
	owner := ferryOwner(t, testSecret)
	wrong := owner.WriteKey()
	wrong[0] ^= 0xff
	wrongHex := hex.EncodeToString(wrong[:])

	t.Run("TS client, Ferry relay", func(t *testing.T) {
		ctx := withTimeout(t, time.Minute)
		url, srv := startFerryRelay(t)
		dir := t.TempDir()
		// The first write key of an owner becomes its key.
		runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "a.db"), Secret: testSecret, Gen: &tsGen{To: 5}, Relay: url})
		res := runTSClientRaw(t, e, tsClientConfig{DB: filepath.Join(dir, "b.db"), Secret: testSecret, Gen: &tsGen{From: 5, To: 10}, Relay: url, WriteKey: wrongHex})
		if res.Error == nil || *res.Error != "ProtocolWriteKeyError" {
			t.Fatalf("TS client with a wrong key: %+v", res)
		}
		if n, _ := relayStorage(t, srv).Size(ctx, owner.ID()); n != 5 {
			t.Fatalf("Ferry relay stored %d, want the first 5 only", n)
		}
	})
	t.Run("Ferry client, TS relay", func(t *testing.T) {
		ctx := withTimeout(t, time.Minute)
		tsRelay := startTSRelay(t, e)
		runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "a.db"), Secret: testSecret, Gen: &tsGen{To: 5}, Relay: tsRelay.URL})
		st := openFerryClient(t, owner)
		writeFerryItems(ctx, t, st, owner, seq(5, 10), 0)
		// client.Owner only comes from a secret, so the wrong key goes
		// through the protocol driver, over the same client storage.
		_, err := protocolSync(ctx, tsRelay.URL, owner.ID(), wrong, ferryStorage(t, st, owner))
		var re *protocol.ResponseError
		if !errors.As(err, &re) || re.Code != protocol.WriteKeyError {
			t.Fatalf("Ferry client with a wrong key: %v", err)
		}
		check := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "c.db"), Secret: testSecret, Relay: tsRelay.URL})
		if check.Count != 5 {
			t.Fatalf("TS relay holds %d, want the first 5 only", check.Count)
		}
	})
	t.Run("TS client, Ferry relay over quota", func(t *testing.T) {
		ctx := withTimeout(t, time.Minute)
		srv := newFerryRelay(t, relay.Config{DBPath: filepath.Join(t.TempDir(), "q.db"), QuotaBytes: 2000})
		url := serveInProcess(t, srv)
		res := runTSClientRaw(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "a.db"), Secret: testSecret, Gen: &tsGen{To: 100}, Relay: url})
		if res.Error == nil || *res.Error != "ProtocolQuotaError" {
			t.Fatalf("TS client over the Ferry relay's quota: %+v", res)
		}
		if n, _ := relayStorage(t, srv).Size(ctx, owner.ID()); n != 0 {
			t.Fatalf("Ferry relay stored %d of a batch over quota", n)
		}
	})
	t.Run("Ferry client, TS relay over quota", func(t *testing.T) {
		ctx := withTimeout(t, time.Minute)
		tsRelay := startTSRelay(t, e, "FERRY_EVOLU_RELAY_QUOTA=2000")
		st := openFerryClient(t, owner)
		writeFerryItems(ctx, t, st, owner, seq(0, 100), 0)
		_, err := client.Sync(ctx, tsRelay.URL, owner, st, client.SyncOptions{})
		var re *protocol.ResponseError
		if !errors.As(err, &re) || re.Code != protocol.QuotaError {
			t.Fatalf("Ferry client over the TS relay's quota: %v", err)
		}
		check := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "c.db"), Secret: testSecret, Relay: tsRelay.URL})
		if check.Count != 0 {
			t.Fatalf("TS relay holds %d of a batch over quota", check.Count)
		}
	})
}

// serveInProcess serves srv on 127.0.0.1 and a free port until the test
// ends, and closes it.
func serveInProcess(t *testing.T, srv *relay.Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := newLoopbackListener()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ferry relay: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("ferry relay did not shut down")
		}
		srv.Close()
	})
	return "ws://" + ln.Addr().String()
}
