package tandemcli_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// proc is a ferry process whose output the test reads as it comes.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    chan string // stdout lines
	errOut chan string // stderr chunks (prompts end without a newline)
}

func (d *device) start(args ...string) *proc {
	d.t.Helper()
	cmd := exec.Command(ferryBin, args...)
	cmd.Env = append([]string{"HOME=" + d.home, "FERRY_HOME=" + d.dir, "PATH=" + os.Getenv("PATH")}, d.env...)
	p := &proc{t: d.t, cmd: cmd, out: make(chan string, 200), errOut: make(chan string, 200)}
	p.stdin, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.out <- sc.Text()
		}
		close(p.out)
	}()
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := stderr.Read(b)
			if n > 0 {
				p.errOut <- string(b[:n])
			}
			if err != nil {
				close(p.errOut)
				return
			}
		}
	}()
	d.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

// line waits for a stdout line matching re and returns its submatches.
func (p *proc) line(re string) []string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(60 * time.Second)
	var seen []string
	for {
		select {
		case l, ok := <-p.out:
			if !ok {
				p.t.Fatalf("stdout ended without %q: %q", re, seen)
			}
			seen = append(seen, l)
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-deadline:
			p.t.Fatalf("no stdout line %q in 60s: %q", re, seen)
		}
	}
}

// prompt waits for stderr text matching re.
func (p *proc) prompt(re string) []string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(60 * time.Second)
	var seen string
	for {
		select {
		case s, ok := <-p.errOut:
			if !ok {
				p.t.Fatalf("stderr ended without %q: %q", re, seen)
			}
			seen += s
			if m := rx.FindStringSubmatch(seen); m != nil {
				return m
			}
		case <-deadline:
			p.t.Fatalf("no stderr %q in 60s: %q", re, seen)
		}
	}
}

func (p *proc) wait() {
	p.t.Helper()
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("%v: %v", p.cmd.Args, err)
	}
}

// TestSharingDovecot: through one Dovecot account, Aimee pairs a second
// device with the six-digit code (the test reads both codes and answers
// the prompt), shares a list with Jesper by link with approval and with
// Carol by QR as a reader, declines Dan, and Jesper leaves.
func TestSharingDovecot(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	a1, a2 := newDevice(t, "aimee-laptop"), newDevice(t, "aimee-phone")
	a1.ok("init", "--name", "Aimee")
	a1.okIn(pass+"\n", "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	a1.ok("new", "House")
	a1.ok("add", "House", "Paint the door", "colour=green")
	a1.ok("sync")

	// Pairing: a1 shows the code, a2 joins, both show the same six digits.
	add := a1.start("device", "add", "--yes")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]
	join := a2.start("device", "join", payload, "--name", "Aimee")
	joinCode := join.line(`^Code (\d{3} \d{3})$`)[1]
	askCode := add.prompt(`Add 'Aimee'\? Code (\d{3} \d{3}) \[y/N\] `)[1]
	if joinCode != askCode {
		t.Fatalf("codes differ: new device %s, showing device %s", joinCode, askCode)
	}
	io.WriteString(add.stdin, "y\n")
	add.line(`^Added 'Aimee'\.`)
	add.wait()
	join.line(`^This device is added, syncing through IMAP ` + user + `@`)
	join.wait()
	if out := a2.ok("show", "House"); !strings.Contains(out, "Paint the door  colour green") {
		t.Fatalf("the paired device does not have House:\n%s", out)
	}
	// An expired pairing code.
	var pl map[string]any
	json.Unmarshal([]byte(payload), &pl)
	pl["exp"] = 1000
	old, _ := json.Marshal(pl)
	late := newDevice(t, "late")
	wantErr(t, late.run("device", "join", string(old)), 1, "This code has expired. Ask for a new one.")
	if _, err := os.Stat(late.dir); err == nil {
		t.Error("a refused device join left a profile")
	}
	wantErr(t, late.run("device", "join", `{"t":"nope"}`), 1, "this is not a code for adding a device")

	// Jesper joins by link; Aimee approves on her phone.
	b := newDevice(t, "jesper")
	b.ok("init", "--name", "Jesper")
	var inv struct{ Link string }
	a1.jsonOut(&inv, "share", "House", "--link")
	if !strings.HasPrefix(inv.Link, "https://") || !strings.Contains(inv.Link, "#") {
		t.Fatalf("link %q", inv.Link)
	}
	watch := a2.start("sync", "--watch")
	watch.line(`^Connected: changes from elsewhere appear here`)
	if out := b.ok("join", inv.Link); !strings.Contains(out, "Waiting for Aimee to let you in.") {
		t.Fatalf("join: %s", out)
	}
	watch.line(`^Jesper wants to join House \(ferry approve \S{6}, or ferry decline`)
	watch.cmd.Process.Signal(os.Interrupt)
	watch.line(`^Stopped\.$`)
	watch.wait()
	if out := b.ok("lists"); !strings.Contains(out, "House") || !strings.Contains(out, "Waiting for Aimee to let you in.") {
		t.Errorf("Jesper's lists while waiting:\n%s", out)
	}
	if out := a2.ok("requests"); !strings.Contains(out, "Jesper wants to join House as writer") {
		t.Fatalf("requests: %s", out)
	}
	if out := a2.ok("approve", "jesper"); !strings.Contains(out, "Jesper can now use House.") {
		t.Fatalf("approve: %s", out)
	}
	b.ok("sync")
	if out := b.ok("show", "House"); !strings.Contains(out, "Paint the door  colour green") || !strings.Contains(out, "House  (1 item(s), shared by Aimee)") {
		t.Fatalf("Jesper does not have House:\n%s", out)
	}
	b.ok("set", "House", "Paint the door", "colour=blue")
	b.ok("sync")
	a1.ok("sync")
	if out := a1.ok("show", "House", "Paint the door"); !strings.Contains(out, "colour     blue  by Jesper") {
		t.Fatalf("Aimee does not see Jesper's edit by name:\n%s", out)
	}

	// Roles: Jesper read-only, then a writer again.
	if out := a1.ok("role", "House", "Jesper", "reader"); !strings.Contains(out, "Jesper is now a reader of House.") {
		t.Fatalf("role: %s", out)
	}
	if out := b.ok("sync"); !strings.Contains(out, "House: you can read it but no longer change it (its owner made you a reader)") {
		t.Errorf("Jesper's sync after being made a reader:\n%s", out)
	}
	wantErr(t, b.run("add", "House", "Sweep"), 1, "you can read House but not change it")
	a2.ok("role", "House", "jesper", "writer")
	if out := b.ok("sync"); !strings.Contains(out, "House: you can change it again (its owner made you a writer)") {
		t.Errorf("Jesper's sync after being made a writer again:\n%s", out)
	}
	b.ok("add", "House", "Sweep")
	wantErr(t, a1.run("role", "House", "Jesper", "admin"), 2, `a member is a writer or a reader, not "admin"`)
	wantErr(t, a1.run("role", "House", "Nobody", "reader"), 1, `House has no member "Nobody"`)
	wantErr(t, a1.run("role", "House", "Aimee", "reader"), 1, "that is you")
	wantErr(t, b.run("role", "House", "Aimee", "reader"), 1, "only the list's owner can change who it is shared with")
	wantErr(t, a1.runIn("n\n", "remove", "House", "Jesper"), 1, "Jesper stays in House")

	// Carol joins by QR as a reader: approved as soon as a1 syncs.
	c := newDevice(t, "carol")
	c.ok("init", "--name", "Carol")
	share := a1.start("share", "House", "--reader")
	text := share.line(`^(https://\S+#\S+)$`)[1]
	share.line(`^Waiting for them to join`)
	t0 := time.Now()
	if out := a1.ok("lists"); !strings.Contains(out, "House") { // the waiting share steps aside
		t.Fatalf("lists while a share waits:\n%s", out)
	}
	if d := time.Since(t0); d > realtest.Scale(10*time.Second) {
		t.Errorf("lists waited %s for the profile a share holds", d)
	}
	c.ok("join", text)
	share.line(`^Carol joined House\.$`)
	share.wait()
	// The QR code is for one person: Dee, who uses it too, is told so.
	dee := newDevice(t, "dee")
	dee.ok("init", "--name", "Dee")
	dee.ok("join", text)
	a1.ok("sync")
	dee.ok("sync")
	if out := dee.ok("lists"); !strings.Contains(out, "This invite was already used. Ask Aimee for a new one.") {
		t.Errorf("Dee's lists after joining with a used QR code:\n%s", out)
	}
	c.ok("sync")
	if out := c.ok("show", "House"); !strings.Contains(out, "Paint the door  colour blue") {
		t.Fatalf("Carol does not have House:\n%s", out)
	}
	if out := c.ok("lists"); !strings.Contains(out, "(read-only for you)") {
		t.Errorf("Carol's lists:\n%s", out)
	}
	before := c.stored()
	wantErr(t, c.run("add", "House", "Sweep"), 1, "you can read House but not change it")
	if c.stored() != before {
		t.Error("a refused edit changed Carol's device")
	}

	// Carol is removed: the list gets a new key, her copy stays readable.
	if out := a1.ok("remove", "House", "Carol", "--yes"); !strings.Contains(out, "Removed Carol from House; the list has a new key.") {
		t.Fatalf("remove: %s", out)
	}
	a1.ok("add", "House", "After Carol")
	a1.ok("sync")
	c.ok("sync")
	if out := c.ok("status"); !strings.Contains(out, "House is no longer shared with you.") {
		t.Errorf("Carol's status after removal:\n%s", out)
	}
	if out := c.ok("show", "House"); strings.Contains(out, "After Carol") || !strings.Contains(out, "Paint the door") {
		t.Errorf("Carol after removal:\n%s", out)
	}
	c.ok("leave", "House", "--yes") // a list one was removed from: off her devices
	if out := c.ok("lists"); strings.Contains(out, "House") {
		t.Errorf("Carol's lists after leaving the list she was removed from:\n%s", out)
	}
	b.ok("sync")
	if out := b.ok("show", "House"); !strings.Contains(out, "After Carol") {
		t.Errorf("Jesper does not get the new key's writes:\n%s", out)
	}

	// A new key: Jesper still reads what comes after it.
	if out := a1.ok("new-key", "House"); !strings.Contains(out, "House has a new key.") {
		t.Fatalf("new-key: %s", out)
	}
	a1.ok("add", "House", "After the new key")
	a1.ok("sync")
	b.ok("sync")
	if out := b.ok("show", "House"); !strings.Contains(out, "After the new key") {
		t.Errorf("Jesper after the new key:\n%s", out)
	}
	wantErr(t, a1.run("finish", "House"), 1, "no change started on another device is waiting in House")
	wantErr(t, a1.run("discard", "House", "--yes"), 1, "no change started on another device is waiting in House")
	wantErr(t, b.run("new-key", "House"), 1, "only the list's owner")

	// A QR invite nobody uses: Ctrl-C stops the wait, the invite stays open.
	idle := a1.start("share", "House")
	idle.line(`^Waiting for them to join`)
	idle.cmd.Process.Signal(os.Interrupt)
	idle.line(`^Stopped waiting\. The invite works until \d\d:\d\d; a ferry sync then lets them in\.$`)
	idle.wait()

	// Dan is declined.
	d := newDevice(t, "dan")
	d.ok("init", "--name", "Dan")
	a1.jsonOut(&inv, "share", "House", "--link")
	waiting := d.start("join", inv.Link, "--wait")
	for i := 0; !strings.Contains(a1.ok("requests"), "Dan wants to join House"); i++ { // join --wait sent it
		if i == 50 {
			t.Fatal("Dan's request never arrived")
		}
		time.Sleep(200 * time.Millisecond)
	}
	a1.ok("decline", "Dan")
	waiting.line(`^Aimee declined your request to join House\.$`)
	waiting.wait()
	d.ok("sync")
	var st struct {
		Joins []struct{ State, Message string }
	}
	d.jsonOut(&st, "status")
	if len(st.Joins) != 1 || st.Joins[0].Message != "Aimee declined your request to join House." {
		t.Errorf("Dan's status: %+v", st)
	}

	// An expired invite, and lifetimes out of range.
	wantErr(t, a1.run("share", "House", "--link", "--expires", "0s"), 2, "--expires 0s is out of range")
	wantErr(t, a1.run("share", "House", "--link", "--expires", "800h"), 2, "--expires 800h0m0s is out of range")
	a1.jsonOut(&inv, "share", "House", "--link", "--expires", "1s")
	time.Sleep(1100 * time.Millisecond)
	before = d.stored()
	wantErr(t, d.run("join", inv.Link), 1, "this invite has expired: ask Aimee for a new one")
	if r := d.run("join", inv.Link, "--json"); !strings.Contains(r.err, `"kind":"expired"`) {
		t.Errorf("expired invite --json: %s", r.err)
	}
	if d.stored() != before {
		t.Error("an expired invite changed Dan's device")
	}
	wantErr(t, d.run("join", "https://example.com/join#AAAA"), 1, "this is not a Ferry invite")

	// A different hub.
	a1.jsonOut(&inv, "share", "House", "--link")
	e := newDevice(t, "erin")
	e.ok("init", "--name", "Erin")
	e.env = []string{"FERRY_PASSWORD=x"}
	e.run("connect", "jmap", fakeJMAP(t, 100).URL, "--user", "x")
	wantErr(t, e.run("join", inv.Link), 1, "answer y to switch this profile to the invite's account, or join it from a new profile")

	// Members, and Jesper leaving.
	var ms struct {
		Members []struct {
			Name, Role string
			You        bool
		}
	}
	a1.jsonOut(&ms, "members", "House")
	roles := map[string]string{}
	for _, m := range ms.Members {
		roles[m.Name] = m.Role
	}
	if roles["Aimee"] != "owner" || roles["Jesper"] != "writer" || len(roles) != 2 {
		t.Errorf("members %+v", ms)
	}
	// Aimee deletes a second list shared with Jesper; he keeps a read-only copy.
	a1.ok("new", "Garden")
	a1.ok("add", "Garden", "Roses")
	a1.ok("sync")
	a1.jsonOut(&inv, "share", "Garden", "--link")
	b.ok("join", inv.Link)
	a1.ok("approve", "Jesper")
	b.ok("sync")
	wantErr(t, a1.runIn("n\n", "delete", "Garden"), 1, "Garden is kept (answer y to delete it)")
	wantErr(t, b.run("delete", "Garden", "--yes"), 1, "only the owner of Garden can delete it; ferry leave")
	a1.ok("delete", "Garden", "--yes")
	var gardens []struct{ ID, Name, State string }
	a1.jsonOut(&gardens, "lists")
	var deleted string
	for _, l := range gardens {
		if l.Name == "Garden" && l.State == "deleted" {
			deleted = l.ID[:6]
		}
	}
	wantErr(t, a1.run("delete", deleted, "--yes"), 1, "Garden is already deleted; it stays here read-only")
	a1.ok("new", "Garden") // the name is free again: the deleted Garden can't change
	a1.ok("add", "Garden", "Lilies")
	if out := a1.ok("show", "Garden"); strings.Contains(out, "Roses") || !strings.Contains(out, "Lilies") {
		t.Errorf("Garden means the live list, not the deleted one:\n%s", out)
	}
	wantErr(t, a1.run("new", "Garden"), 1, `you already have a list called "Garden"`)
	b.ok("sync")
	if out := b.ok("lists"); !strings.Contains(out, "Garden") || !strings.Contains(out, "[deleted]") {
		t.Errorf("Jesper's lists after the delete:\n%s", out)
	}
	wantErr(t, b.run("add", "Garden", "Tulips"), 1, "Garden was deleted by its owner: it is read-only")
	if out := b.ok("copy", "Garden", "My garden"); !strings.Contains(out, `into the new list "My garden"`) {
		t.Errorf("copy: %s", out)
	}
	b.ok("add", "My garden", "Tulips")

	b.ok("leave", "House", "--yes")
	a1.ok("sync")
	if out := a1.ok("members", "House"); !strings.Contains(out, "Jesper left House. (ferry remove") {
		t.Errorf("members after Jesper left:\n%s", out)
	}
	a1.ok("remove", "House", "Jesper", "--yes") // the owner confirms

	// Closing the open invites: none is left, and whoever uses an old link
	// is told it is no longer open.
	a1.jsonOut(&inv, "share", "House", "--link")
	var closed struct{ Closed int }
	a1.jsonOut(&closed, "share", "House", "--close")
	var open struct{ Invites []any }
	a1.jsonOut(&open, "members", "House")
	if closed.Closed == 0 || len(open.Invites) != 0 {
		t.Errorf("share --close closed %d; %d still open", closed.Closed, len(open.Invites))
	}
	wantErr(t, a1.run("share", "House", "--close", "--link"), 2, "--close closes the open invites; --link is for making one")
	fay := newDevice(t, "fay")
	fay.ok("init", "--name", "Fay")
	fay.ok("join", inv.Link)
	a2.ok("sync")
	a1.ok("sync")
	fay.ok("sync")
	if out := fay.ok("status"); !strings.Contains(out, "This invite is no longer open. Ask Aimee for a new one.") {
		t.Errorf("Fay's status after joining with a closed invite:\n%s", out)
	}
	// Gus asks by link and changes his mind before Aimee approves.
	a1.jsonOut(&inv, "share", "House", "--link")
	gus := newDevice(t, "gus")
	gus.ok("init", "--name", "Gus")
	gus.ok("join", inv.Link)
	wantErr(t, gus.runIn("n\n", "leave", "House"), 1, "still waiting to join House (answer y to stop)")
	if out := gus.ok("leave", "House", "--yes"); !strings.Contains(out, "You no longer wait to join House") {
		t.Errorf("leave while waiting: %s", out)
	}
	if out := gus.ok("lists"); strings.Contains(out, "House") {
		t.Errorf("Gus's lists after withdrawing:\n%s", out)
	}
	a1.ok("approve", "Gus")
	gus.ok("sync")
	gus.ok("sync")
	if out := gus.ok("lists"); strings.Contains(out, "House") {
		t.Errorf("an approval after Gus withdrew brought House in:\n%s", out)
	}
	if out := a1.ok("members", "House"); strings.Contains(out, "Jesper") {
		t.Errorf("members after confirming Jesper's leave:\n%s", out)
	}
}

// TestPairingDeclined: a request answered "n" is not added, the offer
// waits for another, and Ctrl-C on either side stops with one line,
// leaving no profile on the new device.
func TestPairingDeclined(t *testing.T) {
	addr, user, pass := dovecotAccount(t)
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.ok("init", "--name", "Aimee")
	a.okIn(pass, "connect", "imap", addr, "--user", user, "--security", "none", "--password-file", "-")
	add := a.start("device", "add", "--yes")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]
	join := b.start("device", "join", payload, "--name", "Mallet")
	code := join.line(`^Code (\d{3} \d{3})$`)[1]
	add.prompt(`Add 'Mallet'\? Code ` + code + ` \[y/N\] `)
	// Ctrl-C on the new device while the question is asked (a "no" ends
	// it by itself: TestDeviceJoinDeclinedDovecot).
	join.cmd.Process.Signal(os.Interrupt)
	join.errLine(t, "ferry: stopped: this device was not added")
	if err := join.cmd.Wait(); join.cmd.ProcessState.ExitCode() != 130 {
		t.Errorf("device join after Ctrl-C: %v (want exit 130)", err)
	}
	if _, err := os.Stat(b.dir); err == nil {
		t.Error("an interrupted device join left a profile")
	}
	io.WriteString(add.stdin, "n\n")
	add.line(`^Not added\. Waiting for another request until`)
	add.cmd.Process.Signal(os.Interrupt)
	add.errLine(t, "ferry: stopped: no device was added")
	add.cmd.Wait()
	if code := add.cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("device add after Ctrl-C: exit %d, want 130", code)
	}
}

// errLine waits for stderr to hold want.
func (p *proc) errLine(t *testing.T, want string) {
	t.Helper()
	p.prompt(regexp.QuoteMeta(want))
}
