package tandemcli_test

import (
	"io"
	"strings"
	"testing"
)

// pairDevices adds to as a device of from's user, answering yes.
func pairDevices(t *testing.T, from, to *device, name string) {
	t.Helper()
	add := from.start("device", "add", "--yes")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]
	join := to.start("device", "join", payload, "--name", name)
	code := join.line(`^Code (\d{3} \d{3})$`)[1]
	add.prompt(`Add '` + name + `'\? Code ` + code + ` \[y/N\] `)
	io.WriteString(add.stdin, "y\n")
	add.wait()
	join.wait()
}

// TestShareSecondDevicesDovecot: Aimee shares a list by link with Jesper,
// who asks on his laptop; his phone syncs first after the approval. Every
// device of both (each has two) syncs: none says anything was "refused as
// not valid", and both of Jesper's devices have the list
// (docs/decisions/tandem-grant-other-device.md).
func TestShareSecondDevicesDovecot(t *testing.T) {
	addr, user, pass := imapAccount(t, "FERRY_DOVECOT_ADDR", "FERRY_DOVECOT_USERS", " ", declineUser, "10-dovecot.sh")
	a1, a2 := newDevice(t, "aimee-laptop"), newDevice(t, "aimee-phone")
	b1, b2 := newDevice(t, "jesper-laptop"), newDevice(t, "jesper-phone")
	a1.ok("init", "--name", "Aimee")
	a1.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a1.ok("new", "House")
	a1.ok("add", "House", "Milk")
	a1.ok("sync")
	pairDevices(t, a1, a2, "Aimee's phone")
	b1.ok("init", "--name", "Jesper")
	b1.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	b1.ok("sync")
	pairDevices(t, b1, b2, "Jesper's phone")
	b2.ok("sync")

	var inv struct{ Link string }
	a1.jsonOut(&inv, "share", "House", "--link")
	b1.ok("join", inv.Link)
	a2.ok("sync")
	if out := a2.ok("approve", "jesper"); !strings.Contains(out, "Jesper can now use House.") {
		t.Fatalf("approve: %s", out)
	}
	for range 2 {
		for _, d := range []*device{b2, b1, a1, a2} {
			if out := d.ok("sync"); strings.Contains(out, "refused") {
				t.Errorf("%s: sync after a normal share:\n%s", d.dir, out)
			}
		}
	}
	for _, d := range []*device{b1, b2} {
		if out := d.ok("show", "House"); !strings.Contains(out, "Milk") {
			t.Errorf("%s lacks the shared list:\n%s", d.dir, out)
		}
	}
}
