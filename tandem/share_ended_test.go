package tandem

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Leaving a list the user was removed from, or that its owner deleted,
// takes it off all the user's devices; only the owner of a live list is
// told the owner can't leave (docs/decisions/tandem-leave-ended.md).
func TestLeaveEndedCollection(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	ctx := t.Context()
	gone := func(who string, ds ...*Device) {
		t.Helper()
		for _, d := range ds {
			syncT(t, d)
			if slicesContains(d.Collections(), s.c) {
				t.Fatalf("%s still keeps House after leaving it", who)
			}
		}
	}

	// The owner of a live list can't leave it.
	err := s.j1.Leave(s.c)
	if CodeOf(err) != CodeNotWritable || !strings.Contains(err.(*Error).Message, "owner") {
		t.Fatalf("the owner left a live list: %v", err)
	}

	// Aimee, removed, leaves: gone from both her devices, no statement.
	if err := s.j1.RemoveMember(ctx, s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	s.syncAll(2)
	if !removedT(t, s.ai, s.c) {
		t.Fatal("Aimee is not told she was removed")
	}
	if err := s.ai.Leave(s.c); err != nil {
		t.Fatalf("a removed member can't leave: %v", err)
	}
	if membershipT(t, s.ai, s.c) != MembershipLeft {
		t.Fatalf("Aimee's membership after leaving: %q", membershipT(t, s.ai, s.c))
	}
	gone("Aimee", s.ai, s.ai2)

	// Jesper deletes House; Ben, a member of the deleted list, leaves it.
	if err := s.j1.DeleteCollection(ctx, s.c); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	if st, _ := s.be.CollectionState(s.c); st != StateDeleted {
		t.Fatalf("Ben's House after the deletion: %s", st)
	}
	if err := s.be.Leave(s.c); err != nil {
		t.Fatalf("a member can't leave a deleted list: %v", err)
	}
	gone("Ben", s.be)
	if l := pendingLeavesT(t, s.j1, s.c); len(l) != 0 {
		t.Fatalf("leaving a deleted list asked the owner: %+v", l)
	}

	// The owner drops the deleted list: gone from both his devices.
	if err := s.j1.Leave(s.c); err != nil {
		t.Fatalf("the owner can't drop a deleted list: %v", err)
	}
	gone("Jesper", s.j1, s.j2)
	s.syncAll(1) // nothing comes back
	for i, d := range s.all() {
		if slicesContains(d.Collections(), s.c) {
			t.Fatalf("device %d follows House again", i)
		}
	}
}

// Authors keep their names after they leave the roster: the last name the
// roster's history gave them, marked Removed.
func TestAuthorNamesAfterRemoval(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	ctx := t.Context()
	item, err := s.ai.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Nails")})
	s.syncAll(2)
	check := func(who string, d *Device, rec RecordID, name string, removed bool) {
		t.Helper()
		r, err := d.Record(s.c, rec)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		vs := r.Fields["title"].Values
		if len(vs) != 1 {
			t.Fatalf("%s sees %d values of %q", who, len(vs), r.Get("title"))
		}
		if a := vs[0].Author; a.Name != name || a.Removed != removed {
			t.Fatalf("%s sees the author of %q as %q (removed %v), want %q (removed %v)", who, r.Get("title"), a.Name, a.Removed, name, removed)
		}
	}
	if err := s.j1.RemoveMember(ctx, s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	s.syncAll(2)
	check("Jesper", s.j1, item, "Aimee", true)
	check("Ben", s.be, item, "Aimee", true)
	check("Aimee", s.ai, item, "Aimee", true) // her read-only replica
	check("Ben", s.be, mine, "Jesper", false)

	if err := s.j1.MakePrivate(ctx, s.c); err != nil {
		t.Fatal(err)
	}
	s.syncAll(2)
	if !removedT(t, s.be, s.c) {
		t.Fatal("Ben is not told the list was made private")
	}
	check("Jesper after make-private", s.j2, item, "Aimee", true)
	check("Ben after make-private", s.be, item, "Aimee", true)
	check("Ben after make-private", s.be, mine, "Jesper", false)
}

// A request on an invite that no longer admits is answered by the device
// that made the invite, as a decline that says why; the joiner stops
// waiting (docs/decisions/tandem-invite-answers.md).
func TestJoinOnUsedUpInvite(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	dir := t.TempDir()
	cleo := openT(t, filepath.Join(dir, "cleo"), Options{Name: "Cleo", Store: memStore(srv)})
	dee := openT(t, filepath.Join(dir, "dee"), Options{Name: "Dee", Store: memStore(srv)})
	defer cleo.Close()
	defer dee.Close()
	ctx := t.Context()

	qr, err := s.j1.Invite(s.c, InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if _, err := cleo.Join(ctx, qr.Payload, "Cleo"); err != nil {
		t.Fatal(err)
	}
	syncT(t, cleo)
	syncT(t, s.j1)
	syncT(t, cleo)
	if m := membershipT(t, cleo, s.c); m != MembershipActive {
		t.Fatalf("Cleo: %q", m)
	}
	if _, err := dee.Join(ctx, qr.Payload, "Dee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	if rep := syncT(t, s.j2); rep.Declined != 0 { // not the device that made the invite: no answer from it
		t.Fatalf("Jesper's second device answered: %+v", rep)
	}
	syncT(t, dee)
	if m := membershipT(t, dee, s.c); m != MembershipWaiting {
		t.Fatalf("Dee before the inviting device saw her request: %q", m)
	}
	if rep := syncT(t, s.j1); rep.Declined != 1 {
		t.Fatalf("the inviting device did not answer: %+v", rep)
	}
	syncT(t, dee)
	if m := membershipT(t, dee, s.c); m != MembershipDeclined {
		t.Fatalf("Dee after a used-up invite: %q, want declined", m)
	}
	if why := whyDeclinedT(t, dee, s.c); why != DeclineUsedUp {
		t.Fatalf("why: %q", why)
	}
	if msg := whyDeclinedT(t, dee, s.c).Message("Jesper", "House"); msg != "This invite was already used. Ask Jesper for a new one." {
		t.Fatalf("message %q", msg)
	}
	if ms, _ := s.j1.Members(s.c); len(ms) != 4 {
		t.Fatalf("members %+v", ms)
	}

	// An invite that expired before the owner's device saw the request.
	short, err := s.j1.Invite(s.c, InviteOptions{Expires: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if _, err := dee.Join(ctx, short.Payload, "Dee"); err != nil {
		t.Fatal(err)
	}
	if m := membershipT(t, dee, s.c); m != MembershipWaiting || whyDeclinedT(t, dee, s.c) != "" {
		t.Fatalf("Dee asking again: %q %q, want waiting again", m, whyDeclinedT(t, dee, s.c))
	}
	syncT(t, dee)
	time.Sleep(time.Until(short.Expires) + 50*time.Millisecond)
	syncT(t, s.j1)
	syncT(t, dee)
	if m, why := membershipT(t, dee, s.c), whyDeclinedT(t, dee, s.c); m != MembershipDeclined || why != DeclineExpired {
		t.Fatalf("Dee after an expired invite: %q %q", m, why)
	}

	// A link request left waiting until its invite expired: the device
	// that made the invite answers, and every owner device drops it.
	slow, err := s.j1.Invite(s.c, InviteOptions{Link: true, Expires: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if _, err := dee.Join(ctx, slow.Link, "Dee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	syncT(t, s.j1)
	syncT(t, s.j2)
	if len(requestsT(t, s.j1, s.c)) != 1 || len(requestsT(t, s.j2, s.c)) != 1 {
		t.Fatalf("requests %+v %+v", requestsT(t, s.j1, s.c), requestsT(t, s.j2, s.c))
	}
	time.Sleep(time.Until(slow.Expires) + 50*time.Millisecond)
	syncT(t, s.j1)
	syncT(t, s.j2)
	if r1, r2 := requestsT(t, s.j1, s.c), requestsT(t, s.j2, s.c); len(r1)+len(r2) != 0 {
		t.Fatalf("requests on an expired invite still listed: %+v %+v", r1, r2)
	}
	syncT(t, dee)
	if m, why := membershipT(t, dee, s.c), whyDeclinedT(t, dee, s.c); m != MembershipDeclined || why != DeclineExpired {
		t.Fatalf("Dee after a link invite expired: %q %q", m, why)
	}

	// A manual decline says the owner declined.
	link, err := s.j1.Invite(s.c, InviteOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if _, err := dee.Join(ctx, link.Link, "Dee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	syncT(t, s.j1)
	reqs := requestsT(t, s.j1, s.c)
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	if err := s.j1.Decline(ctx, reqs[0].ID); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	if m, why := membershipT(t, dee, s.c), whyDeclinedT(t, dee, s.c); m != MembershipDeclined || why != DeclineByOwner {
		t.Fatalf("Dee after a decline: %q %q", m, why)
	}
	if msg := DeclineByOwner.Message("Jesper", "House"); msg != "Jesper declined your request to join House." {
		t.Fatalf("message %q", msg)
	}
	if msg := DeclineClosed.Message("", ""); msg != "This invite is no longer open. Ask the owner for a new one." {
		t.Fatalf("message %q", msg)
	}
}

// Closing a list's invites (§11.1): they leave OpenInvites on every owner
// device, a request on one is declined as closed, and making the list
// private closes the ones still open.
func TestCloseInvites(t *testing.T) {
	s, dee, link := linkForDee(t)
	syncT(t, s.j2)
	before := len(openInvitesT(t, s.j2, s.c))
	if n, err := s.j1.CloseInvites(s.c); err != nil || n != before || n == 0 {
		t.Fatalf("CloseInvites: %d, %v (open before: %d)", n, err, before)
	}
	if n := len(openInvitesT(t, s.j1, s.c)); n != 0 {
		t.Fatalf("%d invites open after closing", n)
	}
	syncT(t, s.j1)
	syncT(t, s.j2)
	if n := len(openInvitesT(t, s.j2, s.c)); n != 0 {
		t.Fatalf("the owner's other device: %d invites open", n)
	}
	if _, err := dee.Join(t.Context(), link.Payload, "Dee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	syncT(t, s.j2)
	syncT(t, s.j1)
	syncT(t, dee)
	if m, why := membershipT(t, dee, s.c), whyDeclinedT(t, dee, s.c); m != MembershipDeclined || why != DeclineClosed {
		t.Fatalf("Dee on a closed invite: %q %q", m, why)
	}
	if ms, _ := s.j1.Members(s.c); slices.ContainsFunc(ms, func(m Member) bool { return m.Name == "Dee" }) {
		t.Fatal("Dee was let in on a closed invite")
	}

	if _, err := s.j1.Invite(s.c, InviteOptions{Link: true}); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if err := s.j1.MakePrivate(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	if n := len(openInvitesT(t, s.j1, s.c)); n != 0 {
		t.Fatalf("%d invites open after MakePrivate", n)
	}
}

// Leaving a list one asked to join and is not in yet withdraws the
// request: Membership reads left, and the owner's approval that comes
// later does not bring the list in.
func TestLeaveWhileWaiting(t *testing.T) {
	s, dee, link := linkForDee(t)
	if _, err := dee.Join(t.Context(), link.Payload, "Dee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	if m := membershipT(t, dee, s.c); m != MembershipWaiting {
		t.Fatalf("Dee: %q", m)
	}
	if err := dee.Leave(s.c); err != nil {
		t.Fatalf("leaving while waiting: %v", err)
	}
	if m := membershipT(t, dee, s.c); m != MembershipLeft {
		t.Fatalf("Dee after withdrawing: %q", m)
	}
	syncT(t, dee)
	syncT(t, s.j1)
	reqs := requestsT(t, s.j1, s.c)
	if len(reqs) != 1 {
		t.Fatalf("the owner sees %d requests, want Dee's", len(reqs))
	}
	for _, r := range reqs {
		if err := s.j1.Approve(t.Context(), r.ID); err != nil {
			t.Fatal(err)
		}
	}
	syncT(t, s.j1)
	syncT(t, dee)
	syncT(t, dee)
	if slicesContains(dee.Collections(), s.c) || membershipT(t, dee, s.c) != MembershipLeft {
		t.Fatalf("a withdrawn request brought the list in: %q", membershipT(t, dee, s.c))
	}
	if err := dee.Leave(CollectionID{9}); CodeOf(err) != CodeNotFound {
		t.Fatalf("leaving a list one never asked for: %v", err)
	}
}

// linkForDee is the sharing story on memhub, a link invite to House that
// Jesper's first device made and synced, and Dee's device, not joined yet.
func linkForDee(t *testing.T) (*sharing, *Device, Invite) {
	t.Helper()
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	dee := openT(t, filepath.Join(t.TempDir(), "dee"), Options{Name: "Dee", Store: memStore(srv)})
	t.Cleanup(func() { dee.Close() })
	link, err := s.j1.Invite(s.c, InviteOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	return s, dee, link
}
