package tandemcli_test

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestDeviceAddStepsAsideDovecot: device add shows the pairing code (it
// holds the mail password) only after the user says yes; while it waits
// for the new device, other commands on the profile work (lists, add);
// the pairing then completes and the new device has the list.
func TestDeviceAddStepsAsideDovecot(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	a, b := newDevice(t, "aimee-laptop"), newDevice(t, "aimee-phone")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a.ok("new", "House")

	r := a.runIn("n\n", "device", "add")
	wantErr(t, r, 1, "not shown (answer y to show it)")
	if r.out != "" || strings.Contains(r.err, pass) {
		t.Errorf("device add answered no still shows something: %q %q", r.out, r.err)
	}

	add := a.start("device", "add")
	add.prompt(`holds the password of IMAP ` + user + `@.*Show it\? \[y/N\] $`)
	time.Sleep(500 * time.Millisecond) // what was printed before the question has reached the test
	select {
	case l := <-add.out:
		t.Fatalf("device add printed %q before the user said yes", l)
	default:
	}
	io.WriteString(add.stdin, "y\n")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]

	// The profile is free while the code is shown.
	if out := a.ok("lists"); !strings.Contains(out, "House") {
		t.Errorf("lists while device add waits:\n%s", out)
	}
	a.ok("add", "House", "Milk")
	a.ok("sync")

	join := b.start("device", "join", payload, "--name", "Aimee")
	code := join.line(`^Code (\d{3} \d{3})$`)[1]
	add.prompt(`Add 'Aimee'\? Code ` + code + ` \[y/N\] `)
	io.WriteString(add.stdin, "y\n")
	add.line(`^Added 'Aimee'\.`)
	add.wait()
	join.line(`^This device is added`)
	join.wait()
	if out := b.ok("show", "House"); !strings.Contains(out, "Milk") {
		t.Errorf("the new device lacks what was added while device add waited:\n%s", out)
	}
}
