package interop

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// TestProtocolSyncThroughTSRelay runs Ferry's protocol functions (no
// evolu/client) against the real TS relay in both directions: a Go store
// pulls what the real TS client pushed, then pushes its own messages, which a
// fresh TS client pulls; every side ends with the same set.
func TestProtocolSyncThroughTSRelay(t *testing.T) {
	e := needReal(t)
	relay := startTSRelay(t, e)
	owner := loadOwner(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	push := runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "ts1.db"), Secret: owner.Secret,
		Gen: &tsGen{To: 1500}, Relay: relay.URL})
	if push.Count != 1500 {
		t.Fatalf("TS push: %+v", push)
	}

	st := protocol.NewMemoryStorage()
	if err := writeAll(ctx, st, owner.ID, opaqueItems(seq(1500, 2500), 90)); err != nil {
		t.Fatal(err)
	}
	stats, err := protocolSync(ctx, relay.URL, owner.ID, owner.WriteKey, st)
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, relay.Stderr())
	}
	if stats.Outcome != protocol.Converged {
		t.Fatalf("outcome %v", stats.Outcome)
	}
	n, fp, err := storeDigest(ctx, st, owner.ID)
	if err != nil || n != 2500 {
		t.Fatalf("Go store has %d (%v), want 2500", n, err)
	}
	pull := runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "ts2.db"), Secret: owner.Secret, Relay: relay.URL})
	if pull.Count != 2500 || pull.Fingerprint != hex.EncodeToString(fp[:]) {
		t.Fatalf("TS pull: %d %s, Go %d %x", pull.Count, pull.Fingerprint, n, fp)
	}
	t.Logf("Go sync: %d rounds, %d bytes sent, %d received", stats.Rounds, stats.BytesSent, stats.BytesReceived)
}

// seq returns [from, to).
func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
