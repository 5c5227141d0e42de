package exchange

import (
	"errors"
	"slices"

	"github.com/ferry-sync/ferry/datasync/engine"
)

// flushEngine flushes the engine's pending local edits to docs, the
// documents an inbound frame names, and returns their local commit, which
// was owed to the peer before the frame arrived (§Termination: "A receiver
// MAY also emit a delta of its own local changes when a frame arrives for a
// document it holds unflushed edits to"). failed lists the documents whose
// flush failed; their edits stay pending. A failed flush is reported: it
// is a local storage failure the application must hear about.
func (s *Session) flushEngine(docs []string) (outs []Out, failed []string) {
	fl, ok := s.space.Engine.(engine.Flusher)
	if !ok {
		return nil, nil
	}
	for _, doc := range docs {
		if !fl.Pending(doc) {
			continue
		}
		before, err := fl.Flush(doc)
		if err != nil {
			failed = append(failed, doc)
			s.report(doc, errors.Join(ErrEngine, err))
			continue
		}
		outs = append(outs, s.commit(doc, before)...)
	}
	return outs, failed
}

// offerAfterFold is the one version offer after a recovered flush failure
// (§Termination: "A receiver MAY also emit one version offer when that
// flush failed and the frame's change then applied"). The failed flush
// left doc's edits pending, the import that then applied folded them into
// the imported change, and no local commit carries them, so this offer is
// what tells the peer to ask: it is reply:false, so the peer's counter-offer
// (reply:true) draws the catch-up, and partial, since it names one
// document. A failure still in force fails the import too: the edits are
// still pending and nothing is sent. docs/decisions/datasync-flush-offer.md.
func (s *Session) offerAfterFold(doc string, failed []string) []Out {
	if !slices.Contains(failed, doc) {
		return nil
	}
	if fl, ok := s.space.Engine.(engine.Flusher); !ok || fl.Pending(doc) {
		return nil
	}
	return s.offer([]string{doc}, false, true)
}
