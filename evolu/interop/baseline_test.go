package interop

import (
	"path/filepath"
	"strings"
	"testing"
)

// testSecret is a fixed OwnerSecret for the interop tests.
const testSecret = "1111111111111111111111111111111111111111111111111111111111111111"

// TestRealTSClientWithRealTSRelay checks the harness itself: the real TS
// client pushes through the real TS relay and a second TS client pulls it all.
func TestRealTSClientWithRealTSRelay(t *testing.T) {
	e := needReal(t)
	relay := startTSRelay(t, e)
	dir := t.TempDir()
	push := runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "a.db"), Secret: testSecret,
		Gen: &tsGen{To: 500}, Relay: relay.URL})
	if push.Outcome != "Converged" || push.Count != 500 {
		t.Fatalf("push: %+v", push)
	}
	pull := runTSClient(t, e, tsClientConfig{DB: filepath.Join(dir, "b.db"), Secret: testSecret,
		Relay: relay.URL, Dump: true})
	if pull.Count != 500 || pull.Fingerprint != push.Fingerprint {
		t.Fatalf("pull: count %d fingerprint %s, want 500 %s", pull.Count, pull.Fingerprint, push.Fingerprint)
	}
	if len(pull.Rows) != 500 || pull.Rows[499].Table != "item" || pull.Rows[499].Error != "" {
		t.Fatalf("rows: %d, last %+v", len(pull.Rows), pull.Rows[len(pull.Rows)-1])
	}
	if err := relay.Stop(); err != nil && !strings.Contains(err.Error(), "signal") {
		t.Fatalf("relay exit: %v\n%s", err, relay.Stderr())
	}
}
