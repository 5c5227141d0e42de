package roster

import "fmt"

// AddFragmentIn gives the chain an inventory fragment read in the
// collection channel whose epoch-start ID is channel (§10.5). An epoch's
// inventory is published in its own channel (§8.3), so a fragment naming
// another epoch is rejected (ErrRejected, ErrNotEpoch). Otherwise it is
// AddFragment.
func (c *Chain) AddFragmentIn(f *Fragment, channel [32]byte) error {
	if f.Epoch != channel {
		return fmt.Errorf("%w: %w: fragment of epoch %x read in channel %x", ErrRejected, ErrNotEpoch, f.Epoch[:8], channel[:8])
	}
	return c.AddFragment(f)
}

// AddFragment gives the chain an inventory fragment (§10.5) without a
// channel check: one the device accepted before, e.g. from its own
// journal. Fragments read from the hub go through AddFragmentIn.
//
// Fragments are held, apart by version, until a complete assembly hashes to
// the snapshot commitment of the epoch's statement; only then is the
// inventory decoded and used (§8.3). Duplicates are harmless. A fragment
// that completes a hash-matching assembly is used whatever else is held,
// so junk versions never keep it out. Errors wrap ErrRejected (a malformed
// fragment: final) or ErrLimit (a holding limit: nothing was stored; the
// fragment should be read again later, not discarded).
func (c *Chain) AddFragment(f *Fragment) error {
	if err := c.frags.check(f); err != nil {
		return err
	}
	if c.invErrs[f.Epoch] != nil || c.frags.holds(f) {
		return nil
	}
	if want, ok := c.commitment(f.Epoch); ok {
		if b, frags, ok := c.frags.assembleWith(f, want); ok {
			c.install(f.Epoch, b, frags)
			return nil
		}
	} else if c.roster != nil {
		if _, done := c.roster.inventories[f.Epoch]; done {
			return nil
		}
	}
	return c.frags.add(f, c.now())
}

// commitment returns the snapshot commitment of epoch's statement when the
// statement is followed and its inventory is not known yet.
func (c *Chain) commitment(epoch [32]byte) ([32]byte, bool) {
	if c.roster == nil || !c.roster.IsEpochStart(epoch) {
		return [32]byte{}, false
	}
	if _, ok := c.roster.inventories[epoch]; ok {
		return [32]byte{}, false
	}
	st, _ := c.roster.Statement(epoch)
	if st.State().Snapshot == nil {
		return [32]byte{}, false
	}
	return *st.State().Snapshot, true
}

// tryAssemble assembles epoch's inventory if its statement is followed.
func (c *Chain) tryAssemble(epoch [32]byte) {
	want, ok := c.commitment(epoch)
	if !ok {
		return
	}
	if b, frags, ok := c.frags.assemble(epoch, want); ok {
		c.install(epoch, b, frags)
	}
}

// install decodes assembled bytes that match epoch's commitment.
func (c *Chain) install(epoch [32]byte, b []byte, frags []*Fragment) {
	inv, err := DecodeInventory(epoch, b)
	if err != nil { // the owner committed to bytes that are not an inventory
		c.invErrs[epoch] = err
		return
	}
	inv.fragments = frags
	c.roster.inventories[epoch] = inv
	c.snapshot = nil
}

// SetInventory gives the chain an epoch's complete inventory bytes, e.g.
// from the owner's journal (§11.6). They are checked against the epoch
// statement's snapshot commitment before use; fragments held for the epoch
// are then dropped. Errors wrap ErrHeld (the epoch is not followed yet) or
// ErrRejected.
func (c *Chain) SetInventory(epoch [32]byte, b []byte) error {
	if c.roster == nil {
		return fmt.Errorf("%w: %w: %x", ErrHeld, ErrNotEpoch, epoch)
	}
	inv, err := DecodeInventory(epoch, b)
	if err != nil {
		return err
	}
	if err := c.roster.checkInventory(inv); err != nil {
		return err
	}
	c.roster.inventories[epoch] = inv
	c.frags.drop(epoch)
	c.snapshot = nil
	return nil
}

// InventoryError reports why epoch's committed inventory could not be used
// although fragments matching its commitment were assembled: the owner
// committed to bytes that are not a canonical inventory.
func (c *Chain) InventoryError(epoch [32]byte) error { return c.invErrs[epoch] }

// FragmentBytes returns what the inventory fragments held before assembly
// are charged against Limits.MaxFragmentBytes: their bytes plus a small
// fixed cost each.
func (c *Chain) FragmentBytes() int { return c.frags.used }
