package roster

import (
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

func TestOwnerOperations(t *testing.T) {
	f := newFixture(t)
	r := f.r0
	epoch0 := r.State().Key

	// Promotion: same epoch, same commitment, nothing else changes.
	ch, err := ChangeRole(r, f.o.signer(), f.d.UID, RoleWriter, nil)
	check(t, err)
	if ch.StartsEpoch || ch.Statement.State().Key.Commit != epoch0.Commit || ch.Inventory != nil {
		t.Fatal("promotion started an epoch")
	}
	r = extend(t, r, ch)

	// Demotion: a new epoch with a fresh key, its commitment, and an
	// inventory bound to the new epoch ID.
	ch, err = ChangeRole(r, f.o.signer(), f.w.UID, RoleReader, f.state)
	check(t, err)
	s := ch.Statement.State()
	if !ch.StartsEpoch || s.Key.N != epoch0.N+1 || s.Key.Commit != suite.Commit(ch.Key) || ch.Commit != s.Key.Commit ||
		*s.Key.Prev != epoch0.Commit || ch.Inventory.Epoch != ch.Statement.ID() || ch.Inventory.Hash() != *s.Snapshot {
		t.Fatal("demotion is not a complete epoch start")
	}
	r = extend(t, r, ch)
	if r.Epoch() != ch.Statement.ID() {
		t.Fatal("epoch ID is not the starting statement's ID")
	}

	// Removal: an epoch start that drops the member.
	ch, err = RemoveMember(r, f.o.signer(), f.d.UID, f.state)
	check(t, err)
	if !ch.StartsEpoch {
		t.Fatal("removal did not start an epoch")
	}
	r = extend(t, r, ch)
	if _, ok := r.State().Member(f.d.UID); ok {
		t.Fatal("still listed")
	}
	// Keys never repeat across epochs.
	seen := map[[32]byte]bool{}
	for _, st := range r.Statements() {
		if r.IsEpochStart(st.ID()) {
			if seen[st.State().Key.Commit] {
				t.Fatal("commitment reused")
			}
			seen[st.State().Key.Commit] = true
		}
	}

	// Misuse changes nothing and says why.
	for name, err := range map[string]error{
		"add a member twice":    second(AddMember(r, f.o.signer(), member(f.w, RoleWriter, "Aimee"))),
		"add as owner":          second(AddMember(r, f.o.signer(), member(user(40), RoleOwner, "x"))),
		"demote the owner":      second(ChangeRole(r, f.o.signer(), f.o.id.UID, RoleReader, nil)),
		"remove the owner":      second(RemoveMember(r, f.o.signer(), f.o.id.UID, nil)),
		"remove a non-member":   second(RemoveMember(r, f.o.signer(), user(41).UID, nil)),
		"same role":             second(ChangeRole(r, f.o.signer(), f.w.UID, RoleReader, nil)),
		"bad name":              second(AddMember(r, f.o.signer(), member(user(42), RoleReader, "\xff"))),
		"signed by a non-owner": second(AddMember(r, Signer{Key: f.w.SignKey}, member(user(43), RoleReader, "y"))),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := AddMember(r, Signer{Key: f.w.SignKey}, member(user(43), RoleReader, "y")); !errors.Is(err, ErrNotOwnerSigner) {
		t.Fatal(err)
	}

	// Delete: the last statement.
	ch, err = Delete(r, f.o.signer())
	check(t, err)
	r = extend(t, r, ch)
	if !r.State().Deleted {
		t.Fatal("not deleted")
	}
	if _, err := AddMember(r, f.o.signer(), member(user(44), RoleReader, "z")); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("operation after delete: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
