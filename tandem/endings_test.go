package tandem

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two owner devices race a removal on a hub where one device's view is
// delayed (it has not synced since the other began): both sign a
// successor of the same statement; every device, members included, then
// finds the collection dead (§9.4) — nobody follows a different roster —
// and it stays readable and can be copied (§11.8).
func TestOwnerDevicesRaceKillsCollection(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	ctx := t.Context()
	item, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("kept")})
	s.syncAll(1)
	// j2's view is delayed: j1's whole change happens without j2 syncing.
	if err := s.j1.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.ai.UserID()), "removing Aimee"); err != nil {
		t.Fatal(err)
	}
	if err := s.j2.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.be.UserID()), "removing Ben"); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	syncT(t, s.j2)
	s.syncAll(2)
	for i, d := range s.all() {
		st, err := d.CollectionState(s.c)
		if err != nil || (st != StateDead && st != StateRemoved) {
			t.Fatalf("device %d: collection %s after two successors, want dead", i, st)
		}
		if d == s.ai || d == s.be {
			continue
		}
		if st != StateDead {
			t.Fatalf("owner device %d: %s, want dead", i, st)
		}
		if r, err := d.Record(s.c, item); err != nil || r.Get("title") != "kept" {
			t.Fatalf("a dead collection is not readable: %v %+v", err, r)
		}
	}
	if err := s.j1.SetString(s.c, item, "title", "x"); CodeOf(err) != CodeNotWritable {
		t.Fatalf("a dead collection accepted a write: %v", err)
	}
	copyID, err := s.ai.CopyCollection(s.c, "House (copy)")
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := s.ai.Records(copyID)
	found := false
	for _, r := range rs {
		found = found || r.Get("title") == "kept"
	}
	if !found || roleT(t, s.ai, copyID) != RoleOwner {
		t.Fatalf("the copy: %+v, role %q", rs, roleT(t, s.ai, copyID))
	}
	_ = ctx
}

// Deleting (§11.9): every device stops writing and sees the collection
// deleted; its data stays readable.
func TestDeleteCollection(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	item, _ := s.ai.NewRecord(s.c, map[string][]byte{"title": []byte("still here")})
	s.syncAll(1)
	if err := s.j1.DeleteCollection(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	for i, d := range s.all() {
		if st, _ := d.CollectionState(s.c); st != StateDeleted {
			t.Fatalf("device %d: %s, want deleted", i, st)
		}
		if err := d.SetString(s.c, item, "title", "x"); CodeOf(err) != CodeNotWritable {
			t.Fatalf("device %d wrote to a deleted collection: %v", i, err)
		}
		if r, _ := d.Record(s.c, item); r.Get("title") != "still here" {
			t.Fatalf("device %d lost the data of a deleted collection", i)
		}
	}
	// A device of the owner's that returns late learns it was deleted.
	late, err := Restore(t.Context(), filepath.Join(t.TempDir(), "late"), s.j1.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	syncT(t, late)
	if st, _ := late.CollectionState(s.c); st != StateDeleted {
		t.Fatalf("a late device: %s, want deleted", st)
	}
}

// Making a shared list private again removes every other member in one
// rotation (§7.4).
func TestMakePrivate(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	if err := s.j1.MakePrivate(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	s.syncAll(2)
	ms, _ := s.j2.Members(s.c)
	if len(ms) != 1 || ms[0].Role != RoleOwner {
		t.Fatalf("members after making it private: %+v", ms)
	}
	for _, d := range []*Device{s.ai, s.be} {
		if st, _ := d.CollectionState(s.c); st != StateRemoved {
			t.Fatalf("a former member: %s, want removed", st)
		}
	}
	if st, _ := s.j2.CollectionState(s.c); st != StateFollowing {
		t.Fatalf("the owner's second device: %s", st)
	}
}

// Two owner devices (§11.7): j1 starts a removal and is cut off after
// uploading it; j2, asked for another change, refuses and names j1's;
// j2 finishes j1's change; j1, back, carries on. Then j1 starts another
// change and is cut off before uploading; j2 discards it; j1, back, drops
// it. The collection never dies.
func TestTwoOwnerDevices(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	cutAt := func(point string) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		s.j1.eng.SetStepHook(func(p string) {
			if p == point {
				cancel()
			}
		})
		s.j1.Sync(ctx) // ends in error: cut off
		s.j1.eng.SetStepHook(nil)
	}
	if err := s.j1.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.ai.UserID()), "removing Aimee in House"); err != nil {
		t.Fatal(err)
	}
	cutAt("uploaded")
	syncT(t, s.j2)
	what, ok := inFlightT(t, s.j2, s.c)
	if !ok || what != "removing Aimee in House" {
		t.Fatalf("j2 sees %q %v", what, ok)
	}
	err := s.j2.RemoveMember(t.Context(), s.c, s.be.UserID())
	var e *Error
	if CodeOf(err) != CodeInFlight || !errors.As(err, &e) || !strings.Contains(e.Message, "removing Aimee in House") {
		t.Fatalf("a second change while one is in flight: %v", err)
	}
	if err := s.j2.FinishChange(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	syncT(t, s.j1)
	if s.j1.eng.Rotating([16]byte(s.c)) {
		t.Fatal("j1 did not carry on after j2 finished its change")
	}
	s.syncAll(2)
	for i, d := range []*Device{s.j1, s.j2, s.be} {
		if st, _ := d.CollectionState(s.c); st != StateFollowing {
			t.Fatalf("device %d: %s", i, st)
		}
		ms, _ := d.Members(s.c)
		if len(ms) != 2 {
			t.Fatalf("device %d: %d members, want 2 (Aimee removed)", i, len(ms))
		}
	}
	if st, _ := s.ai.CollectionState(s.c); st != StateRemoved {
		t.Fatalf("Aimee: %s", st)
	}

	// Discarded before it was uploaded.
	if err := s.j1.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.be.UserID()), "removing Ben in House"); err != nil {
		t.Fatal(err)
	}
	cutAt("prepared")
	syncT(t, s.j2)
	if err := s.j2.FinishChange(t.Context(), s.c); CodeOf(err) != CodeInFlight {
		t.Fatalf("finishing a change that was never uploaded: %v", err)
	}
	if err := s.j2.DiscardChange(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if s.j1.eng.Rotating([16]byte(s.c)) {
		t.Fatal("j1 kept a change that was discarded")
	}
	s.syncAll(2)
	for i, d := range []*Device{s.j1, s.j2, s.be} {
		ms, _ := d.Members(s.c)
		if st, _ := d.CollectionState(s.c); st != StateFollowing || len(ms) != 2 {
			t.Fatalf("device %d after the discard: %s, %d members", i, st, len(ms))
		}
	}
	if err := s.j2.RemoveMember(t.Context(), s.c, s.be.UserID()); err != nil {
		t.Fatalf("a change after the discard: %v", err)
	}
}

// After the read-only period (§11.9), an owner device destroys a deleted
// collection's data on the hub and keeps its roster; a device returning
// late learns it was deleted; a removed user's replica goes too (§11.6).
func TestEndedCollectionsRetire(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("old")})
	s.syncAll(1)
	if err := s.j1.DeleteCollection(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	before := len(hubIDs(t, srv.Open()))
	later := time.Now().Add(31 * 24 * time.Hour)
	s.j1.eng.SetClock(func() time.Time { return later })
	syncT(t, s.j1)
	after := len(hubIDs(t, srv.Open()))
	if after >= before {
		t.Fatalf("hub messages %d → %d: the deleted collection's data stayed", before, after)
	}
	if slicesContains(s.j1.Collections(), s.c) {
		t.Fatal("the owner's device still keeps the deleted collection")
	}
	late, err := Restore(t.Context(), filepath.Join(t.TempDir(), "late"), s.j1.ShowBackupKey(), Options{Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	syncT(t, late)
	if st, _ := late.CollectionState(s.c); st != StateDeleted {
		t.Fatalf("a device returning late: %s, want deleted", st)
	}
}

// The race of two owner devices on real Dovecot.
func TestOwnerDevicesRaceDovecot(t *testing.T) {
	h := dovecotHub(t, "felix")
	s := shareStory(t, func(name string) Options { return Options{Name: name, Hub: h} })
	if err := s.j1.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.ai.UserID()), "removing Aimee"); err != nil {
		t.Fatal(err)
	}
	if err := s.j2.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.be.UserID()), "removing Ben"); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	syncT(t, s.j2)
	s.syncAll(2)
	for i, d := range []*Device{s.j1, s.j2, s.ai, s.ai2, s.be} {
		if st, _ := d.CollectionState(s.c); st != StateDead && st != StateRemoved {
			t.Fatalf("device %d: %s, want dead", i, st)
		}
	}
}

// A change asked for while this device's own last one is unfinished is
// refused with a line about this device, not about another one (§11.7).
func TestOwnChangeUnfinished(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	if err := s.j1.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.ai.UserID()), "removing Aimee in House"); err != nil {
		t.Fatal(err)
	}
	err := s.j1.sharingErr(s.c, s.j1.eng.BeginRotation([16]byte(s.c), 0, [32]byte(s.be.UserID()), "removing Ben in House"))
	var e *Error
	if CodeOf(err) != CodeInFlight || !errors.As(err, &e) || e.Message != "this device's last change to who the list is shared with is not finished yet: sync, then try again" {
		t.Fatalf("a second change on the same device: %v", err)
	}
	syncT(t, s.j1)
	if err := s.j1.RemoveMember(t.Context(), s.c, s.be.UserID()); err != nil {
		t.Fatalf("a change after the first finished: %v", err)
	}
}
