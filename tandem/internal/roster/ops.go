package roster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Signer is what an owner operation signs with. The operations are pure:
// they sign and return, and publish nothing (§11.6 steps 3–5 are the
// caller's).
type Signer struct {
	// Key is the owner's user signing key UKs (§5.3).
	Key ed25519.PrivateKey
	// Dot is the new statement's dot: the device ID and its next HLC (§9.1).
	Dot suite.Dot
	// Rand supplies epoch keys and the genesis nonce; nil means crypto/rand.
	Rand io.Reader
}

func (s Signer) random(n int) ([]byte, error) {
	r := s.Rand
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("tandem/roster: randomness: %w", err)
	}
	return b, nil
}

func (s Signer) uid() [32]byte {
	var u [32]byte
	if pub, ok := s.Key.Public().(ed25519.PublicKey); ok {
		copy(u[:], pub)
	}
	return u
}

// Change is the result of an owner operation: the signed statement and,
// when it starts an epoch (§8.2, §11.6), the fresh epoch key, its
// commitment and the fixed snapshot inventory (bound to the new epoch ID,
// which is the statement's ID).
type Change struct {
	Statement   *Statement
	StartsEpoch bool
	Key         [32]byte
	Commit      [32]byte
	Inventory   *Inventory
}

// Genesis creates a collection (§7.1): a genesis statement naming the
// signer as owner (with agreement key uka and display name), a commitment
// to a random K(c,0), 16 random bytes, zero scope and zero ref. The
// collection ID is CollectionID(change.Statement.ID) and epoch 0's ID is
// the statement ID.
func Genesis(s Signer, uka [32]byte, name string) (*Change, error) {
	key, err := s.random(32)
	if err != nil {
		return nil, err
	}
	nonce, err := s.random(16)
	if err != nil {
		return nil, err
	}
	ch := &Change{StartsEpoch: true, Key: [32]byte(key)}
	ch.Commit = suite.Commit(ch.Key)
	state := &State{
		Key:     Key{Commit: ch.Commit},
		Members: []Member{{UID: s.uid(), Role: RoleOwner, UKA: uka, Name: name}},
		Nonce:   (*[16]byte)(nonce),
	}
	ch.Statement, err = sign(s, [16]byte{}, [32]byte{}, state)
	if err != nil {
		return nil, err
	}
	if err := ValidateGenesis(ch.Statement); err != nil {
		return nil, err
	}
	return ch, nil
}

// AddMember admits m with a same-epoch statement (§8.2, §11.3). m.Role
// must be writer or reader and m.UID not listed.
func AddMember(r *Roster, s Signer, m Member) (*Change, error) {
	next, err := r.begin(s)
	if err != nil {
		return nil, err
	}
	if _, ok := next.Member(m.UID); ok || (m.Role != RoleWriter && m.Role != RoleReader) {
		return nil, fmt.Errorf("%w: cannot add %x as %q", ErrStateMismatch, m.UID, m.Role)
	}
	next.Members = append(next.Members, m)
	return r.finish(s, next, nil)
}

// ChangeRole switches a member between writer and reader (§8.2). A
// promotion is a same-epoch statement; a demotion starts an epoch, with an
// inventory built from state and the current epoch's inventory
// (BuildInventory).
func ChangeRole(r *Roster, s Signer, uid [32]byte, role Role, state StateView) (*Change, error) {
	next, err := r.begin(s)
	if err != nil {
		return nil, err
	}
	i := next.index(uid)
	if i < 0 || next.Members[i].Role == RoleOwner || (role != RoleWriter && role != RoleReader) || next.Members[i].Role == role {
		return nil, fmt.Errorf("%w: cannot make %x %q", ErrStateMismatch, uid, role)
	}
	demote := next.Members[i].Role == RoleWriter
	next.Members[i].Role = role
	if !demote {
		return r.finish(s, next, nil)
	}
	return r.finishEpoch(s, next, state)
}

// RemoveMember removes a member other than the owner, starting an epoch
// (§8.2, §11.6).
func RemoveMember(r *Roster, s Signer, uid [32]byte, state StateView) (*Change, error) {
	next, err := r.begin(s)
	if err != nil {
		return nil, err
	}
	i := next.index(uid)
	if i < 0 || next.Members[i].Role == RoleOwner {
		return nil, fmt.Errorf("%w: cannot remove %x", ErrStateMismatch, uid)
	}
	next.Members = append(next.Members[:i], next.Members[i+1:]...)
	return r.finishEpoch(s, next, state)
}

// Rotate starts an epoch with a new key and the same members (§11.6: the
// owner may ask for a new key).
func Rotate(r *Roster, s Signer, state StateView) (*Change, error) {
	next, err := r.begin(s)
	if err != nil {
		return nil, err
	}
	return r.finishEpoch(s, next, state)
}

// Delete signs the statement that deletes the collection (§11.9): the same
// members and keys with deleted set. No successor may follow it.
func Delete(r *Roster, s Signer) (*Change, error) {
	next, err := r.begin(s)
	if err != nil {
		return nil, err
	}
	next.Deleted = true
	return r.finish(s, next, nil)
}

func (st *State) index(uid [32]byte) int {
	for i, m := range st.Members {
		if m.UID == uid {
			return i
		}
	}
	return -1
}

// begin checks the signer and returns a copy of the head state with n+1.
func (r *Roster) begin(s Signer) (*State, error) {
	if s.uid() != r.owner {
		return nil, fmt.Errorf("%w: %x", ErrNotOwnerSigner, s.uid())
	}
	if r.State().Deleted {
		return nil, fmt.Errorf("%w: %w", ErrStateMismatch, ErrAfterDeleted)
	}
	next := r.State().clone()
	next.N++
	next.Nonce = nil
	return next, nil
}

// finishEpoch gives next a fresh key (one whose commitment occurs nowhere
// in the roster) and the new inventory, then signs it.
func (r *Roster) finishEpoch(s Signer, next *State, state StateView) (*Change, error) {
	var current *Inventory
	if r.State().Snapshot != nil {
		inv, ok := r.inventories[r.Epoch()]
		if !ok {
			return nil, ErrCarryForward
		}
		current = inv
	}
	inv, err := BuildInventory(state, current)
	if err != nil {
		return nil, err
	}
	key, err := s.random(32)
	if err != nil {
		return nil, err
	}
	ch := &Change{StartsEpoch: true, Key: [32]byte(key)}
	ch.Commit = suite.Commit(ch.Key)
	prev := next.Key.Commit
	next.Key = Key{N: next.Key.N + 1, Commit: ch.Commit, Prev: &prev}
	h := inv.Hash()
	next.Snapshot = &h
	out, err := r.finish(s, next, ch)
	if err != nil {
		return nil, err
	}
	out.Inventory = inv.withEpoch(out.Statement.ID())
	return out, nil
}

// finish signs next as the successor of r's head and checks it with
// Validate, so an operation never returns a statement that others would
// reject.
func (r *Roster) finish(s Signer, next *State, ch *Change) (*Change, error) {
	st, err := sign(s, r.collection, r.Head().ID(), next)
	if err != nil {
		return nil, err
	}
	if err := r.Validate(st); err != nil {
		return nil, err
	}
	if ch == nil {
		ch = &Change{}
	}
	ch.Statement = st
	return ch, nil
}

// sign makes the statement write of §9.4 carrying state.
func sign(s Signer, scope [16]byte, ref [32]byte, state *State) (*Statement, error) {
	value, err := state.Marshal()
	if err != nil {
		return nil, err
	}
	body := suite.WriteBody{
		Scope: scope, Record: rosterRecord, Field: StatementField, Op: suite.OpAssign,
		Value: value, Author: s.uid(), Dot: s.Dot, Ref: ref,
	}
	_, _, sig, err := suite.SignWrite(s.Key, &body)
	if err != nil {
		return nil, err
	}
	return NewStatement(body, sig)
}

// Equal reports whether two statements are the same signed bytes.
func (st *Statement) Equal(o *Statement) bool {
	return st.ID() == o.ID() && bytes.Equal(st.Sig(), o.Sig())
}

// RemoveMembers removes several members other than the owner in one
// statement that starts an epoch (§7.4: making a shared collection private
// again removes all other members, with one rotation).
func RemoveMembers(r *Roster, s Signer, uids [][32]byte, state StateView) (*Change, error) {
	next, err := r.begin(s)
	if err != nil {
		return nil, err
	}
	for _, uid := range uids {
		i := next.index(uid)
		if i < 0 || next.Members[i].Role == RoleOwner {
			return nil, fmt.Errorf("%w: cannot remove %x", ErrStateMismatch, uid)
		}
		next.Members = append(next.Members[:i], next.Members[i+1:]...)
	}
	return r.finishEpoch(s, next, state)
}
