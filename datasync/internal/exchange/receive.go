package exchange

import (
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/jsonstr"
)

// Receive handles one inbound frame from the peer and returns the answers
// the termination table allows (§Termination):
//
//	offer (reply:false)  catch-up for each stale document, then one reply:true offer
//	offer (reply:true)   catch-up for each stale document, plus one targeted
//	                     offer naming the documents this frame created
//	delta applied, already held, unreadable   nothing
//	delta held behind a missing predecessor   one targeted offer for that document
//	delta needing trimmed history             need_snap for that document
//	snap                 nothing, in every outcome
//	need_snap            one snap, only for a document already held
//	need_blob            the BlobHandler's answer (bytes, one blob_gone, or nothing)
//	blob_gone            nothing
//
// A frame whose version this session does not read is consumed with no
// answer and no report (§Frames). Every other frame that cannot be read is
// dropped with no answer and reported: a malformed frame, and one over a
// bound (§Bounds, checked before decoding), naming its document when it
// names one (never dropped in silence). The
// only other outputs are owed, not answers: the optional flush of local
// edits to a document the frame names (unsent commits, and an engine's
// pending edits, see [engine.Flusher]), and the optional single version
// offer when that flush failed and the frame's change then applied, folding
// the pending edits in (see flushEngine).
func (s *Session) Receive(wire []byte) []Out {
	f, err := frame.Parse(wire, s.enc().V)
	if err != nil {
		if !errors.Is(err, frame.ErrUnknownVersion) {
			s.reportDropped(err)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	outs := s.flushFor(f)
	flushed, failed := s.flushEngine(framed(f))
	outs = append(outs, flushed...)
	outs = append(outs, s.answer(f)...)
	if f.Kind == frame.KindDelta || f.Kind == frame.KindSnap {
		outs = append(outs, s.offerAfterFold(f.Doc, failed)...)
	}
	return s.route(outs)
}

func (s *Session) answer(f frame.Frame) []Out {
	switch f.Kind {
	case frame.KindOffer:
		return s.answerOffer(f)
	case frame.KindDelta:
		return s.answerDelta(f)
	case frame.KindSnap:
		s.importSnap(f)
		return nil
	case frame.KindNeedSnap:
		if !s.space.Engine.Has(f.Doc) {
			return nil
		}
		return s.snapshot(f.Doc)
	case frame.KindNeedBlob:
		// Attachment carriage is 1:1 and only toward a peer with entry 3:
		// the bytes must never reach a peer that would show them as a file.
		if s.blobs == nil || s.group != nil || !s.caps.Has(frame.EntryMedia) {
			return nil
		}
		var outs []Out
		for _, g := range s.blobs.NeedBlob(string(s.peer), f.Hash) {
			outs = append(outs, s.to(g))
		}
		return outs
	case frame.KindBlobGone:
		if s.blobs != nil && s.group == nil {
			s.blobs.BlobGone(string(s.peer), f.Hash)
		}
	}
	return nil
}

func (s *Session) answerOffer(f frame.Frame) []Out {
	eng := s.space.Engine
	var outs []Out
	var created []string
	for _, doc := range slices.Sorted(maps.Keys(f.Docs)) {
		if !eng.Has(doc) {
			if s.create(doc) {
				created = append(created, doc)
			}
			continue
		}
		outs = append(outs, s.catchUp(doc, f.Docs[doc])...)
	}
	if !f.Partial {
		// Absent from a complete offer: the peer has never seen it.
		for _, doc := range eng.Docs() {
			if _, named := f.Docs[doc]; !named {
				outs = append(outs, s.catchUp(doc, nil)...)
			}
		}
	}
	if !f.Reply {
		// Sent even when it names nothing: docs/decisions/datasync-counter-offer.md.
		return append(outs, s.offer(eng.Docs(), true, false)...)
	}
	if len(created) > 0 {
		outs = append(outs, s.offer(created, true, true)...)
	}
	return outs
}

// create makes an empty document a peer named, within the ceiling.
func (s *Session) create(doc string) bool {
	if !s.space.admit(doc) {
		s.report(doc, ErrCeiling)
		return false
	}
	if err := s.space.Engine.Create(doc); err != nil && !errors.Is(err, engine.ErrExists) {
		s.space.release(doc)
		s.report(doc, errors.Join(ErrEngine, err))
		return false
	}
	return true
}

func (s *Session) answerDelta(f frame.Frame) []Out {
	eng := s.space.Engine
	had := eng.Has(f.Doc)
	if !had && !s.space.admit(f.Doc) {
		s.report(f.Doc, ErrCeiling)
		return nil
	}
	out, ok, err := s.importGuarded(f.Doc, f.Blob, func() (engine.Outcome, error) { return eng.Import(f.Doc, f.Blob) })
	if !had && !eng.Has(f.Doc) {
		s.space.release(f.Doc)
	}
	if !ok {
		return nil
	}
	switch out {
	case engine.Applied:
		s.applied.Add(1)
	case engine.Unreadable:
		s.report(f.Doc, errors.Join(ErrUnreadable, err))
	case engine.MissingPredecessor:
		return s.offer([]string{f.Doc}, true, true)
	case engine.NeedsTrimmedHistory:
		return []Out{s.to(frame.Frame{Kind: frame.KindNeedSnap, Doc: f.Doc})}
	default:
		if err != nil {
			s.report(f.Doc, errors.Join(ErrEngine, err))
		}
	}
	return nil
}

func (s *Session) importSnap(f frame.Frame) {
	eng := s.space.Engine
	had := eng.Has(f.Doc)
	if !had && !s.space.admit(f.Doc) {
		s.report(f.Doc, ErrCeiling)
		return
	}
	out, ok, err := s.importGuarded(f.Doc, f.Blob, func() (engine.Outcome, error) { return eng.ImportSnapshot(f.Doc, f.Blob) })
	if !had && !eng.Has(f.Doc) {
		s.space.release(f.Doc)
	}
	if !ok {
		return
	}
	switch {
	case out == engine.Applied:
		s.applied.Add(1)
	case out == engine.Unreadable:
		s.report(f.Doc, errors.Join(ErrUnreadable, err))
	case out == engine.Refused:
		s.report(f.Doc, errors.Join(ErrRefused, err))
	case err != nil:
		s.report(f.Doc, errors.Join(ErrEngine, err))
	}
}

// ImportSnapshot merges a whole document that arrived over the media path
// (§Documents too large for a frame). Like snap, it is answered with
// nothing: what it returns is only what a frame naming doc may owe (the
// flush of pending local edits, or the version offer after a failed one).
func (s *Session) ImportSnapshot(doc string, blob []byte) []Out {
	s.mu.Lock()
	defer s.mu.Unlock()
	outs, failed := s.flushEngine([]string{doc})
	s.importSnap(frame.Frame{Kind: frame.KindSnap, Doc: doc, Blob: blob})
	return s.route(append(outs, s.offerAfterFold(doc, failed)...))
}

// catchUp is what a peer at version pv lacks of doc: a delta, else a snap,
// else the media path, else a report.
func (s *Session) catchUp(doc string, pv []byte) []Out {
	eng := s.space.Engine
	behind, err := eng.Behind(doc, pv)
	if err != nil {
		s.report(doc, errors.Join(ErrEngine, err))
		return nil
	}
	if !behind {
		return nil
	}
	ch, err := eng.Changes(doc, pv)
	if err == nil && s.fits(frame.KindDelta, doc, len(ch)) {
		return []Out{s.to(frame.Frame{Kind: frame.KindDelta, Doc: doc, Blob: ch})}
	}
	if err != nil && !errors.Is(err, engine.ErrTrimmed) {
		s.report(doc, errors.Join(ErrEngine, err))
		return nil
	}
	return s.snapshot(doc)
}

// fits reports whether a delta or snap of doc carrying n document bytes
// is within both bounds of a frame: the 32 KiB budget and, with its
// (escaped) name, frame.MaxFrameBytes. One that is not takes the next rung.
func (s *Session) fits(k frame.Kind, doc string, n int) bool {
	if n > frame.MaxDocumentBytes {
		return false
	}
	fixed := len(frame.Prefix) + len(`{"v":,"k":"","doc":,"blob":""}`) + len(strconv.FormatUint(s.enc().V, 10)) + len(k)
	return fixed+jsonstr.Len(doc)+base64.StdEncoding.EncodedLen(n) <= frame.MaxFrameBytes
}

// snapshot sends doc whole: in a snap when it fits the budget, over the
// media path when the peer has entry 3 on a 1:1 session and it fits one
// record, and otherwise reports that it cannot replicate.
func (s *Session) snapshot(doc string) []Out {
	snap, err := s.space.Engine.Snapshot(doc)
	if err != nil {
		s.report(doc, errors.Join(ErrEngine, err))
		return nil
	}
	if s.fits(frame.KindSnap, doc, len(snap)) {
		return []Out{s.to(frame.Frame{Kind: frame.KindSnap, Doc: doc, Blob: snap})}
	}
	if s.group == nil && s.caps.Has(frame.EntryMedia) && len(snap) <= s.maxRecord {
		return []Out{{To: s.peer, Snapshot: &SnapshotTransfer{Doc: doc, Blob: snap}}}
	}
	s.report(doc, ErrTooLarge)
	return nil
}
