package tandem

import (
	"crypto/rand"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The sharing story goes on (§11.6): Jesper removes Aimee while her device
// is offline with an unsent edit, and while Ben has a late write from
// epoch 0 that the inventory misses; then makes Ben a reader.
func TestRotationStory(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	runRotationStory(t, s)
}

func runRotationStory(t *testing.T, s *sharing) {
	ctx := t.Context()
	// Ben starts as a reader in shareStory: make him a writer (same epoch).
	if err := s.j1.SetRole(ctx, s.c, s.be.UserID(), RoleWriter); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	paint, err := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	if err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	// Offline: Aimee and Ben edit without syncing.
	if err := s.ai.SetString(s.c, paint, "note", "Aimee's unsent edit"); err != nil {
		t.Fatal(err)
	}
	late, err := s.be.NewRecord(s.c, map[string][]byte{"title": []byte("Ben's late item")})
	if err != nil {
		t.Fatal(err)
	}
	// Jesper removes Aimee: epoch 1.
	var epoch0 [32]byte
	s.j1.eng.View([16]byte(s.c), func(_ *record.State, r *roster.Roster, _ roster.Status) { epoch0 = r.Epoch() })
	if err := s.j1.RemoveMember(ctx, s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	tag0, _, _ := s.j1.eng.EpochChannel([16]byte(s.c), epoch0)
	syncT(t, s.j1)
	if recs, rosterMsgs := s.j1.eng.CountIn(tag0); recs != 0 || rosterMsgs == 0 {
		t.Fatalf("epoch 0's channel after the rotation: %d data messages (want 0), %d roster messages (want some)", recs, rosterMsgs)
	}
	if s.j1.eng.Rotating([16]byte(s.c)) {
		t.Fatal("the rotation did not finish in one sync")
	}
	// Ben returns: learns of the epoch, signs his late write again.
	syncT(t, s.be)
	syncT(t, s.be)
	syncT(t, s.j1)
	syncT(t, s.j2)
	for _, d := range []*Device{s.j1, s.j2, s.be} {
		if r, err := d.Record(s.c, late); err != nil || r.Get("title") != "Ben's late item" {
			t.Fatalf("Ben's late write on a device: %v %+v", err, r)
		}
		if removedT(t, d, s.c) {
			t.Fatal("a remaining member counts as removed")
		}
	}
	// Aimee returns: told she was removed, her edit kept locally only.
	syncT(t, s.ai)
	if st, _ := s.ai.CollectionState(s.c); st != StateRemoved {
		t.Fatalf("Aimee's state after removal: %s", st)
	}
	// Her unsent edit is kept aside for her, not shown as part of the list
	// (§11.6: "kept for the app instead of being published").
	if r, _ := s.ai.Record(s.c, paint); r.Get("note") != "" {
		t.Fatalf("Aimee's refused edit is shown as part of the list: %+v", r)
	}
	if ref, err := s.ai.Refused(s.c); err != nil || len(ref) != 1 || string(ref[0].Value()) != "Aimee's unsent edit" ||
		ref[0].Why() != RefusedRemoved || ref[0].Record() != paint || ref[0].Field() != "note" {
		t.Fatalf("Aimee's unsent edit is not kept aside: %v %+v", err, ref)
	}
	if st := s.ai.Status(); st.Refused != 1 || st.Pending != 0 {
		t.Fatalf("Aimee's status: %d refused, %d pending; want 1 and 0", st.Refused, st.Pending)
	}
	if err := s.ai.SetString(s.c, paint, "note", "after removal"); CodeOf(err) != CodeNotWritable {
		t.Fatalf("Aimee wrote after her removal: %v", err)
	}
	s.syncAll(2)
	for _, d := range []*Device{s.j1, s.j2, s.be} {
		if r, _ := d.Record(s.c, paint); r.Get("note") != "" {
			t.Fatalf("Aimee's edit from before her removal, never sent, reached a member: %+v", r)
		}
	}
	want := stateOf(t, s.j1, s.c)
	for i, d := range []*Device{s.j2, s.be} {
		if !bytesEqual(stateOf(t, d, s.c), want) {
			t.Fatalf("member device %d differs after the rotation", i)
		}
	}
	// Jesper makes Ben a reader: epoch 2.
	if err := s.j2.SetRole(ctx, s.c, s.be.UserID(), RoleReader); err != nil {
		t.Fatal(err)
	}
	s.syncAll(2)
	if roleT(t, s.be, s.c) != RoleReader {
		t.Fatalf("Ben's role: %q", roleT(t, s.be, s.c))
	}
	if err := s.be.SetString(s.c, paint, "title", "x"); CodeOf(err) != CodeNotWritable {
		t.Fatalf("Ben wrote as a reader: %v", err)
	}
	if err := s.j1.SetString(s.c, paint, "title", "Paint (white)"); err != nil {
		t.Fatal(err)
	}
	s.syncAll(2)
	if r, _ := s.be.Record(s.c, paint); r.Get("title") != "Paint (white)" {
		t.Fatalf("Ben does not read the new epoch: %+v", r)
	}
}

// A write Aimee backdates after her removal — signed under the old epoch's
// statement and posted in the old epoch's channel, whose key she still
// holds — is refused by every device that moved on (§11.6).
func TestBackdatedWriteAfterRemoval(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	paint, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	s.syncAll(1)
	var oldHead, oldEpoch [32]byte
	s.ai.eng.View([16]byte(s.c), func(_ *record.State, r *roster.Roster, _ roster.Status) { oldHead, oldEpoch = r.Head().ID(), r.Epoch() })
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	s.syncAll(1)
	// Aimee signs by hand what her device would refuse.
	id := suite.NewIdentity(s.ai.us)
	var w *record.Write
	s.ai.eng.View([16]byte(s.c), func(st *record.State, _ *roster.Roster, _ roster.Status) {
		var err error
		w, _, err = st.Build(&record.Writer{Key: id.SignKey, Device: suite.DeviceID{9}, Clock: record.NewClock(suite.HLC{}, nil), Ref: oldHead, Epoch: 0},
			record.Change{Record: [16]byte(paint), Field: "title", Op: suite.OpAssign, Value: []byte("backdated")})
		if err != nil {
			t.Fatal(err)
		}
	})
	tag, key, ok := s.ai.eng.EpochChannel([16]byte(s.c), oldEpoch)
	if !ok {
		t.Fatal("Aimee has no key for the old epoch")
	}
	pt, err := client.EncodeRecordPayload(&client.RecordPayload{Record: [16]byte(paint), Writes: []client.SignedWrite{{Body: w.Body(), Sig: w.Sig()}}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := suite.SealEnvelope(suite.KindRecord, key, tag, pt, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Open().Append(t.Context(), tag, env); err != nil {
		t.Fatal(err)
	}
	for i, d := range []*Device{s.j1, s.j2, s.be} {
		rep := syncT(t, d)
		if r, _ := d.Record(s.c, paint); r.Get("title") != "Paint" || rep.Rejected == 0 {
			t.Fatalf("device %d took the backdated write: %+v (report %+v)", i, r, rep)
		}
	}
}

// A removed user may ask to join again through a new invite; the owner is
// always asked, even for a QR that approves automatically (§11.3).
func TestRemovedUserAsksAgain(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.ai)
	qr, err := s.j1.Invite(s.c, InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	if _, err := s.ai.Join(t.Context(), qr.Payload, "Aimee"); err != nil {
		t.Fatalf("a removed user asking again: %v", err)
	}
	syncT(t, s.ai)
	syncT(t, s.j1)
	reqs := requestsT(t, s.j1, s.c)
	if len(reqs) != 1 || !reqs[0].PreviouslyRemoved {
		t.Fatalf("requests %+v, want Aimee's, marked previously removed", reqs)
	}
	if err := s.j1.Approve(t.Context(), reqs[0].ID); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.ai)
	if st, _ := s.ai.CollectionState(s.c); st != StateFollowing {
		t.Fatalf("Aimee after being let back in: %s", st)
	}
	if _, err := s.be.Join(t.Context(), qr.Payload, "Ben"); err == nil || CodeOf(err) != CodeInvalid {
		t.Fatalf("a member joining again: %v", err)
	}
}
