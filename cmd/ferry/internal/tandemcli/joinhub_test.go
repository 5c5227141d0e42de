package tandemcli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestJoinAfterConnectingDovecotCyrus: Aimee's list syncs through Dovecot.
// Jesper, who followed init's "Next" and connected his own account (Cyrus
// IMAP), then gets her link: ferry offers to switch his profile, which has
// no lists yet, to the invite's account; answering no changes nothing and
// says both ways on. Carol, whose profile has a list of its own on Cyrus,
// is told to join from a new profile, and that works.
func TestJoinAfterConnectingDovecotCyrus(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	caddr, cuser, cpass := cyrusIMAPAccount(t)
	a := newDevice(t, "aimee")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a.ok("new", "House")
	a.ok("add", "House", "Paint the door")
	var inv struct{ Link string }
	a.jsonOut(&inv, "share", "House", "--link")

	j := newDevice(t, "jesper")
	out := j.ok("init", "--name", "Jesper")
	if !strings.Contains(out, "ferry join LINK") || !strings.Contains(out, "ferry connect") {
		t.Errorf("init's Next does not name both ways in:\n%s", out)
	}
	j.okIn(cpass+"\n", "connect", "imap", caddr, "--user", cuser, "--security", "none", "--password-file", "-")
	before := j.stored()
	r := j.runIn("n\n", "join", inv.Link)
	wantErr(t, r, 1, "answer y to switch this profile to the invite's account, or join it from a new profile: ferry init --profile DIR")
	if !strings.Contains(r.err, "has no lists yet. Switch it to the invite's account and join? [y/N]") {
		t.Errorf("join does not offer to switch a profile without lists: %q", r.err)
	}
	if j.stored() != before {
		t.Error("a join answered no changed the profile")
	}
	out = j.okIn("y\n", "join", inv.Link)
	if !strings.Contains(out, "Waiting for Aimee to let you in.") {
		t.Fatalf("join after switching: %s", out)
	}
	var st struct{ Hub string }
	j.jsonOut(&st, "status")
	if !strings.Contains(st.Hub, user+"@") || !strings.Contains(st.Hub, addr) {
		t.Errorf("Jesper's profile syncs through %q, want the invite's %s", st.Hub, addr)
	}
	a.ok("approve", "Jesper")
	j.ok("sync")
	if out := j.ok("show", "House"); !strings.Contains(out, "Paint the door") {
		t.Errorf("Jesper does not have House:\n%s", out)
	}

	c := newDevice(t, "carol")
	c.ok("init", "--name", "Carol")
	c.okIn(cpass+"\n", "connect", "imap", caddr, "--user", cuser, "--security", "none", "--password-file", "-")
	c.ok("new", "Mine")
	before = c.stored()
	wantErr(t, c.runIn("y\n", "join", inv.Link), 1, "which has lists of its own: join it from a new profile: ferry init --profile DIR, then ferry join --profile DIR")
	if c.stored() != before {
		t.Error("a refused join changed Carol's profile")
	}
	second := filepath.Join(c.home, "carol-house")
	c.ok("init", "--profile", second, "--name", "Carol")
	if out := c.ok("join", "--profile", second, inv.Link); !strings.Contains(out, "Waiting for Aimee to let you in.") {
		t.Errorf("join from a new profile: %s", out)
	}
}
