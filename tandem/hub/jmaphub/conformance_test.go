package jmaphub

import (
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// TestConformanceCyrus runs the shared conformance suite against the real
// Cyrus JMAP server. Cyrus 3.6 answers 204 to EventSource, so the suite's
// Watch test exercises the polling fallback here.
func TestConformanceCyrus(t *testing.T) {
	cfg := cyrusConfig(t, userConformance)
	var adm admin
	hubtest.Run(t, hubtest.Harness{
		Open: func(t *testing.T) hub.Store { return openCyrus(t, cfg) },
		Reset: func(t *testing.T) {
			adm = admin{openCyrus(t, cfg)}
			adm.reset(t)
		},
		MoveOut: func(t *testing.T, id hub.ID) func(*testing.T) {
			mb, err := adm.st.ensureMailbox(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			adm.move(t, id, adm.inbox(t))
			return func(t *testing.T) { adm.move(t, id, mb) }
		},
		Inject: func(t *testing.T, raw []byte) {
			mb, err := adm.st.ensureMailbox(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			adm.inject(t, mb, raw)
		},
	})
}
