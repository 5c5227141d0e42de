package tandem

import (
	"path/filepath"
	"testing"
	"time"
)

// sharing is the §13.2 story on one hub: Jesper (two devices) shares
// "House" with Aimee by QR (approved automatically on the device that
// showed it) and with Ben, as a reader, by link (approved on Jesper's
// second device).
type sharing struct {
	t                   *testing.T
	j1, j2, ai, ai2, be *Device
	c                   CollectionID
}

func shareStory(t *testing.T, opts func(name string) Options) *sharing {
	dir := t.TempDir()
	s := &sharing{t: t}
	s.j1 = openT(t, filepath.Join(dir, "j1"), opts("Jesper"))
	var err error
	if s.c, err = s.j1.NewCollection("House"); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	// Jesper's second device is added by pairing (§6.3).
	s.j2, _ = pairT(t, s.j1, filepath.Join(dir, "j2"), opts("Jesper's laptop"))
	syncT(t, s.j2)
	s.ai = openT(t, filepath.Join(dir, "aimee"), opts("Aimee"))
	s.be = openT(t, filepath.Join(dir, "ben"), opts("Ben"))
	t.Cleanup(func() {
		for _, d := range []*Device{s.j1, s.j2, s.ai, s.ai2, s.be} {
			if d != nil {
				d.Close()
			}
		}
	})

	// Aimee, by QR: approved automatically.
	qr, err := s.j1.Invite(s.c, InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1) // the invite record reaches home; its channel is watched
	if _, err := s.ai.Join(t.Context(), qr.Payload, "Aimee"); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.ai)
	if m := membershipT(t, s.ai, s.c); m != MembershipWaiting {
		t.Fatalf("Aimee before approval: %q", m)
	}
	syncT(t, s.j1) // admits, grants
	syncT(t, s.ai)
	if m := membershipT(t, s.ai, s.c); m != MembershipActive {
		t.Fatalf("Aimee after the QR: %q", m)
	}
	if st, _ := s.ai.CollectionState(s.c); st != StateFollowing {
		t.Fatalf("Aimee's collection: %s", st)
	}
	// Aimee's second device, from her backup key, finds House in her home.
	o := opts("Aimee")
	o.Logger = quiet()
	if s.ai2, err = Restore(t.Context(), filepath.Join(dir, "aimee2"), s.ai.ShowBackupKey(), o); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.ai2)
	if st, _ := s.ai2.CollectionState(s.c); st != StateFollowing {
		t.Fatalf("Aimee's second device: %s", st)
	}

	// Ben, by link as a reader: approved on Jesper's second device.
	link, err := s.j1.Invite(s.c, InviteOptions{Link: true, Role: RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, s.j1)
	syncT(t, s.j2)
	if _, err := s.be.Join(t.Context(), link.Link, "Ben"); err != nil {
		t.Fatal(err)
	}
	// On Cyrus, a message appended over IMAP can take a moment to show
	// over JMAP: sync until both owner devices have the request, for at
	// most a minute.
	for deadline := time.Now().Add(time.Minute); ; {
		syncT(t, s.be)
		syncT(t, s.j1)
		syncT(t, s.j2)
		if len(requestsT(t, s.j1, s.c)) > 0 && len(requestsT(t, s.j2, s.c)) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	reqs := requestsT(t, s.j2, s.c)
	if len(reqs) != 1 || reqs[0].Name != "Ben" || reqs[0].Role != RoleReader {
		t.Fatalf("Jesper's second device sees requests %+v", reqs)
	}
	if len(requestsT(t, s.j1, s.c)) != 1 {
		t.Fatal("a link request was not left for the owner to approve on the first device too")
	}
	if err := s.j2.Approve(t.Context(), reqs[0].ID); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.be)
	if m := membershipT(t, s.be, s.c); m != MembershipActive {
		t.Fatalf("Ben after approval: %q", m)
	}
	for _, d := range []*Device{s.j1, s.j2, s.ai, s.be} {
		syncT(t, d)
	}
	return s
}

func (s *sharing) all() []*Device { return []*Device{s.j1, s.j2, s.ai, s.ai2, s.be} }

func (s *sharing) syncAll(rounds int) {
	for range rounds {
		for _, d := range s.all() {
			syncT(s.t, d)
		}
	}
}

func TestSharingStory(t *testing.T) {
	srv := memhubServer(t)
	s := shareStory(t, func(name string) Options { return Options{Name: name, Store: memStore(srv)} })
	runSharingChecks(t, s)
}

func runSharingChecks(t *testing.T, s *sharing) {
	ms, err := s.ai.Members(s.c)
	if err != nil || len(ms) != 3 {
		t.Fatalf("members seen by Aimee: %v %+v", err, ms)
	}
	roles := map[string]Role{}
	for _, m := range ms {
		roles[m.Name] = m.Role
	}
	if roles["Jesper"] != RoleOwner || roles["Aimee"] != RoleWriter || roles["Ben"] != RoleReader {
		t.Fatalf("roles %v", roles)
	}
	// Concurrent edits on every writer's device converge everywhere.
	paint, _ := s.j1.NewRecord(s.c, map[string][]byte{"title": []byte("Paint")})
	s.syncAll(1)
	s.j2.SetString(s.c, paint, "color", "blue")
	s.ai.SetString(s.c, paint, "color", "green")
	s.ai.AddElement(s.c, paint, "tags", []byte("garage"))
	if err := s.be.SetString(s.c, paint, "color", "red"); CodeOf(err) != CodeNotWritable {
		t.Fatalf("Ben, a reader, wrote: %v", err)
	}
	s.syncAll(2)
	want := stateOf(t, s.j1, s.c)
	for i, d := range s.all() {
		if !bytesEqual(stateOf(t, d, s.c), want) {
			t.Fatalf("device %d differs", i)
		}
	}
	r, _ := s.be.Record(s.c, paint)
	if got := r.Fields["color"].Strings(); len(got) != 2 {
		t.Fatalf("color on Ben's device: %v, want the two concurrent values", got)
	}
	if a := r.Fields["tags"]; len(a.Elements) != 1 {
		t.Fatalf("tags %+v", a)
	}
	for _, v := range r.Fields["color"].Values {
		if v.Author.Name != "Jesper" && v.Author.Name != "Aimee" {
			t.Fatalf("author %+v", v.Author)
		}
	}
	// Aimee leaves; Jesper sees it.
	if err := s.ai.Leave(s.c); err != nil {
		t.Fatal(err)
	}
	syncT(t, s.ai)
	syncT(t, s.j1)
	if l := pendingLeavesT(t, s.j1, s.c); len(l) != 1 || l[0].Name != "Aimee" {
		t.Fatalf("pending leaves %+v", l)
	}
	if slicesContains(s.ai.Collections(), s.c) {
		t.Fatal("Aimee still follows House after leaving")
	}
	syncT(t, s.ai2)
	if slicesContains(s.ai2.Collections(), s.c) {
		t.Fatal("Aimee's second device still follows House after she left on the first")
	}
}

func slicesContains(cs []CollectionID, c CollectionID) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
