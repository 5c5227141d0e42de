package roster

import (
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// CheckWrite judges a data write found in the collection channel whose
// epoch-start ID is channel (§8.3). It returns the write ID and nil if the
// write is eligible there. Otherwise the error wraps exactly one of:
//
//   - ErrHeld: the named statement, the channel's statement or the channel's
//     inventory is not known yet; keep the write and ask again later. The
//     error is a *HoldError naming what it waits for (see Pending).
//   - ErrRejected: a bad signature, a malformed write, a zero ref (only a
//     genesis has none), an author the named statement does not list as
//     owner or writer, a reader, _meta by anyone but the owner, a statement
//     outside the followed roster, or a write neither of this epoch nor
//     listed in its inventory. Final.
//   - ErrDead: the collection is dead; processing stops (§9.4).
//
// The write-level checks beyond the signature (op, element and value
// consistency, vector limits, reserved field names) are tandem/record's
// Validator; CheckWrite answers who may write what, where. A caller that
// runs both should use Validator.Verify and CheckVerified instead, which
// verify the signature once.
//
// Eligible in channel E iff the source epoch of the statement the write
// names is E, or the write ID and record ID are both listed in the
// inventory committed by E and the named statement is an ancestor of E.
// Matching a key or counter alone is never sufficient (§8.3).
func (c *Chain) CheckWrite(w *suite.WriteBody, sig []byte, channel [32]byte) ([32]byte, error) {
	id, err := suite.VerifyWrite(w, sig)
	if err != nil {
		return id, fmt.Errorf("%w: %w: %w", ErrRejected, ErrSignature, err)
	}
	return id, c.judgeWrite(w, id, channel)
}

// CheckVerified judges, as CheckWrite does, a data write that a
// record.Validator has already verified (record.Validator.Verify: shape,
// encodability and the strict signature check of §5.5), and returns it as
// a record.Write whose e(x) is the key counter of the source epoch of the
// statement it names (§8.3, tandem-gaps.md "Supersession"), ready for
// record.State.Add. It does not verify the signature again: the
// *record.Verified is the proof that it was checked.
//
// x must come from Validator.Verify: nil or a zero record.Verified is
// refused with ErrRejected and record.ErrUnverified, so no write reaches a
// State through here unverified. The other verdicts are CheckWrite's:
// ErrHeld, ErrRejected or ErrDead. On any error the Write is nil.
func (c *Chain) CheckVerified(x *record.Verified, channel [32]byte) (*record.Write, error) {
	if !x.Valid() {
		return nil, fmt.Errorf("%w: %w", ErrRejected, record.ErrUnverified)
	}
	w := x.Body()
	if err := c.judgeWrite(&w, x.ID(), channel); err != nil {
		return nil, err
	}
	n, ok := c.roster.Counter(w.Ref)
	if !ok { // cannot happen: judgeWrite found w.Ref in the followed roster
		return nil, fmt.Errorf("%w: %w: %x", ErrRejected, ErrNotFollowed, w.Ref)
	}
	return x.InEpoch(n)
}

// judgeWrite applies every check of CheckWrite but the signature to a
// write whose signature was verified and whose write ID is id.
func (c *Chain) judgeWrite(w *suite.WriteBody, id, channel [32]byte) error {
	if err := c.checkWriteShape(w); err != nil {
		return err
	}
	if c.dead != nil {
		return ErrDead
	}
	if c.roster == nil {
		if c.genesis == nil {
			return held(w.Ref, ErrUnknownStatement, "(no genesis yet)")
		}
		return fmt.Errorf("%w: %w: invalid genesis", ErrRejected, ErrNotFollowed)
	}
	if err := c.followed(w.Ref, ErrUnknownStatement); err != nil {
		return err
	}
	if err := c.authorized(w); err != nil {
		return err
	}
	if err := c.followed(channel, ErrNotEpoch); err != nil {
		return err
	}
	return c.eligibleIn(w, id, channel)
}

// checkWriteShape rejects what can be judged from the write alone.
func (c *Chain) checkWriteShape(w *suite.WriteBody) error {
	switch {
	case w.Scope != c.collection:
		return fmt.Errorf("%w: %w: scope %x", ErrRejected, ErrScope, w.Scope)
	case w.Record == rosterRecord:
		return fmt.Errorf("%w: %w: _roster writes are statements (§9.4)", ErrRejected, ErrRecord)
	case w.Record == metaRecord && w.Op == suite.OpDelete:
		return fmt.Errorf("%w: %w", ErrRejected, ErrNamedDelete)
	case w.Ref == [32]byte{}: // only a genesis has no ref (§7.1, §9.1)
		return fmt.Errorf("%w: %w: a data write with a zero ref", ErrRejected, ErrRef)
	}
	return nil
}

// followed classifies a statement ID a write depends on: nil if it is in
// the followed roster; ErrHeld if it may still join it (unknown, waiting
// for its parent, or a draft not yet overtaken); ErrRejected if it never
// can (an invalid statement, one built on it, or a draft whose parent
// already has an announced successor).
func (c *Chain) followed(id [32]byte, missing error) error {
	if c.roster.Contains(id) {
		return nil
	}
	n, ok := c.nodes[id]
	if !ok {
		return held(id, missing, "")
	}
	if !n.counting {
		if len(c.children[n.st.Parent()]) > 0 {
			return fmt.Errorf("%w: %w: draft %x was overtaken", ErrRejected, ErrNotFollowed, id)
		}
		return held(id, missing, "(a draft)")
	}
	if !c.connected(id, map[[32]byte]bool{}) {
		return held(id, missing, "(waits for its parent)")
	}
	return fmt.Errorf("%w: %w: %x", ErrRejected, ErrNotFollowed, id)
}

// authorized: the named statement lists the author as owner or writer, and
// only the owner writes _meta (§7.3, §8.3). A statement with deleted set
// allows nothing: it is the collection's last word (§11.9; see
// docs/decisions/tandem-roster-chain.md).
func (c *Chain) authorized(w *suite.WriteBody) error {
	st, _ := c.roster.Statement(w.Ref)
	m, ok := st.State().Member(w.Author)
	switch {
	case st.State().Deleted: // nothing is written under a deletion (§11.9)
		return fmt.Errorf("%w: %w: statement %x", ErrRejected, ErrAfterDeleted, w.Ref)
	case !ok:
		return fmt.Errorf("%w: %w: %x", ErrRejected, ErrNotMember, w.Author)
	case m.Role == RoleReader:
		return fmt.Errorf("%w: %w: %x", ErrRejected, ErrReader, w.Author)
	case !m.Role.canWrite():
		return fmt.Errorf("%w: %w: role %q", ErrRejected, ErrNotMember, m.Role)
	case w.Record == metaRecord && m.Role != RoleOwner:
		return fmt.Errorf("%w: %w: %x", ErrRejected, ErrMetaNotOwner, w.Author)
	}
	return nil
}

// eligibleIn applies the two cases of §8.3 for channel E.
func (c *Chain) eligibleIn(w *suite.WriteBody, id, channel [32]byte) error {
	if !c.roster.IsEpochStart(channel) {
		return fmt.Errorf("%w: %w: %x", ErrRejected, ErrNotEpoch, channel)
	}
	source, _ := c.roster.SourceEpoch(w.Ref)
	if source == channel {
		return nil
	}
	if !c.roster.IsAncestor(w.Ref, channel) {
		return fmt.Errorf("%w: %w: statement %x is not an ancestor of epoch %x", ErrRejected, ErrNotEligible, w.Ref, channel)
	}
	inv, ok := c.roster.inventories[channel]
	if !ok {
		return held(channel, ErrNoInventory, "")
	}
	if !inv.Lists(w.Record, id) {
		return fmt.Errorf("%w: %w: write %x in record %x", ErrRejected, ErrNotEligible, id, w.Record)
	}
	return nil
}

// Resolved reports whether a write held on need (for reason, from its
// HoldError) can now be judged: the statement is followed or can never be,
// or, for ErrNoInventory, the epoch's inventory is assembled. A nil reason
// is treated as a statement dependency.
func (c *Chain) Resolved(need [32]byte, reason error) bool {
	if c.dead != nil {
		return true
	}
	if c.roster == nil {
		return c.genesis != nil // an invalid genesis rejects everything
	}
	if errors.Is(reason, ErrNoInventory) {
		_, ok := c.roster.inventories[need]
		return ok
	}
	return !errors.Is(c.followed(need, ErrUnknownStatement), ErrHeld)
}

// Accepts judges a write a state already holds (its signature was checked
// when it entered) as CheckWrite would in the channel of the roster's
// current epoch: nil if the group accepts it there today, ErrHeld while
// that epoch's inventory or a statement is missing, ErrRejected or ErrDead
// otherwise. It is the rule of what a device's state may hold after an
// epoch move (§8.3, §11.6): the current epoch's writes and the old writes
// its inventory lists.
func (c *Chain) Accepts(w *record.Write) error {
	if c.roster == nil {
		return held([32]byte{}, ErrUnknownStatement, "(no roster yet)")
	}
	b := w.Body()
	return c.judgeWrite(&b, w.ID(), c.roster.Epoch())
}
