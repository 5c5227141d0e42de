package quarantine

import (
	"fmt"
	"testing"
)

// Issue 17 point 10: the quarantine list is bounded. After more crashes
// than MaxQuarantined, the newest MaxQuarantined digests are kept and the
// oldest dropped, on disk as in memory, and across a reopen.
func TestQuarantineBounded(t *testing.T) {
	const crashes = 40
	digest := func(i int) string { return Digest([]byte(fmt.Sprint("crash ", i))) }
	for _, lr := range ledgers(t) {
		t.Run(lr.name, func(t *testing.T) {
			l := lr.open(t)
			for i := range crashes {
				if err := l.Begin(digest(i), "d"); err != nil {
					t.Fatalf("crash %d: %v", i, err)
				}
				l = lr.restart(t, l) // the process died inside the engine
			}
			got := map[string]bool{}
			for _, e := range l.Quarantined() {
				got[e.Digest] = true
			}
			if len(got) != MaxQuarantined {
				t.Fatalf("%d digests kept after %d crashes, want %d", len(got), crashes, MaxQuarantined)
			}
			for i := crashes - MaxQuarantined; i < crashes; i++ {
				if !got[digest(i)] {
					t.Fatalf("crash %d (one of the newest) dropped", i)
				}
			}
			if got[digest(0)] {
				t.Fatal("oldest crash kept")
			}
			if n := len(lr.restart(t, l).Quarantined()); n != MaxQuarantined {
				t.Fatalf("%d after a clean reopen", n)
			}
		})
	}
}
