package exchange

import (
	"errors"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/quarantine"
)

// importGuarded hands blob to the engine through the space's quarantine
// ledger (§Delivery: "blobs in flight are recorded on disk so one that ends
// the process cannot end it again on every retry"). The digest is recorded
// before imp runs and cleared after it returns; the clearing is
// deliberately not deferred, so a panic inside the engine leaves the record
// for the next process to quarantine. ok is false when the blob was not
// handed to the engine: it is quarantined (reported once per digest) or
// the record could not be made (reported); either way nothing answers it.
func (s *Session) importGuarded(doc string, blob []byte, imp func() (engine.Outcome, error)) (out engine.Outcome, ok bool, err error) {
	l := s.space.Ledger
	if l == nil {
		out, err = imp()
		return out, true, err
	}
	digest := quarantine.Digest(blob)
	if err := l.Begin(digest, doc); err != nil {
		if errors.Is(err, quarantine.ErrQuarantined) {
			if s.space.firstRefusal(digest) {
				s.report(doc, err)
			}
		} else {
			s.report(doc, errors.Join(ErrEngine, err))
		}
		return 0, false, nil
	}
	out, err = imp()
	if eerr := l.End(digest); eerr != nil {
		s.report(doc, errors.Join(ErrEngine, eerr))
	}
	return out, true, err
}

// firstRefusal reports whether this is the space's first refusal of the
// quarantined digest, so a blob a peer keeps offering is reported once, not
// on every anti-entropy round.
func (sp *Space) firstRefusal(digest string) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.refused == nil {
		sp.refused = map[string]bool{}
	}
	if sp.refused[digest] {
		return false
	}
	sp.refused[digest] = true
	return true
}
