package exchange

import (
	"errors"
	"maps"
	"slices"

	"github.com/ferry-sync/ferry/datasync/frame"
)

// Offer returns the complete version offer (reply:false) of every document
// held, split into partial frames when it does not fit one (§Exchange).
func (s *Session) Offer() []Out {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.route(s.offer(s.space.Engine.Docs(), false, false))
}

// offer lists docs with their versions. More than one frame, or partial
// forced (a targeted offer), marks every frame partial (§Exchange: "a sender
// MUST set partial on any frame carrying less than everything it holds").
func (s *Session) offer(docs []string, reply, partial bool) []Out {
	const room = frame.MaxFrameBytes - 1024
	var frames []frame.Frame
	cur := frame.Frame{Kind: frame.KindOffer, Reply: reply, Docs: map[string][]byte{}}
	verBytes, wire := 0, 0
	for _, doc := range slices.Sorted(slices.Values(docs)) {
		v, err := s.space.Engine.Version(doc)
		if err != nil {
			s.report(doc, errors.Join(ErrEngine, err))
			continue
		}
		cost := len(doc) + 4*len(v)/3 + 16
		if len(cur.Docs) == OfferDocs || verBytes+len(v) > frame.MaxDocumentBytes || wire+cost > room {
			frames = append(frames, cur)
			cur = frame.Frame{Kind: frame.KindOffer, Reply: reply, Docs: map[string][]byte{}}
			verBytes, wire = 0, 0
		}
		cur.Docs[doc] = v
		verBytes += len(v)
		wire += cost
	}
	frames = append(frames, cur)
	outs := make([]Out, len(frames))
	for i, f := range frames {
		f.Partial = partial || len(frames) > 1
		outs[i] = s.to(f)
	}
	return outs
}

// Commit returns the local commit of doc: its changes since before, the
// version it had before the local edits. In a 1:1 space it is addressed to
// the peer; in a group it goes to the whole roster (§Group scope: "Only a
// local commit is sent to the whole roster"), so call it on one session of
// the group. If sending it fails, call [Session.Unsent] so the next frame
// naming doc flushes it.
func (s *Session) Commit(doc string, before []byte) []Out {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.route(s.commit(doc, before))
}

func (s *Session) commit(doc string, before []byte) []Out {
	outs := s.catchUp(doc, before)
	if s.group != nil {
		for i := range outs {
			outs[i].To = ""
		}
	}
	return outs
}

// Unsent records that the local edits to doc since before were not
// delivered. The next frame that names doc flushes them (§Termination: a
// receiver MAY emit a delta of its own local changes when a frame arrives
// for a document it holds unflushed edits to).
func (s *Session) Unsent(doc string, before []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.unflushed[doc]; !ok {
		s.unflushed[doc] = slices.Clone(before)
	}
}

// framed lists the documents f names, sorted.
func framed(f frame.Frame) []string {
	switch f.Kind {
	case frame.KindOffer:
		return slices.Sorted(maps.Keys(f.Docs))
	case frame.KindDelta, frame.KindSnap, frame.KindNeedSnap:
		return []string{f.Doc}
	}
	return nil
}

func (s *Session) flushFor(f frame.Frame) []Out {
	var outs []Out
	for _, doc := range framed(f) {
		if before, ok := s.unflushed[doc]; ok {
			delete(s.unflushed, doc)
			outs = append(outs, s.commit(doc, before)...)
		}
	}
	return outs
}
