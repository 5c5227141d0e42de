package tandem

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// shareWith has owner invite d to c by QR and d join (§11.1–11.4).
func shareWith(t *testing.T, owner, d *Device, c CollectionID, name string) {
	t.Helper()
	inv, err := owner.Invite(c, InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, owner)
	if _, err := d.Join(t.Context(), inv.Payload, name); err != nil {
		t.Fatal(err)
	}
	syncT(t, d)
	syncT(t, owner)
	syncT(t, d)
	if st, err := d.CollectionState(c); err != nil || st != StateFollowing || membershipT(t, d, c) != MembershipActive {
		t.Fatalf("the shared collection: %v %v %v", st, membershipT(t, d, c), err)
	}
}

// Start over (§6.4): a new identity in a new directory; the user's own
// list copied with its current items as the new identity's writes
// (§11.8: deleted records and old signatures not carried, one value of a
// conflict), another user's list given back to ask for again.
func TestStartOver(t *testing.T) {
	srv := memhub.NewServer()
	startOverStory(t, Options{Store: memStore(srv)})
}

// The same on Dovecot.
func TestStartOverDovecot(t *testing.T) {
	h, _ := pairHub(t, "dovecot")
	startOverStory(t, Options{Hub: h})
}

func startOverStory(t *testing.T, on Options) {
	tmp := t.TempDir()
	with := func(name string) Options { o := on; o.Name, o.Logger = name, quiet(); return o }
	a := openT(t, filepath.Join(tmp, "a"), with("Jesper"))
	defer a.Close()
	own, _ := a.NewCollection("Groceries")
	milk, _ := a.NewRecord(own, map[string][]byte{"title": []byte("Milk"), "qty": []byte("2")})
	a.AddElement(own, milk, "tags", []byte("dairy"))
	a.AddElement(own, milk, "tags", []byte("cold"))
	a.RemoveElement(own, milk, "tags", []byte("cold"))
	bread, _ := a.NewRecord(own, map[string][]byte{"title": []byte("Bread")})
	a.Delete(own, bread)
	eggs, _ := a.NewRecord(own, map[string][]byte{"title": []byte("Eggs")})
	syncT(t, a)
	// A conflict: a second device of Jesper's and this one set eggs' qty.
	a2, err := Restore(t.Context(), filepath.Join(tmp, "a2"), a.ShowBackupKey(), with(""))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	syncT(t, a2)
	a.SetString(own, eggs, "qty", "6")
	a2.SetString(own, eggs, "qty", "12")
	syncT(t, a2)
	syncT(t, a)
	if r, _ := a.Record(own, eggs); !r.Fields["qty"].Conflict() {
		t.Fatal("no conflict to copy")
	}

	// Aimee shares House with Jesper (§11.1–11.4), and Garden, which he
	// then leaves (§11.5).
	b := openT(t, filepath.Join(tmp, "b"), with("Aimee"))
	defer b.Close()
	house, _ := b.NewCollection("House")
	garden, _ := b.NewCollection("Garden")
	for _, c := range []CollectionID{house, garden} {
		shareWith(t, b, a, c, "Jesper")
	}
	shareWith(t, a, b, own, "Aimee") // Jesper's own list, shared with Aimee
	if err := a.Leave(garden); err != nil {
		t.Fatal(err)
	}
	syncT(t, a)

	if _, err := a.StartOver(t.Context(), filepath.Join(tmp, "a"), Options{}); CodeOf(err) != CodeExists {
		t.Fatalf("starting over in the device's own directory: %v", err)
	}
	full := filepath.Join(tmp, "full")
	os.Mkdir(full, 0o700)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	if _, err := a.StartOver(t.Context(), full, Options{}); CodeOf(err) != CodeExists {
		t.Fatalf("starting over in a directory that is not empty: %v", err)
	}

	res, err := a.StartOver(t.Context(), filepath.Join(tmp, "new"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := res.Device
	defer n.Close()
	if n.UserID() == a.UserID() || n.DeviceID() == a.DeviceID() {
		t.Fatal("starting over kept the identity or the device ID")
	}
	if key, ok := n.BackupKey(); !ok || key == a.ShowBackupKey() {
		t.Fatal("the new identity has no new backup key to show")
	}
	if !slices.Equal(res.AskAgain, []CollectionID{house}) {
		t.Fatalf("AskAgain = %v, want Aimee's House %v", res.AskAgain, house)
	}
	if len(res.Copies) != 1 || res.Copies[0].From != own || res.Copies[0].Name != "Groceries" || res.Copies[0].Records != 2 {
		t.Fatalf("Copies = %+v", res.Copies)
	}
	cp := res.Copies[0].To
	checkStartOverCopy(t, n, cp, milk, eggs, bread)
	// The copy is private: people are invited again (§13.2).
	if ms, err := n.Members(cp); err != nil || len(ms) != 1 || ms[0].User != n.UserID() || ms[0].Role != RoleOwner {
		t.Fatalf("members of the copy: %+v %v", ms, err)
	}

	// The copy is published: another device of the new identity finds it.
	syncT(t, n)
	n2, err := Restore(t.Context(), filepath.Join(tmp, "n2"), n.ShowBackupKey(), with(""))
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	syncT(t, n2)
	checkStartOverCopy(t, n2, cp, milk, eggs, bread)
	// The old identity is untouched.
	if r, err := a.Record(own, milk); err != nil || r.Get("title") != "Milk" {
		t.Fatalf("the old list after starting over: %v %+v", err, r)
	}
}

func checkStartOverCopy(t *testing.T, n *Device, cp CollectionID, milk, eggs, bread RecordID) {
	t.Helper()
	if names, _ := n.Name(cp); len(names) != 1 || names[0].String() != "Groceries" || names[0].Author.User != n.UserID() {
		t.Fatalf("the copy's name: %+v", names)
	}
	recs, err := n.Records(cp)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Deleted || recs[1].Deleted {
		t.Fatalf("the copy holds %+v; want milk and eggs, no tombstone of bread", recs)
	}
	if _, err := n.Record(cp, bread); CodeOf(err) != CodeNotFound {
		t.Fatalf("the deleted record in the copy: %v", err)
	}
	m, _ := n.Record(cp, milk)
	if m.Get("title") != "Milk" || m.Get("qty") != "2" || len(m.Fields["tags"].Elements) != 1 || string(m.Fields["tags"].Elements[0]) != "dairy" {
		t.Fatalf("milk in the copy: %+v", m)
	}
	e, _ := n.Record(cp, eggs)
	if q := e.Fields["qty"]; q.Conflict() || (e.Get("qty") != "6" && e.Get("qty") != "12") {
		t.Fatalf("eggs in the copy: %+v", e)
	}
	for _, r := range recs {
		for f, fl := range r.Fields {
			for _, v := range fl.Values {
				if v.Author.User != n.UserID() {
					t.Fatalf("%s of a copied record is by %v, not the new identity", f, v.Author.User)
				}
			}
		}
	}
}
