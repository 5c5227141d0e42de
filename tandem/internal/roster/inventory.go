package roster

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Inventory is a decoded snapshot inventory (§8.3) for one epoch: which
// old writes may enter it. Its bytes are canonical; Hash gives the value a
// statement commits to. An Inventory is immutable.
type Inventory struct {
	Epoch   [32]byte
	bytes   []byte
	entries []suite.InventoryEntry
	index   map[[16]byte]map[[32]byte]struct{}

	fragments []*Fragment // as assembled from the hub, if it was
}

// DecodeInventory parses canonical inventory bytes for epoch (through the
// suite's strict decoder, which rejects unsorted, repeated or truncated
// input). It does not check a commitment: Roster.WithInventory does.
func DecodeInventory(epoch [32]byte, b []byte) (*Inventory, error) {
	entries, err := suite.DecodeInventory(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	return newInventory(epoch, bytes.Clone(b), entries), nil
}

func newInventory(epoch [32]byte, b []byte, entries []suite.InventoryEntry) *Inventory {
	inv := &Inventory{Epoch: epoch, bytes: b, entries: entries,
		index: make(map[[16]byte]map[[32]byte]struct{}, len(entries))}
	for _, e := range entries {
		set := make(map[[32]byte]struct{}, len(e.Writes))
		for _, w := range e.Writes {
			set[w] = struct{}{}
		}
		inv.index[e.Record] = set
	}
	return inv
}

// Bytes returns the canonical inventory bytes.
func (inv *Inventory) Bytes() []byte { return bytes.Clone(inv.bytes) }

// Hash is snapshot = H(inventoryBytes) (§8.3).
func (inv *Inventory) Hash() [32]byte { return suite.InventoryHash(inv.bytes) }

// Entries returns the entries, sorted by record ID.
func (inv *Inventory) Entries() []suite.InventoryEntry {
	out := make([]suite.InventoryEntry, len(inv.entries))
	for i, e := range inv.entries {
		out[i] = suite.InventoryEntry{Record: e.Record, Writes: slices.Clone(e.Writes)}
	}
	return out
}

// Lists reports whether the inventory lists write under record: both IDs
// must match (§8.3).
func (inv *Inventory) Lists(record [16]byte, write [32]byte) bool {
	_, ok := inv.index[record][write]
	return ok
}

// StateView is what building an inventory needs from a device's merged
// record state (tandem/record). It is an interface so this package does
// not depend on the merge engine's types.
type StateView interface {
	// Kept calls fn once per record with the IDs of the writes its merged
	// state keeps, tombstones included (§8.3, §12.3).
	Kept(fn func(record [16]byte, writes [][32]byte))
	// Known reports whether the device holds the write, or has held it and
	// seen it replaced (§8.3 "Nothing listed is dropped unseen").
	Known(record [16]byte, write [32]byte) bool
}

// BuildInventory fixes the inventory of a new epoch (§8.3, §11.6 step 1):
// every write the merged state keeps, tombstones included, plus every entry
// of the current epoch's inventory (current may be nil in epoch 0) that the
// device neither holds nor has seen replaced. The _roster record is never
// listed: the roster is carried whole (§11.6 step 3). It returns the
// inventory (with a zero Epoch: the epoch ID does not exist until the
// statement is signed, §8.3) and its canonical bytes.
func BuildInventory(state StateView, current *Inventory) (*Inventory, error) {
	sets := map[[16]byte]map[[32]byte]struct{}{}
	add := func(rec [16]byte, w [32]byte) {
		if rec == rosterRecord {
			return
		}
		if sets[rec] == nil {
			sets[rec] = map[[32]byte]struct{}{}
		}
		sets[rec][w] = struct{}{}
	}
	if state != nil {
		state.Kept(func(rec [16]byte, ws [][32]byte) {
			for _, w := range ws {
				add(rec, w)
			}
		})
	}
	if current != nil {
		for _, e := range current.entries {
			for _, w := range e.Writes {
				if state == nil || !state.Known(e.Record, w) {
					add(e.Record, w)
				}
			}
		}
	}
	entries := make([]suite.InventoryEntry, 0, len(sets))
	for rec, set := range sets {
		ws := make([][32]byte, 0, len(set))
		for w := range set {
			ws = append(ws, w)
		}
		slices.SortFunc(ws, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		entries = append(entries, suite.InventoryEntry{Record: rec, Writes: ws})
	}
	slices.SortFunc(entries, func(a, b suite.InventoryEntry) int { return bytes.Compare(a.Record[:], b.Record[:]) })
	b, err := suite.EncodeInventory(entries)
	if err != nil {
		return nil, err
	}
	return newInventory([32]byte{}, b, entries), nil
}

// Fragments returns the fragments the inventory was assembled from, so a
// device can restore a missing one exactly as published (§10.7, §12.2).
// It is nil for an inventory not assembled from fragments.
func (inv *Inventory) Fragments() []*Fragment { return slices.Clone(inv.fragments) }

// withEpoch returns a copy of inv bound to epoch.
func (inv *Inventory) withEpoch(epoch [32]byte) *Inventory {
	c := *inv
	c.Epoch = epoch
	return &c
}
