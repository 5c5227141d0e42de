package tandemcli_test

import (
	"strings"
	"testing"
)

// TestRefusedEditsDovecot (issue 24 point 4): Jesper adds an item and
// edits another offline while Aimee, the owner, makes him a reader. His
// edits are not shared: sync and status don't call the list synced, show
// marks them "not shared" and says why, and ferry refused copies them
// into a list he owns; a second refused edit is discarded.
func TestRefusedEditsDovecot(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	a, b := newDevice(t, "aimee"), newDevice(t, "jesper")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a.ok("new", "House")
	a.ok("add", "House", "Paint the door", "colour=green")
	a.ok("sync")
	b.ok("init", "--name", "Jesper")
	var inv struct{ Link string }
	a.jsonOut(&inv, "share", "House", "--link")
	b.ok("join", inv.Link)
	a.ok("sync")
	a.ok("approve", "jesper")
	b.ok("sync")
	if out := b.ok("show", "House"); !strings.Contains(out, "Paint the door  colour green") {
		t.Fatalf("Jesper does not have House:\n%s", out)
	}

	// Offline, Jesper edits; meanwhile Aimee makes him a reader.
	b.ok("add", "House", "Sweep the stairs")
	b.ok("set", "House", "Paint the door", "colour=red")
	a.ok("role", "House", "Jesper", "reader")
	b.ok("sync")
	out := b.ok("sync")
	if strings.Contains(out, "Synced:") || !strings.Contains(out, "2 of your edit(s) were not shared") {
		t.Errorf("Jesper's sync after his edits were refused:\n%s", out)
	}
	out = b.ok("show", "House")
	if !strings.Contains(out, "House  (1 item(s)") || !strings.Contains(out, "Paint the door  colour green") ||
		!strings.Contains(out, "Not shared: 2 of your edit(s)") || !strings.Contains(out, "Sweep the stairs: title = Sweep the stairs (not shared: you were made a reader") ||
		!strings.Contains(out, "Paint the door: colour = red (not shared: you were made a reader") {
		t.Errorf("Jesper's show after his edits were refused:\n%s", out)
	}
	out = b.ok("status")
	if !strings.Contains(out, "not shared") || !strings.Contains(out, "ferry refused") || strings.Contains(out, " synced ") {
		t.Errorf("Jesper's status after his edits were refused:\n%s", out)
	}
	var st struct {
		Refused int
		Lists   []struct{ State string }
	}
	b.jsonOut(&st, "status")
	if st.Refused != 2 || len(st.Lists) != 1 || st.Lists[0].State != "not shared" {
		t.Errorf("status --json: %+v", st)
	}
	a.ok("sync")
	if out := a.ok("show", "House"); strings.Contains(out, "Sweep") || strings.Contains(out, "colour red") {
		t.Errorf("a refused edit reached the owner:\n%s", out)
	}

	// Copied into a list he owns, and gone from House's "not shared".
	b.ok("new", "Mine")
	if out := b.ok("refused", "House", "--copy-to", "Mine"); !strings.Contains(out, "Copied 2 item(s) with your 2 unshared edit(s) into Mine") {
		t.Errorf("refused --copy-to:\n%s", out)
	}
	out = b.ok("show", "Mine")
	if !strings.Contains(out, "Sweep the stairs") || !strings.Contains(out, "Paint the door  colour red") {
		t.Errorf("Mine after the copy:\n%s", out)
	}
	if out := b.ok("show", "House"); strings.Contains(out, "Not shared") {
		t.Errorf("House still shows the copied edits as not shared:\n%s", out)
	}
	if out := b.ok("sync"); !strings.Contains(out, "Synced:") {
		t.Errorf("sync once nothing is refused:\n%s", out)
	}

	// A writer again, an offline edit, a reader again: discarded.
	a.ok("role", "House", "Jesper", "writer")
	b.ok("sync")
	b.ok("add", "House", "Fix the tap")
	a.ok("role", "House", "Jesper", "reader")
	b.ok("sync")
	b.ok("sync")
	if out := b.ok("refused", "House"); !strings.Contains(out, "Fix the tap") {
		t.Errorf("refused after the second demotion:\n%s", out)
	}
	if out := b.ok("refused", "House", "--discard"); !strings.Contains(out, "Dropped 1 unshared edit(s) of House.") {
		t.Errorf("refused --discard:\n%s", out)
	}
	if out := b.ok("refused", "House"); !strings.Contains(out, "All your edits of House were shared.") {
		t.Errorf("refused after discarding:\n%s", out)
	}
	if out := b.ok("show", "House"); strings.Contains(out, "Fix the tap") {
		t.Errorf("a discarded edit is still shown:\n%s", out)
	}
}
