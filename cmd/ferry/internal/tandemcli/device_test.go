package tandemcli_test

import (
	"errors"
	"io"
	"os/exec"
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

// declineUser is the Dovecot account of TestDeviceJoinDeclinedDovecot,
// used by no other test on Dovecot.
const declineUser = "uma"

// TestDeviceJoinDeclinedDovecot: device add answered no tells the new
// device, whose device join ends long before the code expires (two
// minutes) with one line saying the other device said no, and exit 1;
// device add goes on waiting for another request
// (docs/decisions/tandem-pairing-refusal.md).
func TestDeviceJoinDeclinedDovecot(t *testing.T) {
	addr, user, pass := imapAccount(t, "FERRY_DOVECOT_ADDR", "FERRY_DOVECOT_USERS", " ", declineUser, "10-dovecot.sh")
	a, b := newDevice(t, "uma-laptop"), newDevice(t, "uma-phone")
	a.ok("init", "--name", "Uma")
	a.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")

	add := a.start("device", "add")
	add.prompt(`Show it\? \[y/N\] $`)
	io.WriteString(add.stdin, "y\n")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]

	join := b.start("device", "join", payload, "--name", "Uma's phone")
	code := join.line(`^Code (\d{3} \d{3})$`)[1]
	add.prompt(`Add 'Uma's phone'\? Code ` + code + ` \[y/N\] `)
	io.WriteString(add.stdin, "n\n")
	add.line(`^Not added\. Waiting for another request`)

	// Within a minute, while the code still works: the old behaviour
	// waited for the expiry, two minutes.
	msg := join.prompt(`ferry: [^\n]*\n`)[0]
	if !strings.Contains(msg, "The other device said no") {
		t.Errorf("device join after the no: %q", msg)
	}
	humanLine(t, msg)
	err := join.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("device join after the no: %v, want exit 1", err)
	}
	if r := b.run("lists"); r.code == 0 {
		t.Errorf("the declined device has a profile with lists: %q", r.out)
	}
}
