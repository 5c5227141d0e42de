package tandemcli_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// setUp makes device a (init + connect to Dovecot) and device b (restore
// from a's backup key, connect with the text of a's hub QR).
func setUpPair(t *testing.T) (a, b *device) {
	addr, user, pass := dovecotAccount(t)
	a, b = newDevice(t, "aimee-laptop"), newDevice(t, "aimee-phone")
	out := a.ok("init", "--name", "Aimee")
	key := regexp.MustCompile(`(?m)^    ((?:[a-z2-7]{4} ){13}[a-z2-7]{4})$`).FindStringSubmatch(out)
	if key == nil || !strings.Contains(out, "Write this down. It's the only way back in if you lose every device.") {
		t.Fatalf("init does not show the backup key with the §6.3 sentence:\n%s", out)
	}
	before := a.stored()
	a.env = []string{"FERRY_PASSWORD=" + pass}
	wantErr(t, a.run("connect", "imap", addr, "--user", user, "--security", "starttls"), 1, "the certificate of "+addr+" is signed by an authority this computer does not know (unknown issuer)") // Dovecot starts TLS with its own certificate
	a.env = []string{"FERRY_PASSWORD=wrong"}
	wantErr(t, a.run("connect", "imap", addr, "--user", user, "--security", "none"), 1, addr+" refused this user name and password: check them and connect again")
	if a.stored() != before {
		t.Fatal("a refused connect changed the profile")
	}
	a.env = []string{"FERRY_PASSWORD=" + pass}
	out = a.ok("connect", "imap", addr, "--user", user, "--security", "none")
	if !strings.Contains(out, "Connected to IMAP "+user+"@") {
		t.Fatalf("connect: %s", out)
	}
	a.env = nil
	if r := a.run("init", "--name", "Aimee"); r.code != 1 || !strings.Contains(r.err, "already holds a device") {
		t.Fatalf("second init: %+v", r)
	}
	b.okIn(key[1]+"\n", "restore", "--name", "Aimee", "--backup-key-file", "-")
	qr := a.okIn("y\n", "hub", "qr")
	if !strings.Contains(qr, "▀") && !strings.Contains(qr, "▄") {
		t.Fatalf("hub qr shows no QR code:\n%s", qr)
	}
	var text string
	for _, l := range strings.Split(qr, "\n") {
		if strings.HasPrefix(l, `{"kind":"imap"`) {
			text = l
		}
	}
	if text == "" {
		t.Fatalf("hub qr shows no text form:\n%s", qr)
	}
	b.okIn(text+"\n", "connect", "paste")
	return a, b
}

// TestTwoDevicesDovecot: two profiles of one person keep a list in sync
// through real Dovecot: init, connect, restore from the backup key,
// connect from the hub QR's text, every list command, a conflict shown
// with its authors by name, settling it, and sync --watch printing a
// change from the other device and stopping on Ctrl-C.
func TestTwoDevicesDovecot(t *testing.T) {
	a, b := setUpPair(t)
	a.ok("new", "Groceries")
	a.ok("add", "Groceries", "Milk", "qty=1", "--tag", "dairy")
	a.ok("add", "groceries", "Eggs", "qty=12")
	a.ok("add", "Groceries", "Bread")
	a.ok("sync")
	if out := b.ok("sync"); !strings.Contains(out, "New list \"Groceries\"") || !strings.Contains(out, "Synced: 0 sent, ") {
		t.Errorf("b's first sync does not say what arrived:\n%s", out)
	}
	if out := b.ok("show", "Groceries"); !strings.Contains(out, "Milk  qty 1  #dairy") || !strings.Contains(out, "Eggs  qty 12") {
		t.Fatalf("b does not see a's items:\n%s", out)
	}
	// Concurrent edits: a conflict, add-wins tags, done, delete, rename.
	a.ok("set", "Groceries", "Milk", "qty=2")
	a.ok("untag", "Groceries", "Milk", "dairy")
	b.ok("set", "Groceries", "milk", "qty=3")
	b.ok("tag", "Groceries", "Milk", "dairy", "cold")
	b.ok("done", "Groceries", "Eggs")
	b.ok("rm", "Groceries", "Bread")
	a.ok("rename", "Groceries", "Food")
	a.ok("sync")
	b.ok("sync")
	a.ok("sync")
	// Both values are Aimee's, from her two devices: show says which is which.
	for i, d := range []*device{a, b} {
		out := d.ok("show", "Food")
		want := []string{`2 \(by Aimee, on this device\) \| 3 \(by Aimee, on device [0-9a-f]{6}\)`, `2 \(by Aimee, on device [0-9a-f]{6}\) \| 3 \(by Aimee, on this device\)`}[i]
		if !regexp.MustCompile(`\[ \] Milk  qty CONFLICT ` + want + `  #cold #dairy`).MatchString(out) {
			t.Errorf("%s: show lacks the conflict by device %q:\n%s", d.dir, want, out)
		}
		if !strings.Contains(out, "[x] Eggs  qty 12") {
			t.Errorf("%s: show lacks Eggs done:\n%s", d.dir, out)
		}
		if strings.Contains(out, "Bread") {
			t.Errorf("%s: Bread is not deleted:\n%s", d.dir, out)
		}
	}
	if out := a.ok("show", "Food", "--all"); !strings.Contains(out, "Bread  (deleted)") { // deleted on b: a's sync saw it go
		t.Errorf("show --all lacks the title of the item b deleted:\n%s", out)
	}
	if a.ok("show", "Food", "--json") != b.ok("show", "Food", "--json") {
		t.Fatal("the two devices show different lists")
	}
	out := a.ok("copy", "Food", "Food 2")
	if !strings.Contains(out, "1 field(s) in conflict were copied with their first value") {
		t.Errorf("copy: %s", out)
	}
	if out := a.ok("show", "Food 2"); !strings.Contains(out, "[ ] Milk  qty 2  #cold #dairy") || !strings.Contains(out, "[x] Eggs  qty 12") {
		t.Errorf("copy of Food:\n%s", out)
	}
	a.ok("set", "Food", "Milk", "qty=4") // settles the conflict
	a.ok("sync")

	// sync --watch on b prints a's change, then stops on Ctrl-C.
	watch := exec.Command(ferryBin, "sync", "--watch")
	watch.Env = []string{"HOME=" + b.home, "FERRY_HOME=" + b.dir, "PATH=" + os.Getenv("PATH")}
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine(t, lines, "Milk: qty 4")
	a.ok("add", "Food", "Coffee", "qty=1")
	a.ok("sync")
	waitLine(t, lines, "Food: + Coffee (by Aimee)")
	if out := b.ok("show", "Food"); !strings.Contains(out, "Coffee") { // the profile is free between rounds
		t.Errorf("b, while watching, does not show Coffee:\n%s", out)
	}
	watch.Process.Signal(syscall.SIGINT)
	waitLine(t, lines, "Stopped.")
	if err := watch.Wait(); err != nil {
		t.Errorf("sync --watch after Ctrl-C: %v (want exit 0)", err)
	}
	if out := b.ok("show", "Food"); !strings.Contains(out, "Milk  qty 4") {
		t.Errorf("conflict not settled on b:\n%s", out)
	}
	var st struct {
		Connection string
		Pending    int
		Lists      []struct{ Name, State string }
	}
	b.jsonOut(&st, "status")
	if st.Connection != "ok" || st.Pending != 0 || len(st.Lists) != 2 || st.Lists[0].State != "synced" || st.Lists[0].Name != "Food" {
		t.Errorf("status %+v", st)
	}
	b.ok("add", "Food", "Tea")
	b.jsonOut(&st, "status")
	if st.Pending == 0 || st.Lists[0].State != "behind" {
		t.Errorf("status after an unsent edit %+v, want behind", st)
	}
}

// waitLine reads lines until one contains want, for at most 30 s.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var seen []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended without %q: %q", want, seen)
			}
			seen = append(seen, l)
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no line with %q in 30s: %q", want, seen)
		}
	}
}
