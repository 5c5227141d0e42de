package roster

import "fmt"

// AddFragment gives the chain an inventory fragment read from its epoch's
// channel (§10.5). Fragments are held, apart by version, until a complete
// assembly hashes to the snapshot commitment of the epoch's statement; only
// then is the inventory decoded and used (§8.3). Duplicates are harmless.
// Errors wrap ErrRejected (a malformed fragment) or ErrLimit (nothing held).
func (c *Chain) AddFragment(f *Fragment) error {
	if c.roster != nil {
		if _, ok := c.roster.inventories[f.Epoch]; ok {
			return nil
		}
	}
	if err := c.frags.add(f, c.now()); err != nil {
		return err
	}
	c.tryAssemble(f.Epoch)
	return nil
}

// tryAssemble assembles epoch's inventory if its statement is followed.
func (c *Chain) tryAssemble(epoch [32]byte) {
	if c.roster == nil || !c.roster.IsEpochStart(epoch) {
		return
	}
	st, _ := c.roster.Statement(epoch)
	if st.State().Snapshot == nil {
		return
	}
	if _, ok := c.roster.inventories[epoch]; ok {
		return
	}
	b, frags, ok := c.frags.assemble(epoch, *st.State().Snapshot)
	if !ok {
		return
	}
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
// statement's snapshot commitment before use. Errors wrap ErrHeld (the
// epoch is not followed yet) or ErrRejected.
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
	c.snapshot = nil
	return nil
}

// InventoryError reports why epoch's committed inventory could not be used
// although fragments matching its commitment were assembled: the owner
// committed to bytes that are not a canonical inventory.
func (c *Chain) InventoryError(epoch [32]byte) error { return c.invErrs[epoch] }
