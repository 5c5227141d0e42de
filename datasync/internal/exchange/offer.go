package exchange

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/jsonstr"
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
// Frames are cut by their encoded size, measured exactly as frame.Marshal
// writes them (escaped names, base64 versions), so none exceeds
// frame.MaxFrameBytes or frame.MaxDocumentBytes of versions, whatever the
// names or the engine's versions weigh. A document whose entry alone
// cannot fit a frame is reported (ErrOfferTooLarge) and left out, and the
// offer is then partial. docs/decisions/datasync-offer-split.md.
func (s *Session) offer(docs []string, reply, partial bool) []Out {
	base := offerBase(s.enc().V, reply)
	var frames []frame.Frame
	cur := frame.Frame{Kind: frame.KindOffer, Reply: reply, Docs: map[string][]byte{}}
	verBytes, wire := 0, base
	for _, doc := range slices.Sorted(slices.Values(docs)) {
		v, err := s.space.Engine.Version(doc)
		if err != nil {
			s.report(doc, errors.Join(ErrEngine, err))
			partial = true
			continue
		}
		if err := frame.CheckDoc(doc); err != nil {
			s.report(doc, err) // a name no frame can carry (empty, not UTF-8)
			partial = true
			continue
		}
		entry := offerEntry(doc, v)
		if len(v) > frame.MaxDocumentBytes || base+entry > frame.MaxFrameBytes {
			s.report(doc, fmt.Errorf("%w: %d-byte version, %d bytes in the offer", ErrOfferTooLarge, len(v), entry))
			partial = true
			continue
		}
		sep := min(len(cur.Docs), 1) // the comma before every entry but the first
		if len(cur.Docs) == OfferDocs || verBytes+len(v) > frame.MaxDocumentBytes || wire+sep+entry > frame.MaxFrameBytes {
			frames = append(frames, cur)
			cur = frame.Frame{Kind: frame.KindOffer, Reply: reply, Docs: map[string][]byte{}}
			verBytes, wire, sep = 0, base, 0
		}
		cur.Docs[doc] = v
		verBytes += len(v)
		wire += sep + entry
	}
	frames = append(frames, cur)
	outs := make([]Out, len(frames))
	for i, f := range frames {
		f.Partial = partial || len(frames) > 1
		outs[i] = s.to(f)
	}
	return outs
}

// offerBase is the encoded length of an offer frame naming no document,
// with partial written as false (the longer spelling).
func offerBase(v uint64, reply bool) int {
	w, _ := frame.Marshal(frame.Frame{V: v, Kind: frame.KindOffer, Reply: reply, Docs: map[string][]byte{}})
	return len(w)
}

// offerEntry is the encoded length of one docs entry: "name":"base64".
func offerEntry(doc string, v []byte) int {
	return jsonstr.Len(doc) + len(`:""`) + base64.StdEncoding.EncodedLen(len(v))
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
