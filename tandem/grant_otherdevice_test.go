package tandem

import (
	"path/filepath"
	"testing"
	"time"
)

// Jesper asks to join by link on his first device; his second device
// syncs first after the approval, and reads the grant in the same pull as
// the home record of the request. That is normal sharing traffic: nothing
// is refused on any device, and both follow the list
// (docs/decisions/tandem-grant-other-device.md).
func TestGrantReadByOtherDevice(t *testing.T) { forPairNets(t, testGrantReadByOtherDevice) }

func testGrantReadByOtherDevice(t *testing.T, n pairNet) {
	dir := t.TempDir()
	a := openT(t, filepath.Join(dir, "a"), n.with("Aimee"))
	defer a.Close()
	c, err := a.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, a)
	b1 := openT(t, filepath.Join(dir, "b1"), n.with("Jesper"))
	defer b1.Close()
	syncT(t, b1)
	b2, _ := pairT(t, b1, filepath.Join(dir, "b2"), n.with("Jesper's phone"))
	defer b2.Close()
	syncT(t, b2)

	link, err := a.Invite(c, InviteOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, a)
	if _, err := b1.Join(t.Context(), link.Link, "Jesper"); err != nil {
		t.Fatal(err)
	}
	syncT(t, b1)
	for deadline := time.Now().Add(time.Minute); len(requestsT(t, a, c)) == 0 && time.Now().Before(deadline); {
		syncT(t, a)
	}
	reqs := requestsT(t, a, c)
	if len(reqs) != 1 {
		t.Fatalf("the owner's requests: %+v", reqs)
	}
	if err := a.Approve(t.Context(), reqs[0].ID); err != nil {
		t.Fatal(err)
	}
	if rep := syncT(t, b2); rep.Rejected != 0 {
		t.Fatalf("Jesper's second device refused normal sharing traffic: %+v", rep)
	}
	for range 2 {
		for _, d := range []*Device{b1, b2, a} {
			if rep := syncT(t, d); rep.Rejected != 0 {
				t.Fatalf("%s refused normal sharing traffic: %+v", d.dir, rep)
			}
		}
	}
	for _, d := range []*Device{b1, b2} {
		if m := membershipT(t, d, c); m != MembershipActive {
			t.Fatalf("%s after the approval: %q", d.dir, m)
		}
		if st := d.Status(); st.Rejected != 0 {
			t.Fatalf("%s status: %d refused", d.dir, st.Rejected)
		}
	}

	// Jesper leaves; a device he adds later reads the old grant still in
	// his inbox: an answer to a request that is over, not a refusal.
	if err := b1.Leave(c); err != nil {
		t.Fatal(err)
	}
	for _, d := range []*Device{b1, b2, a, b1} {
		syncT(t, d)
	}
	b3, _ := pairT(t, b1, filepath.Join(dir, "b3"), n.with("Jesper's tablet"))
	defer b3.Close()
	if rep := syncT(t, b3); rep.Rejected != 0 {
		t.Fatalf("a device added after leaving refused the old grant: %+v", rep)
	}
}
