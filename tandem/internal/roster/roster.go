package roster

import (
	"fmt"
)

// Roster is the followed roster of a collection: the chain of valid
// statements from the genesis to the current head (§9.4), with each
// statement's epoch and the verified inventories of its epochs. A Roster is
// immutable; Chain.Roster returns a new one after every change.
type Roster struct {
	collection  [16]byte
	owner       [32]byte
	path        []*Statement
	index       map[[32]byte]int // statement ID → position in path
	epochStart  []int            // position → position of its epoch's starting statement
	commits     map[[32]byte]bool
	inventories map[[32]byte]*Inventory // epoch ID → verified inventory
}

// NewRoster starts a roster from a genesis statement: it checks it with
// ValidateGenesis and returns the roster whose only statement it is. The
// collection ID is the first 16 bytes of the genesis ID (§7.1).
func NewRoster(genesis *Statement) (*Roster, error) {
	if err := ValidateGenesis(genesis); err != nil {
		return nil, err
	}
	r := &Roster{
		collection:  CollectionID(genesis.ID()),
		owner:       genesis.Body().Author,
		index:       map[[32]byte]int{},
		commits:     map[[32]byte]bool{},
		inventories: map[[32]byte]*Inventory{},
	}
	r.push(genesis)
	return r, nil
}

// CollectionID is the collection ID a genesis ID gives: its first 16 bytes
// (§7.1).
func CollectionID(genesisID [32]byte) [16]byte { return [16]byte(genesisID[:16]) }

// Extend returns a new roster with next appended, after checking it with
// Validate. r is not modified.
func (r *Roster) Extend(next *Statement) (*Roster, error) {
	if err := r.Validate(next); err != nil {
		return nil, err
	}
	c := r.clone()
	c.push(next)
	return c, nil
}

// push appends a statement already validated; only for rosters being built.
func (r *Roster) push(st *Statement) {
	i := len(r.path)
	start := i
	if i > 0 && st.State().Key.Commit == r.path[i-1].State().Key.Commit {
		start = r.epochStart[i-1]
	}
	r.path = append(r.path, st)
	r.index[st.ID()] = i
	r.epochStart = append(r.epochStart, start)
	r.commits[st.State().Key.Commit] = true
}

func (r *Roster) clone() *Roster {
	c := *r
	c.path = append([]*Statement(nil), r.path...)
	c.epochStart = append([]int(nil), r.epochStart...)
	c.index = make(map[[32]byte]int, len(r.index)+1)
	for k, v := range r.index {
		c.index[k] = v
	}
	c.commits = make(map[[32]byte]bool, len(r.commits)+1)
	for k, v := range r.commits {
		c.commits[k] = v
	}
	c.inventories = make(map[[32]byte]*Inventory, len(r.inventories))
	for k, v := range r.inventories {
		c.inventories[k] = v
	}
	return &c
}

// Collection is the collection ID (§7.1).
func (r *Roster) Collection() [16]byte { return r.collection }

// Owner is the user ID of the owner, fixed by the genesis (§8.1).
func (r *Roster) Owner() [32]byte { return r.owner }

// Genesis is the genesis statement.
func (r *Roster) Genesis() *Statement { return r.path[0] }

// Head is the last statement of the followed roster.
func (r *Roster) Head() *Statement { return r.path[len(r.path)-1] }

// State is the head's state: the current members, roles and keys.
func (r *Roster) State() *State { return r.Head().State() }

// Len is the number of statements in the followed roster.
func (r *Roster) Len() int { return len(r.path) }

// Statements returns the followed statements from the genesis to the head.
func (r *Roster) Statements() []*Statement { return append([]*Statement(nil), r.path...) }

// Epoch is the current epoch's ID: the full ID of the statement that
// started it (§7.1), the genesis ID for epoch 0.
func (r *Roster) Epoch() [32]byte { return r.path[r.epochStart[len(r.path)-1]].ID() }

// Contains reports whether the statement id is in the followed roster.
func (r *Roster) Contains(id [32]byte) bool { _, ok := r.index[id]; return ok }

// SourceEpoch is the source epoch of statement id (§8.3): the first
// statement, going back from id, that carries the same epoch commitment.
// It reports false if id is not in the followed roster.
func (r *Roster) SourceEpoch(id [32]byte) ([32]byte, bool) {
	i, ok := r.index[id]
	if !ok {
		return [32]byte{}, false
	}
	return r.path[r.epochStart[i]].ID(), true
}

// IsEpochStart reports whether id starts an epoch of the followed roster
// (the genesis starts epoch 0).
func (r *Roster) IsEpochStart(id [32]byte) bool {
	i, ok := r.index[id]
	return ok && r.epochStart[i] == i
}

// IsAncestor reports whether a comes strictly before b in the followed
// roster.
func (r *Roster) IsAncestor(a, b [32]byte) bool {
	i, ok1 := r.index[a]
	j, ok2 := r.index[b]
	return ok1 && ok2 && i < j
}

// Statement returns the followed statement with ID id.
func (r *Roster) Statement(id [32]byte) (*Statement, bool) {
	i, ok := r.index[id]
	if !ok {
		return nil, false
	}
	return r.path[i], true
}

// Inventory returns the verified snapshot inventory of epoch id, if it has
// been assembled and checked against the epoch's snapshot commitment.
func (r *Roster) Inventory(epoch [32]byte) (*Inventory, bool) {
	inv, ok := r.inventories[epoch]
	return inv, ok
}

// WithInventory returns a roster that also knows inv, after checking that
// inv's epoch starts an epoch of r and that inv's bytes hash to that
// statement's snapshot commitment (§8.3). r is not modified.
func (r *Roster) WithInventory(inv *Inventory) (*Roster, error) {
	if err := r.checkInventory(inv); err != nil {
		return nil, err
	}
	c := r.clone()
	c.inventories[inv.Epoch] = inv
	return c, nil
}

func (r *Roster) checkInventory(inv *Inventory) error {
	st, ok := r.Statement(inv.Epoch)
	if !ok || !r.IsEpochStart(inv.Epoch) {
		return fmt.Errorf("%w: %w: epoch %x", ErrHeld, ErrNotEpoch, inv.Epoch)
	}
	if st.State().Snapshot == nil || inv.Hash() != *st.State().Snapshot {
		return fmt.Errorf("%w: %w: epoch %x", ErrRejected, ErrInventoryHash, inv.Epoch)
	}
	return nil
}
