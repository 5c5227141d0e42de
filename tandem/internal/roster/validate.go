package roster

import (
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func invalid(rule error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %w: %s", ErrRejected, ErrInvalidStatement, rule, fmt.Sprintf(format, args...))
}

// checkShape enforces the write-level rules every statement shares (§8.2,
// §9.4): the scope, the _roster record, field s, an assign, empty context,
// base and element.
func checkShape(st *Statement, scope [16]byte) error {
	b := &st.body
	switch {
	case b.Scope != scope:
		return invalid(ErrScope, "scope %x, want %x", b.Scope, scope)
	case b.Record != rosterRecord:
		return invalid(ErrRecord, "record %x", b.Record)
	case b.Field != StatementField:
		return invalid(ErrField, "field %q", b.Field)
	case b.Op != suite.OpAssign:
		return invalid(ErrOp, "op %d", b.Op)
	case len(b.Context) != 0 || len(b.Base) != 0:
		return invalid(ErrContext, "%d context and %d base entries", len(b.Context), len(b.Base))
	case len(b.Element) != 0:
		return invalid(ErrElement, "%d element bytes", len(b.Element))
	}
	return nil
}

// checkMembers enforces the member-list rules (§8.1, §8.2): only the three
// roles, unique user IDs, exactly one owner and that owner is owner.
func checkMembers(s *State, owner [32]byte) error {
	seen := make(map[[32]byte]bool, len(s.Members))
	owners := 0
	for i, m := range s.Members {
		if !m.Role.Valid() {
			return invalid(ErrRole, "members[%d] role %q", i, m.Role)
		}
		if seen[m.UID] {
			return invalid(ErrDuplicate, "members[%d] %x", i, m.UID)
		}
		seen[m.UID] = true
		if m.Role == RoleOwner {
			owners++
			if m.UID != owner {
				return invalid(ErrOwner, "members[%d] %x is owner, genesis owner is %x", i, m.UID, owner)
			}
		}
	}
	if owners != 1 {
		return invalid(ErrOwner, "%d owners", owners)
	}
	return nil
}

// ValidateGenesis checks that st is a valid genesis statement (§7.1, §8.1,
// §8.2): the write shape of a statement with zero scope and zero ref, a
// parseable state with n = 0, key.n = 0 and no prev, no snapshot, a 16-byte
// nonce, not deleted, and exactly one member: the author, as owner. See
// docs/decisions/tandem-roster-statement-json.md. Errors wrap ErrRejected
// and ErrInvalidStatement and the sentinel of the rule broken.
func ValidateGenesis(st *Statement) error {
	if err := checkShape(st, [16]byte{}); err != nil {
		return err
	}
	if st.Body().Ref != ([32]byte{}) {
		return invalid(ErrRef, "genesis ref is not zero")
	}
	if st.State() == nil {
		return invalid(ErrState, "%v", st.ParseErr())
	}
	s := st.State()
	switch {
	case s.N != 0:
		return invalid(ErrSequence, "genesis n = %d", s.N)
	case s.Key.N != 0 || s.Key.Prev != nil:
		return invalid(ErrEpochCounter, "genesis key.n = %d or prev present", s.Key.N)
	case s.Snapshot != nil || s.Nonce == nil || s.Deleted:
		return invalid(ErrGenesis, "snapshot present, nonce missing or deleted")
	}
	if err := checkMembers(s, st.Body().Author); err != nil {
		return err
	}
	if len(s.Members) != 1 {
		return invalid(ErrGenesis, "%d members, want the owner alone", len(s.Members))
	}
	return nil
}

// Validate checks that next is a valid successor of r's head (§8.2, §9.4,
// §11.9). Errors wrap ErrRejected, ErrInvalidStatement and the sentinel of
// the first rule broken (rules are checked in the order of the package doc).
func (r *Roster) Validate(next *Statement) error {
	head := r.Head()
	if next.Body().Author != r.owner {
		return invalid(ErrAuthor, "author %x", next.Body().Author)
	}
	if err := checkShape(next, r.collection); err != nil {
		return err
	}
	if next.Body().Ref != head.ID() {
		return invalid(ErrRef, "ref %x, head %x", next.Body().Ref, head.ID())
	}
	if head.State().Deleted {
		return invalid(ErrAfterDeleted, "head %x is deleted", head.ID())
	}
	if next.State() == nil {
		return invalid(ErrState, "%v", next.ParseErr())
	}
	prev, s := head.State(), next.State()
	if s.N != prev.N+1 {
		return invalid(ErrSequence, "n = %d after %d", s.N, prev.N)
	}
	if err := checkMembers(s, r.owner); err != nil {
		return err
	}
	if err := checkStayers(prev, s); err != nil {
		return err
	}
	if s.Key.Commit == prev.Key.Commit {
		return checkSameEpoch(prev, s)
	}
	return r.checkEpochStart(prev, s)
}

// checkStayers: for every member who stays, the same uka, name and via
// (§8.1: "None of the three ever changes").
func checkStayers(prev, s *State) error {
	for _, m := range s.Members {
		old, ok := prev.Member(m.UID)
		if !ok {
			continue
		}
		if m.UKA != old.UKA || m.Name != old.Name || !sameVia(m.Via, old.Via) {
			return invalid(ErrMemberChanged, "member %x", m.UID)
		}
	}
	return nil
}

func sameVia(a, b *[16]byte) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func same32(a, b *[32]byte) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// checkSameEpoch: a same-epoch statement keeps the key (counter, commitment,
// prev) and the snapshot commitment, and neither removes nor demotes anyone,
// which only an epoch start may do (§7.2, §8.2).
func checkSameEpoch(prev, s *State) error {
	if s.Key.N != prev.Key.N || !same32(s.Key.Prev, prev.Key.Prev) || !same32(s.Snapshot, prev.Snapshot) {
		return invalid(ErrSameEpoch, "key or snapshot changed under commitment %x", s.Key.Commit)
	}
	for _, old := range prev.Members {
		m, ok := s.Member(old.UID)
		if !ok {
			return invalid(ErrNeedsEpoch, "member %x removed", old.UID)
		}
		if old.Role == RoleWriter && m.Role == RoleReader {
			return invalid(ErrNeedsEpoch, "member %x demoted", old.UID)
		}
	}
	return nil
}

// checkEpochStart: a statement that starts an epoch advances key.n by one,
// names the parent's commitment as prev, uses a commitment that occurs
// nowhere earlier in the roster, commits a snapshot inventory and adds no
// member (§8.2).
func (r *Roster) checkEpochStart(prev, s *State) error {
	if s.Key.N != prev.Key.N+1 || s.Key.Prev == nil || *s.Key.Prev != prev.Key.Commit {
		return invalid(ErrEpochCounter, "key.n %d after %d, or prev not the parent's commitment", s.Key.N, prev.Key.N)
	}
	if r.commits[s.Key.Commit] {
		return invalid(ErrCommitReused, "commitment %x", s.Key.Commit)
	}
	if s.Snapshot == nil {
		return invalid(ErrSnapshot, "no snapshot")
	}
	for _, m := range s.Members {
		if _, ok := prev.Member(m.UID); !ok {
			return invalid(ErrEpochAdds, "member %x added", m.UID)
		}
	}
	return nil
}
