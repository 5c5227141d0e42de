package tandemcli_test

import (
	"io"
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

	// A third device, paired with the code over JMAP.
	c := newDevice(t, "tablet")
	add := a.start("device", "add", "--yes")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]
	join := c.start("device", "join", payload, "--name", "Jesper")
	code := join.line(`^Code (\d{3} \d{3})$`)[1]
	add.prompt(`Add 'Jesper'\? Code ` + code + ` \[y/N\] `)
	io.WriteString(add.stdin, "y\n")
	add.wait()
	join.wait()
	if out := c.ok("show", "House"); !strings.Contains(out, "Paint the door  colour blue") {
		t.Fatalf("the paired tablet:\n%s", out)
	}
}

// TestStartOverCyrus: start-over gives a new identity and backup key,
// copies the user's own lists, names the others' lists to ask for again,
// and keeps the old device's files aside; on real Cyrus JMAP.
func TestStartOverCyrus(t *testing.T) {
	session, user, pass := cyrusAccount(t)
	a, o := newDevice(t, "jesper"), newDevice(t, "olga")
	pw := writeFile(t, "pw", pass)
	a.ok("init", "--name", "Jesper")
	a.ok("connect", "jmap", session, "--user", user, "--password-file", pw)
	a.ok("new", "Mine")
	a.ok("add", "Mine", "Bike", "wheels=2")
	a.ok("sync")
	o.ok("init", "--name", "Olga")
	o.ok("connect", "jmap", session, "--user", user, "--password-file", pw)
	o.ok("new", "Theirs")
	var inv struct{ Link string }
	o.jsonOut(&inv, "share", "Theirs", "--link")
	a.ok("join", inv.Link)
	o.ok("approve", "Jesper")
	a.ok("sync")
	var oldID struct{ User, BackupKey string }
	a.jsonOut(&oldID, "backup-key", "--yes")

	wantErr(t, a.runIn("n\n", "start-over"), 1, "nothing changed (answer y to start over)")
	out := a.okIn("y\n", "start-over")
	for _, want := range []string{"Your new backup key:", "Write this down.", "Copied Mine (1 item(s))", "Theirs is someone else's list: ask its owner to invite you again.", "abandoned-"} {
		if !strings.Contains(out, want) {
			t.Errorf("start-over lacks %q:\n%s", want, out)
		}
	}
	var key struct {
		BackupKey string `json:"backup_key"`
	}
	a.jsonOut(&key, "backup-key", "--yes")
	if key.BackupKey == "" || key.BackupKey == oldID.BackupKey {
		t.Fatalf("backup key after start-over %q", key.BackupKey)
	}
	if out := a.ok("show", "Mine"); !strings.Contains(out, "Bike  wheels 2") {
		t.Errorf("the copy of Mine:\n%s", out)
	}
	if out := a.ok("lists"); strings.Contains(out, "Theirs") {
		t.Errorf("the new identity follows Theirs:\n%s", out)
	}
	var st struct{ Connection string }
	a.jsonOut(&st, "status")
	if st.Connection != "ok" {
		t.Errorf("status after start-over: %+v", st)
	}
}
