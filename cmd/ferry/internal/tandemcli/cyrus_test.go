package tandemcli_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestJMAPCyrus: connect finds the session from the bare origin
// (/.well-known/jmap), a wrong password is one line and saves nothing,
// and two devices keep a list in sync through real Cyrus JMAP.
func TestJMAPCyrus(t *testing.T) {
	session, user, pass := cyrusAccount(t)
	u, err := url.Parse(session)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host + "/"
	a, b := newDevice(t, "laptop"), newDevice(t, "phone")
	a.ok("init", "--name", "Jesper")

	before := a.stored()
	a.env = []string{"FERRY_PASSWORD=wrong"}
	wantErr(t, a.run("connect", "jmap", origin, "--user", user), 1, u.Host+" refused this user name and password (or token): check them and connect again")
	if a.stored() != before {
		t.Fatal("a refused connect changed the profile")
	}
	a.env = nil
	pw := writeFile(t, "pw", pass+"\n")
	out := a.ok("connect", "jmap", origin, "--user", user, "--password-file", pw)
	if !strings.Contains(out, "Connected to JMAP "+origin+".well-known/jmap") && !strings.Contains(out, "Connected to JMAP http://"+u.Host) {
		t.Fatalf("connect: %s", out)
	}
	a.ok("new", "House")
	a.ok("add", "House", "Paint the door", "colour=green")
	a.ok("sync")

	key := a.okIn("yes\n", "backup-key")
	b.okIn(strings.SplitN(key, "\n", 2)[0]+"\n", "restore", "--name", "Jesper", "--backup-key-file", "-")
	var hq struct{ Text string }
	a.jsonOut(&hq, "hub", "qr", "--yes")
	b.okIn(hq.Text, "connect", "paste")
	if out := b.ok("show", "House"); !strings.Contains(out, "Paint the door  colour green") {
		t.Fatalf("b after connect:\n%s", out)
	}
	b.ok("set", "House", "Paint the door", "colour=blue")
	b.ok("sync")
	a.ok("sync")
	if out := a.ok("show", "House", "paint the door"); !strings.Contains(out, "colour     blue  by Jesper") {
		t.Fatalf("a does not see b's edit:\n%s", out)
	}
}
