package exchange

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
)

// §Bounds across a restart: the documents peers named are the space's
// state (PeerNamedDocs), and a space restored from it (RestorePeerNamed)
// keeps counting from there; a peer-named document dropped and named again
// is counted once.
func TestPeerNamedCeilingSurvivesRestart(t *testing.T) {
	const limit = 10
	a, _ := pair(t)
	a.sp.MaxPeerDocs = limit
	offer := func(s *Session, names ...string) {
		docs := map[string][]byte{}
		for _, n := range names {
			docs[n] = []byte{}
		}
		s.Receive(wire(t, frame.Frame{Kind: frame.KindOffer, Reply: true, Partial: true, Docs: docs}))
	}
	for i := range 8 {
		offer(a.sess["b"], fmt.Sprint("p", i))
	}
	saved := a.sp.PeerNamedDocs()
	if len(saved) != 8 || saved[0] != "p0" {
		t.Fatalf("saved %v", saved)
	}

	// The restart: the documents come back from storage, then the set.
	r := newReplica(t, "a")
	for _, d := range a.kv.Docs() {
		snap, _ := a.kv.Snapshot(d)
		_, _ = r.kv.ImportSnapshot(d, snap)
	}
	r.sp.MaxPeerDocs = limit
	r.sp.RestorePeerNamed(saved)
	s := NewSession(r.sp, "b", Options{Caps: kvCaps})
	offer(s, "q0", "q1", "q2", "q3")
	if !r.kv.Has("q0") || !r.kv.Has("q1") || r.kv.Has("q2") || r.kv.Has("q3") {
		t.Fatalf("after restart created %v", r.kv.Docs())
	}
	if r.sp.PeerNamed() != limit || len(r.reports) != 2 || !errors.Is(r.reports[0].Err, ErrCeiling) {
		t.Fatalf("%d peer-named, reports %v", r.sp.PeerNamed(), r.reports)
	}
	// At the ceiling, a counted document that was dropped comes back.
	r.kv.Drop("p0")
	offer(s, "p0")
	if !r.kv.Has("p0") || len(r.reports) != 2 {
		t.Fatalf("dropped peer-named document not recreated at the ceiling: %v", r.reports)
	}
}
