package record

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Writer is what a device needs to sign writes in one scope.
type Writer struct {
	Key    ed25519.PrivateKey // the user's signing key UKs; its public half is the author
	Device suite.DeviceID     // this installation (§5.3)
	Clock  *Clock             // this device's HLC (§9.1)
	Ref    [32]byte           // the roster statement written under (§8.3); zero in home
	Epoch  uint64             // e of Ref's epoch: the current epoch's counter (0 in home)
}

// Change is one edit an app asks for: an assign of Value to Field, an add or
// remove of Element in Field's set, or a delete of Record (Field, Element and
// Value empty).
type Change struct {
	Record  [16]byte
	Field   string
	Op      suite.Op
	Element []byte
	Value   []byte
}

// Build signs the write for c on top of s (§9.2 "Building a write"): its
// context is the join of reach(k) over the kept writes k of c's register in
// the current epoch, and its base the join of k.base over all of them plus
// reach(k) over those of earlier epochs, so it supersedes everything the
// device has seen of that register. It does not add the write to s.
//
// When those vectors would exceed 1,024 entries, Build writes with what
// fits: it covers kept writes one at a time, smallest vectors first and then
// by write ID, skipping any that would not fit, and reports unsettleable =
// true. The field then stays in that state until the record is deleted and
// created again (§9.2; docs/decisions/tandem-record-unsettleable.md). Kept
// writes from a later epoch than w.Epoch also cannot be covered and make
// the result unsettleable.
//
// Build fails with ErrWriter for a Writer without key or clock, ErrDeleted
// for an edit of a deleted record, ErrClock when the clock is exhausted, and
// with Validate's errors for a change no valid write can carry.
func (s *State) Build(w *Writer, c Change) (_ *Write, unsettleable bool, err error) {
	body, unsettleable, err := s.prepare(w, c)
	if err != nil {
		return nil, false, err
	}
	out, err := s.v.sign(w.Key, &body, w.Epoch)
	return out, unsettleable, err
}

// prepare computes the body Build signs, taking the next HLC from w.Clock.
func (s *State) prepare(w *Writer, c Change) (_ suite.WriteBody, unsettleable bool, err error) {
	if len(w.Key) != ed25519.PrivateKeySize || w.Clock == nil {
		return suite.WriteBody{}, false, ErrWriter
	}
	if s.Deleted(c.Record) && c.Op != suite.OpDelete {
		return suite.WriteBody{}, false, ErrDeleted
	}
	if r := s.records[c.Record]; r != nil && r.named() && c.Op == suite.OpDelete {
		return suite.WriteBody{}, false, fmt.Errorf("%w: the record's _name shows it is named (§7.3)", ErrNamedDelete)
	}
	body := suite.WriteBody{
		Scope: s.v.rules.Scope, Record: c.Record, Field: c.Field, Op: c.Op,
		Element: c.Element, Value: c.Value, Ref: w.Ref,
	}
	copy(body.Author[:], w.Key.Public().(ed25519.PublicKey))
	if err := s.v.checkShape(&body); err != nil {
		return suite.WriteBody{}, false, err
	}
	var kept []*Write
	if reg := s.registerOf(&Write{body: body}); reg != nil {
		kept = reg.kept
	}
	body.Context, body.Base, unsettleable = cover(kept, w.Epoch)
	hlc, err := w.Clock.Next()
	if err != nil {
		return suite.WriteBody{}, false, err
	}
	body.Dot = suite.Dot{Device: w.Device, HLC: hlc}
	return body, unsettleable, nil
}

// Unsettleable reports whether a write built now for the register of c (its
// record, field, and for add/remove its element) in epoch could not cover
// every kept write of that register (§9.2: "the app is told when a field is
// in that state").
func (s *State) Unsettleable(c Change, epoch uint64) bool {
	reg := s.registerOf(&Write{body: suite.WriteBody{Record: c.Record, Field: c.Field, Op: c.Op, Element: c.Element}})
	if reg == nil {
		return false
	}
	_, _, u := cover(reg.kept, epoch)
	return u
}

// cover computes the context and base of a write in epoch that covers as
// many of kept as fit in MaxVVEntries entries each, deterministically.
func cover(kept []*Write, epoch uint64) (ctx, base suite.VV, unsettleable bool) {
	type cand struct {
		w    *Write
		c, b suite.VV // what covering w adds to context and base
	}
	cands := make([]cand, 0, len(kept))
	for _, k := range kept {
		switch {
		case k.epoch == epoch:
			cands = append(cands, cand{k, reach(k), k.body.Base})
		case k.epoch < epoch:
			cands = append(cands, cand{k, nil, vvJoin(reach(k), k.body.Base)})
		default:
			unsettleable = true // K(w, f) is nothing for f > e(w)
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(len(a.c)+len(a.b), len(b.c)+len(b.b)), bytes.Compare(a.w.id[:], b.w.id[:]))
	})
	for _, c := range cands {
		nc, nb := vvJoin(ctx, c.c), vvJoin(base, c.b)
		if len(nc) > suite.MaxVVEntries || len(nb) > suite.MaxVVEntries {
			unsettleable = true
			continue
		}
		ctx, base = nc, nb
	}
	return ctx, base, unsettleable
}

// Resign signs old again into a later epoch (§11.6 "Signing again"): the
// same record, field, op, element, value and dot, an empty context, base =
// old.base ⊔ reach(old), and w.Ref as ref. Ed25519 is deterministic, so
// every device of the author that signs the same write again produces the
// same bytes and write ID. Only w.Key, w.Ref and w.Epoch are used.
//
// It fails with ErrWriter without a valid key, ErrNotAuthor when w.Key is
// not old's author, ErrEpoch when w.Epoch is not later than old's epoch, and
// ErrVectorLimit when the base would exceed 1,024 entries: the work is then
// kept for the app instead of published as an invalid write.
func (v *Validator) Resign(w *Writer, old *Write) (*Write, error) {
	body, err := resignBody(w, old)
	if err != nil {
		return nil, err
	}
	return v.sign(w.Key, &body, w.Epoch)
}

// resignBody is the body Resign signs.
func resignBody(w *Writer, old *Write) (suite.WriteBody, error) {
	if len(w.Key) != ed25519.PrivateKeySize {
		return suite.WriteBody{}, ErrWriter
	}
	pub := w.Key.Public().(ed25519.PublicKey)
	if !bytes.Equal(pub, old.body.Author[:]) {
		return suite.WriteBody{}, ErrNotAuthor
	}
	if w.Epoch <= old.epoch {
		return suite.WriteBody{}, fmt.Errorf("%w: epoch %d into %d", ErrEpoch, old.epoch, w.Epoch)
	}
	body := cloneBody(&old.body)
	body.Context = suite.VV{}
	body.Base = vvJoin(old.body.Base, reach(old))
	body.Ref = w.Ref
	if len(body.Base) > suite.MaxVVEntries {
		return suite.WriteBody{}, ErrVectorLimit
	}
	return body, nil
}

// sign signs body with suite.SignWrite after the shape checks of Validate.
// The signature is the signer's own, so it is not verified again.
func (v *Validator) sign(key ed25519.PrivateKey, body *suite.WriteBody, epoch uint64) (*Write, error) {
	if err := v.checkShape(body); err != nil {
		return nil, err
	}
	_, id, sig, err := suite.SignWrite(key, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &Write{body: cloneBody(body), id: id, sig: sig, epoch: epoch, ok: true}, nil
}

// ResignCandidates returns the kept writes by author from epochs before
// epoch that listed (the new epoch's inventory, §8.3) does not list, by
// record and write ID: what a device signs again with Resign when it moves
// to a new epoch (§11.6: "any write of its own user that the inventory
// doesn't list and the new state doesn't supersede"). A kept write is by
// definition not superseded; tombstones are included. listed may be nil.
func (s *State) ResignCandidates(author [32]byte, epoch uint64, listed func(record [16]byte, id [32]byte) bool) []*Write {
	var out []*Write
	for id := range s.Records() {
		for _, w := range s.Writes(id) {
			if w.body.Author == author && w.epoch < epoch && (listed == nil || !listed(w.body.Record, w.id)) {
				out = append(out, w)
			}
		}
	}
	return out
}
