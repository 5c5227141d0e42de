package tandem

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// epochNet is one hub the epoch-move tests run on: options for the devices
// of shareStory and a raw connection for the hostile party, who holds the
// mail password.
type epochNet struct {
	opts func(name string) Options
	raw  hub.Store
}

// epochNets runs f on memhub, on Dovecot (IMAP) and on Cyrus with Jesper's
// devices on JMAP and the others on IMAP.
func epochNets(t *testing.T, f func(t *testing.T, n epochNet)) {
	t.Run("memhub", func(t *testing.T) {
		srv := memhub.NewServer()
		f(t, epochNet{opts: func(name string) Options { return Options{Name: name, Store: memStore(srv)} }, raw: srv.Open()})
	})
	t.Run("dovecot", func(t *testing.T) {
		h := dovecotHub(t, "chloe")
		raw, err := h.open(t.Context(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		f(t, epochNet{opts: func(name string) Options { return Options{Name: name, Hub: h} }, raw: raw})
	})
	t.Run("cyrus", func(t *testing.T) {
		jm, raw, addr, pass := cyrusJMAP(t, "bruno")
		imap := func(ctx context.Context) (hub.Store, error) {
			return imaphub.Open(ctx, imaphub.Config{Addr: addr, User: "bruno", Password: pass})
		}
		f(t, epochNet{raw: raw, opts: func(name string) Options {
			switch name {
			case "Jesper":
				return Options{Name: name, Hub: jm}
			case "Jesper's laptop": // paired: takes the hub in the QR code (JMAP)
				return Options{Name: name}
			}
			return Options{Name: name, Store: imap} // the app brings its own IMAP binding
		}})
	})
}

// epochOf returns c's current epoch and roster head as d follows them.
func epochOf(d *Device, c CollectionID) (epoch, head [32]byte) {
	d.eng.View([16]byte(c), func(_ *record.State, r *roster.Roster, _ roster.Status) {
		if r != nil {
			epoch, head = r.Epoch(), r.Head().ID()
		}
	})
	return epoch, head
}

// postOld signs ch by hand as d's user under statement ref of epoch
// counter 0 (on top of what d's state holds) and appends it through raw
// in the channel of epoch: what a removed member with the mail password
// can still do with the old key (§3.3).
func postOld(t *testing.T, d *Device, c CollectionID, raw hub.Store, epoch, ref [32]byte, ch record.Change) *record.Write {
	t.Helper()
	id := suite.NewIdentity(d.us)
	var w *record.Write
	d.eng.View([16]byte(c), func(st *record.State, _ *roster.Roster, _ roster.Status) {
		var err error
		w, _, err = st.Build(&record.Writer{Key: id.SignKey, Device: suite.DeviceID{9, 9}, Clock: record.NewClock(suite.HLC{}, nil), Ref: ref, Epoch: 0}, ch)
		if err != nil {
			t.Fatal(err)
		}
	})
	tag, key, ok := d.eng.EpochChannel([16]byte(c), epoch)
	if !ok {
		t.Fatal("no key for the old epoch")
	}
	appendRecord(t, raw, tag, key, ch.Record, client.SignedWrite{Body: w.Body(), Sig: w.Sig()})
	return w
}

// appendRecord seals a record message of rec holding ws for channel tag
// (key) and appends it through raw, as any holder of the key can.
func appendRecord(t *testing.T, raw hub.Store, tag string, key [32]byte, rec [16]byte, ws ...client.SignedWrite) {
	t.Helper()
	pt, err := client.EncodeRecordPayload(&client.RecordPayload{Record: rec, Writes: ws})
	if err != nil {
		t.Fatal(err)
	}
	env, err := suite.SealEnvelope(suite.KindRecord, key, tag, pt, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Append(t.Context(), tag, env); err != nil {
		t.Fatal(err)
	}
}

// destroyChannel destroys every message of channel tag through raw.
func destroyChannel(t *testing.T, raw hub.Store, tag string) int {
	t.Helper()
	ch, err := raw.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		if a.Channel == tag {
			ids = append(ids, a.ID)
		}
	}
	if err := raw.Destroy(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// syncUntil syncs ds in turn, at least once, until ok holds, for at most
// a minute (on Cyrus a message appended over one binding can take a moment
// to show over the other), and sums what the syncs reported.
func syncUntil(t *testing.T, what string, ok func() bool, ds ...*Device) (sum SyncReport) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for first := true; first || !ok(); first = false {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute of syncing", what)
		}
		for _, d := range ds {
			rep := syncT(t, d)
			sum.Excluded += rep.Excluded
			sum.Refused += rep.Refused
		}
		time.Sleep(100 * time.Millisecond)
	}
	return sum
}

// sameBytes reports whether every device holds what want holds.
func sameBytes(t *testing.T, c CollectionID, want *Device, ds ...*Device) bool {
	w := stateOf(t, want, c)
	for _, d := range ds {
		if !bytesEqual(stateOf(t, d, c), w) {
			return false
		}
	}
	return true
}

// sameState fails unless every device holds byte for byte what want holds.
func sameState(t *testing.T, c CollectionID, want *Device, ds ...*Device) {
	t.Helper()
	w := stateOf(t, want, c)
	for i, d := range ds {
		if !bytesEqual(stateOf(t, d, c), w) {
			t.Fatalf("device %d holds another state than the owner's", i)
		}
	}
}

// Defect 1 of issue 22: Aimee, removed, destroys the old channel's roster
// (the announcement among them) with the mail password and posts old-epoch
// writes there — a new title and a delete. Ben, away during the rotation,
// reads them while the old epoch still looks current to him. Once he moves
// he must hold what everyone else holds: neither write (§11.6).
func TestRemovedMembersLateWritesLeave(t *testing.T) { epochNets(t, testRemovedMembersLateWritesLeave) }

func testRemovedMembersLateWritesLeave(t *testing.T, n epochNet) {
	s := shareStory(t, n.opts)
	paint, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	bin, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Bin")})
	s.syncAll(1)
	epoch0, head0 := epochOf(s.ai, s.c)
	tag0, _, _ := s.ai.eng.EpochChannel([16]byte(s.c), epoch0)
	// Ben is away; Jesper removes Aimee.
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j2)
	if destroyChannel(t, n.raw, tag0) == 0 {
		t.Fatal("nothing in the old channel to destroy")
	}
	postOld(t, s.ai, s.c, n.raw, epoch0, head0, record.Change{Record: [16]byte(paint), Field: "title", Op: suite.OpAssign, Value: []byte("Aimee's title")})
	postOld(t, s.ai, s.c, n.raw, epoch0, head0, record.Change{Record: [16]byte(bin), Op: suite.OpDelete})
	excluded := syncUntil(t, "Ben moves and agrees", func() bool {
		e, _ := epochOf(s.be, s.c)
		return e != epoch0 && sameBytes(t, s.c, s.j1, s.j2, s.be)
	}, s.be, s.j1, s.j2, s.be).Excluded
	for i, d := range []*Device{s.j1, s.j2, s.be} {
		p, _ := d.Record(s.c, paint)
		b, _ := d.Record(s.c, bin)
		if p.Get("title") != "Paint" || p.Fields["title"].Conflict() || b.Deleted || b.Get("title") != "Bin" {
			t.Fatalf("device %d after the move: %+v %+v", i, p, b)
		}
	}
	sameState(t, s.c, s.j1, s.j2, s.be)
	if excluded == 0 {
		t.Fatal("Ben was not told that writes he had shown left the list")
	}
}

// Defect 2 of issue 22: Aimee's edit made after Jesper fixed the new
// epoch's inventory but before the announcement reaches Ben and not
// Jesper's laptop. After the move all hold the same state, without it;
// when Aimee returns, her device signs it again and everyone has it
// (§11.6).
func TestUnlistedEditRaceConverges(t *testing.T) { epochNets(t, testUnlistedEditRaceConverges) }

func testUnlistedEditRaceConverges(t *testing.T, n epochNet) {
	s := shareStory(t, n.opts)
	paint, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	s.syncAll(1)
	once := false
	s.j1.eng.SetStepHook(func(point string) {
		if point != "uploaded" || once {
			return
		}
		once = true
		if err := s.ai.SetString(s.c, paint, "title", "Aimee's late title"); err != nil {
			t.Error(err)
		}
		if _, err := s.ai.Sync(t.Context()); err != nil {
			t.Error(err)
		}
		if _, err := s.be.Sync(t.Context()); err != nil {
			t.Error(err)
		}
		if r, _ := s.be.Record(s.c, paint); r.Get("title") != "Aimee's late title" {
			t.Errorf("Ben did not read Aimee's late edit before the move: %+v", r)
		}
	})
	if err := s.j1.NewKey(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	s.j1.eng.SetStepHook(nil)
	if !once {
		t.Fatal("the rotation never reached its upload step")
	}
	syncUntil(t, "the devices that moved agree", func() bool { return sameBytes(t, s.c, s.j1, s.j2, s.be) }, s.j1, s.j2, s.be)
	for i, d := range []*Device{s.j1, s.j2, s.be} {
		if r, _ := d.Record(s.c, paint); r.Get("title") != "Paint" || r.Fields["title"].Conflict() {
			t.Fatalf("device %d after the move: %+v", i, r)
		}
	}
	sameState(t, s.c, s.j1, s.j2, s.be)
	// Aimee returns: her late edit is signed again and reaches everyone.
	syncUntil(t, "Aimee's late edit signed again everywhere", func() bool { return sameBytes(t, s.c, s.j1, s.j2, s.ai, s.be) }, s.ai, s.j1, s.j2, s.be)
	for i, d := range []*Device{s.j1, s.j2, s.ai, s.be} {
		if r, _ := d.Record(s.c, paint); r.Get("title") != "Aimee's late title" {
			t.Fatalf("device %d after Aimee signed her edit again: %+v", i, r)
		}
	}
	sameState(t, s.c, s.j1, s.j2, s.ai, s.be)
}

// Defect 4 of issue 22, first half: a writer's rename is refused up front
// with a message naming the owner (§8.3, §13.3); her device keeps the
// owner's name. Defect 5: nothing she did takes the owner's _meta off the
// hub — a device set up afterwards reads the list's name.
func TestWriterRenameRefused(t *testing.T) { epochNets(t, testWriterRenameRefused) }

func testWriterRenameRefused(t *testing.T, n epochNet) {
	s := shareStory(t, n.opts)
	err := s.ai.Rename(s.c, "Aimee's house")
	var e *Error
	if CodeOf(err) != CodeNotWritable || !asError(err, &e) || !strings.Contains(e.Message, "Jesper") {
		t.Fatalf("a writer's rename: %v, want CodeNotWritable naming the owner", err)
	}
	syncT(t, s.ai)
	syncT(t, s.ai)
	if names, _ := s.ai.Name(s.c); len(names) != 1 || names[0].String() != "House" {
		t.Fatalf("Aimee's device shows the name %v", names)
	}
	if st := s.ai.Status(); st.Refused != 0 || st.Pending != 0 {
		t.Fatalf("Aimee's status after the refused rename: %+v", st)
	}
	// A new device of Ben's, restored from his backup key, reads the
	// collection from the hub alone.
	b2, err := Restore(t.Context(), t.TempDir()+"/ben2", s.be.ShowBackupKey(), n.opts("Ben"))
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	syncUntil(t, "the restored device reads the collection", func() bool {
		st, _ := b2.CollectionState(s.c)
		return st == StateFollowing && sameBytes(t, s.c, s.j1, b2)
	}, s.j1, b2)
	if names, _ := b2.Name(s.c); len(names) != 1 || names[0].String() != "House" {
		t.Fatalf("a device restored afterwards reads the name %v", names)
	}
}

// Defect 4 of issue 22, second half: Aimee, offline, edits a record the
// owner meanwhile made her a reader of. Her device takes the edit out of
// the list, keeps it aside with the reason, does not count it as pending
// and shows the owner's value, which stays on the hub (§10.7, §11.6).
func TestDemotedWritersEditRefused(t *testing.T) { epochNets(t, testDemotedWritersEditRefused) }

func testDemotedWritersEditRefused(t *testing.T, n epochNet) {
	s := shareStory(t, n.opts)
	paint, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	s.syncAll(1)
	if err := s.ai.SetString(s.c, paint, "title", "Aimee's offline title"); err != nil {
		t.Fatal(err)
	}
	if err := s.ai.AddElement(s.c, paint, "tags", []byte("urgent")); err != nil {
		t.Fatal(err)
	}
	if err := s.j1.SetRole(t.Context(), s.c, s.ai.UserID(), RoleReader); err != nil {
		t.Fatal(err)
	}
	refused := syncUntil(t, "every device agrees after the demotion", func() bool {
		return roleT(t, s.ai, s.c) == RoleReader && sameBytes(t, s.c, s.j1, s.j2, s.ai, s.be)
	}, s.ai, s.j1, s.j2, s.be).Refused
	if roleT(t, s.ai, s.c) != RoleReader {
		t.Fatalf("Aimee's role: %q", roleT(t, s.ai, s.c))
	}
	for i, d := range []*Device{s.j1, s.j2, s.ai, s.be} {
		r, _ := d.Record(s.c, paint)
		if r.Get("title") != "Paint" || r.Fields["title"].Conflict() || len(r.Fields["tags"].Elements) != 0 {
			t.Fatalf("device %d: %+v", i, r)
		}
	}
	sameState(t, s.c, s.j1, s.j2, s.ai, s.be)
	ref, err := s.ai.Refused(s.c)
	if err != nil || len(ref) != 2 || refused != 2 {
		t.Fatalf("Aimee's refused edits: %v %+v (reported %d)", err, ref, refused)
	}
	kinds := map[EditKind]string{}
	for _, x := range ref {
		if x.Record() != paint || x.Why() != RefusedNotWriter || x.Why().Message() == "" {
			t.Fatalf("refused edit %+v", x)
		}
		kinds[x.Kind()] = string(x.Value()) + string(x.Element())
	}
	if kinds[EditSet] != "Aimee's offline title" || kinds[EditAdd] != "urgent" {
		t.Fatalf("refused edits: %v", kinds)
	}
	if st := s.ai.Status(); st.Refused != 2 || st.Pending != 0 {
		t.Fatalf("Aimee's status: %d refused, %d pending", st.Refused, st.Pending)
	}
	// They survive a restart, and discarding them is for good.
	dir := s.ai.dir
	s.ai.Close()
	s.ai = openT(t, dir, n.opts("Aimee"))
	if ref, _ := s.ai.Refused(s.c); len(ref) != 2 {
		t.Fatalf("after reopening: %d refused edits", len(ref))
	}
	if r, _ := s.ai.Record(s.c, paint); r.Get("title") != "Paint" {
		t.Fatalf("after reopening Aimee shows %+v", r)
	}
	if k, err := s.ai.DiscardRefused(s.c); err != nil || k != 2 {
		t.Fatalf("discard: %d %v", k, err)
	}
	s.ai.Close()
	s.ai = openT(t, dir, n.opts("Aimee"))
	if ref, _ := s.ai.Refused(s.c); len(ref) != 0 || s.ai.Status().Refused != 0 {
		t.Fatalf("after discarding and reopening: %d refused edits", len(ref))
	}
	syncT(t, s.ai)
	sameState(t, s.c, s.j1, s.ai)
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

// Defect 6 of issue 22: a deleted list takes nobody in. Every owner device
// refuses to make an invite; a request waiting for approval when the list
// was deleted, and one made afterwards on an old link, are declined with
// the reason, and the owner's devices list no request (§11.9).
func TestDeletedListRefusesJoins(t *testing.T) { epochNets(t, testDeletedListRefusesJoins) }

func testDeletedListRefusesJoins(t *testing.T, n epochNet) {
	s := shareStory(t, n.opts)
	link, err := s.j1.Invite(s.c, InviteOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	syncT(t, s.j2)
	dee := openT(t, t.TempDir()+"/dee", n.opts("Dee"))
	defer dee.Close()
	eve := openT(t, t.TempDir()+"/eve", n.opts("Eve"))
	defer eve.Close()
	if _, err := dee.Join(t.Context(), link.Payload, "Dee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, dee)
	syncT(t, s.j1)
	syncT(t, s.j2)
	if len(requestsT(t, s.j1, s.c)) != 1 {
		t.Fatalf("Dee's request before the deletion: %+v", requestsT(t, s.j1, s.c))
	}
	if err := s.j1.DeleteCollection(t.Context(), s.c); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j2)
	for i, d := range []*Device{s.j1, s.j2} {
		if _, err := d.Invite(s.c, InviteOptions{}); CodeOf(err) != CodeNotWritable {
			t.Fatalf("owner device %d made an invite to a deleted list: %v", i, err)
		}
	}
	if _, err := eve.Join(t.Context(), link.Payload, "Eve"); err != nil {
		t.Fatal(err)
	}
	syncT(t, eve)
	syncUntil(t, "Dee and Eve are told", func() bool {
		return whyDeclinedT(t, dee, s.c) != DeclineNone && whyDeclinedT(t, eve, s.c) != DeclineNone
	}, s.j1, s.j2, dee, eve)
	for i, d := range []*Device{s.j1, s.j2} {
		if reqs := requestsT(t, d, s.c); len(reqs) != 0 {
			t.Fatalf("owner device %d lists requests to a deleted list: %+v", i, reqs)
		}
	}
	for name, d := range map[string]*Device{"Dee": dee, "Eve": eve} {
		if membershipT(t, d, s.c) != MembershipDeclined || whyDeclinedT(t, d, s.c) != DeclineEnded {
			t.Fatalf("%s: %s, declined for %q", name, membershipT(t, d, s.c), whyDeclinedT(t, d, s.c))
		}
		if msg := whyDeclinedT(t, d, s.c).Message("Jesper", "House"); !strings.Contains(msg, "House was deleted") {
			t.Fatalf("%s is told %q", name, msg)
		}
	}
}

// Defect 3 of issue 22: Aimee, removed, destroys the old channel's
// messages, the announcement among them, before Ben (a writer) syncs. Ben
// moves on his verified grant and the roster in the new channel (§11.6),
// publishes his next edit where Aimee can't read it, and puts the
// announcement back, so Aimee's device learns she was removed.
func TestMoveOnVerifiedGrant(t *testing.T) { epochNets(t, testMoveOnVerifiedGrant) }

func testMoveOnVerifiedGrant(t *testing.T, n epochNet) {
	s := shareStory(t, n.opts)
	if err := s.j1.SetRole(t.Context(), s.c, s.be.UserID(), RoleWriter); err != nil {
		t.Fatal(err)
	}
	paint, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	s.syncAll(1)
	epoch0, _ := epochOf(s.ai, s.c)
	tag0, _, _ := s.ai.eng.EpochChannel([16]byte(s.c), epoch0)
	if err := s.j1.RemoveMember(t.Context(), s.c, s.ai.UserID()); err != nil {
		t.Fatal(err)
	}
	if destroyChannel(t, n.raw, tag0) == 0 {
		t.Fatal("nothing in the old channel to destroy")
	}
	syncT(t, s.be)
	syncT(t, s.be)
	if e, _ := epochOf(s.be, s.c); e == epoch0 {
		t.Fatal("Ben stayed in the old epoch: a verified grant did not move him")
	}
	if err := s.be.SetString(s.c, paint, "note", "for members only"); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.be)
	// Aimee, holding the old key, reads what the hub has: the announcement
	// is back in her channel, and Ben's edit is not there.
	syncUntil(t, "Aimee learns she was removed", func() bool { st, _ := s.ai.CollectionState(s.c); return st == StateRemoved }, s.ai)
	if r, _ := s.ai.Record(s.c, paint); r.Get("note") != "" {
		t.Fatalf("Ben published his edit where the removed member reads: %+v", r)
	}
	syncUntil(t, "Ben's edit reaches Jesper", func() bool {
		r, _ := s.j2.Record(s.c, paint)
		return r.Get("note") == "for members only" && sameBytes(t, s.c, s.j1, s.j2, s.be)
	}, s.j1, s.j2, s.be)
}
