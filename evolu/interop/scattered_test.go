package interop

import (
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/client"
)

// scatteredUniverse is a universe of n items and two disjoint sets of k
// scattered items, one missing on each side.
func scatteredUniverse(n, k int) (left, right []int) {
	missLeft, missRight := map[int]bool{}, map[int]bool{}
	for j := range k {
		missLeft[(j*7919+13)%n] = true
	}
	for j := range k {
		i := (j*104729 + 5003) % n
		if !missLeft[i] {
			missRight[i] = true
		}
	}
	for i := range n {
		if !missLeft[i] {
			left = append(left, i)
		}
		if !missRight[i] {
			right = append(right, i)
		}
	}
	return left, right
}

// RBSR down several fingerprint levels between the implementations: 10,000
// items on each side, about 40 scattered differences on each, both ways.
func TestReconcileScatteredDifferences(t *testing.T) {
	e := needReal(t)
	owner := ferryOwner(t, testSecret)
	const n = 10_000
	relaySide, clientSide := scatteredUniverse(n, 40)

	t.Run("TS client, Ferry relay", func(t *testing.T) {
		ctx := withTimeout(t, 2*time.Minute)
		url, srv := startFerryRelay(t)
		loader := openFerryClient(t, owner)
		writeFerryItems(ctx, t, loader, owner, relaySide, 0)
		if _, err := client.Sync(ctx, url, owner, loader, client.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
		ts := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "ts.db"), Secret: testSecret,
			Gen: &tsGen{Indices: clientSide}, Relay: url})
		count, fp, err := storeDigest(ctx, relayStorage(t, srv), owner.ID())
		if err != nil || ts.Count != n || count != n || ts.Fingerprint != hex.EncodeToString(fp[:]) {
			t.Fatalf("TS client %d %s, Ferry relay %d %x (%v)", ts.Count, ts.Fingerprint, count, fp, err)
		}
		if ts.Rounds < 3 {
			t.Fatalf("converged in %d rounds: the differences did not need splitting", ts.Rounds)
		}
		t.Logf("TS client: %d rounds, %d B sent, %d B received", ts.Rounds, ts.BytesSent, ts.BytesReceived)
	})
	t.Run("Ferry client, TS relay", func(t *testing.T) {
		ctx := withTimeout(t, 2*time.Minute)
		tsRelay := startTSRelay(t, e)
		runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "load.db"), Secret: testSecret,
			Gen: &tsGen{Indices: relaySide}, Relay: tsRelay.URL})
		st := openFerryClient(t, owner)
		writeFerryItems(ctx, t, st, owner, clientSide, 0)
		rep, err := client.Sync(ctx, tsRelay.URL, owner, st, client.SyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Rounds < 3 || rep.Received != n-len(clientSide) || rep.Sent < n-len(relaySide) {
			t.Fatalf("Ferry client: %+v", rep)
		}
		checkFerryItems(ctx, t, st, owner, seq(0, n), 0)
		check := runTSClient(t, e, tsClientConfig{DB: filepath.Join(t.TempDir(), "check.db"), Secret: testSecret, Relay: tsRelay.URL})
		count, fp, _ := storeDigest(ctx, ferryStorage(t, st, owner), owner.ID())
		if check.Count != n || count != n || check.Fingerprint != hex.EncodeToString(fp[:]) {
			t.Fatalf("TS relay %d %s, Ferry client %d %x", check.Count, check.Fingerprint, count, fp)
		}
		t.Logf("Ferry client: %+v", rep)
	})
}
