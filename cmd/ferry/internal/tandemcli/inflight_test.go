package tandemcli_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// ownerTwoDevices is Aimee with two devices (a laptop and, restored from
// the backup key, a phone) and House shared by QR with Jesper and Carol,
// everyone syncing through a real IMAP server behind an appendGate.
type ownerTwoDevices struct {
	gate               *appendGate
	o1, o2, jesper, cc *device
	house              string // House's short ID, as ferry prints it
}

func setUpOwnerTwoDevices(t *testing.T, account func(*testing.T) (addr, user, pass string)) *ownerTwoDevices {
	addr, user, pass := account(t)
	s := &ownerTwoDevices{gate: newAppendGate(t, addr)}
	s.o1, s.o2 = newDevice(t, "aimee-laptop"), newDevice(t, "aimee-phone")
	out := s.o1.ok("init", "--name", "Aimee")
	key := regexp.MustCompile(`(?m)^    ((?:[a-z2-7]{4} ){13}[a-z2-7]{4})$`).FindStringSubmatch(out)
	if key == nil {
		t.Fatalf("init shows no backup key:\n%s", out)
	}
	s.o1.okIn(pass+"\n", "connect", "imap", s.gate.addr(), "--user", user, "--security", "none", "--password-file", "-")
	s.o1.ok("new", "House")
	s.o1.ok("add", "House", "Paint the door", "colour=green")
	s.o1.ok("add", "House", "Sweep")
	for _, name := range []string{"Jesper", "Carol"} {
		d := newDevice(t, strings.ToLower(name))
		d.ok("init", "--name", name)
		share := s.o1.start("share", "House")
		d.ok("join", share.line(`^(https://\S+#\S+)$`)[1])
		share.line(`^` + name + ` joined House\.$`)
		share.wait()
		d.ok("sync")
		if name == "Jesper" {
			s.jesper = d
		} else {
			s.cc = d
		}
	}
	s.o2.okIn(key[1]+"\n", "restore", "--name", "Aimee", "--backup-key-file", "-")
	var text string
	for _, l := range strings.Split(s.o1.okIn("y\n", "hub", "qr"), "\n") {
		if strings.HasPrefix(l, `{"kind":"imap"`) {
			text = l
		}
	}
	s.o2.okIn(text+"\n", "connect", "paste")
	s.syncAll()
	var lists []struct{ ID, Name string }
	s.o2.jsonOut(&lists, "lists")
	for _, l := range lists {
		if l.Name == "House" {
			s.house = l.ID[:6]
		}
	}
	if s.house == "" {
		t.Fatalf("the restored device does not have House: %+v", lists)
	}
	return s
}

func (s *ownerTwoDevices) syncAll() {
	for range 2 {
		for _, d := range []*device{s.o1, s.o2, s.jesper, s.cc} {
			d.ok("sync")
		}
	}
}

func (s *ownerTwoDevices) members(t *testing.T, d *device) map[string]string {
	t.Helper()
	var ms struct{ Members []struct{ Name, Role string } }
	d.jsonOut(&ms, "members", "House")
	out := map[string]string{}
	for _, m := range ms.Members {
		out[m.Name] = m.Role
	}
	return out
}

// cutRemoval runs "ferry remove House NAME" on the laptop with the network
// cut at the gate's rule: the command fails as offline, one line, and
// the change stays in the laptop's journal.
func (s *ownerTwoDevices) cutRemoval(t *testing.T, name string, rule func(string, bool) gateAction) {
	t.Helper()
	s.gate.arm(rule)
	r := s.o1.run("remove", "House", name, "--yes")
	if !s.gate.disarm() {
		t.Fatalf("the gate never cut the removal of %s: %+v", name, r)
	}
	if r.code != 1 {
		t.Fatalf("a removal cut off midway: exit %d, %q", r.code, r.err)
	}
	humanLine(t, r.err)
}

// TestChangeInFlightFinish (§11.7, §13.2), on Dovecot and Cyrus IMAP:
// Aimee's laptop loses the network while removing Jesper, after the new channel is uploaded and
// before the change is announced. Her phone shows the change in flight,
// refuses another change and names this one, and finishes it; the laptop,
// back, carries on without doing it twice; Jesper is removed everywhere.
func TestChangeInFlightFinish(t *testing.T) {
	for _, srv := range imapServers {
		t.Run(srv.name, func(t *testing.T) { testChangeInFlightFinish(t, setUpOwnerTwoDevices(t, srv.account)) })
	}
}

func testChangeInFlightFinish(t *testing.T, s *ownerTwoDevices) {
	watch := s.o2.start("sync", "--watch")
	watch.line(`^Connected: changes from elsewhere appear here`)
	s.cutRemoval(t, "Jesper", cutAtAnnounce())
	what := "removing Jesper in House"
	notice := "Another of your devices started " + what + " and didn't finish: ferry finish " + s.house + ", or ferry discard " + s.house + "."
	watch.line(`^` + regexp.QuoteMeta(notice) + `$`) // live, as it arrives
	watch.cmd.Process.Signal(os.Interrupt)
	watch.line(`^Stopped\.$`)
	watch.wait()

	s.o2.ok("sync")
	if out := s.o2.ok("status"); !strings.Contains(out, notice) {
		t.Fatalf("the phone's status does not show the change in flight:\n%s", out)
	}
	var st struct {
		Lists []struct {
			Name     string
			InFlight string `json:"in_flight"`
		}
	}
	s.o2.jsonOut(&st, "status")
	if len(st.Lists) != 1 || st.Lists[0].InFlight != what {
		t.Fatalf("status --json: %+v", st)
	}
	before := s.o2.ok("show", "House", "--all", "--json")
	wantErr(t, s.o2.run("remove", "House", "Carol", "--yes"), 1, "another of your devices started "+what+" and didn't finish: ferry finish "+s.house+", or ferry discard "+s.house+", first")
	if s.o2.ok("show", "House", "--all", "--json") != before {
		t.Error("a refused second change changed the phone's House")
	}
	if got := s.members(t, s.o2); got["Jesper"] == "" || got["Carol"] == "" {
		t.Fatalf("members before finishing: %v", got)
	}

	if out := s.o2.ok("finish", "House"); !strings.Contains(out, "Finished "+what+".") {
		t.Fatalf("finish: %s", out)
	}
	if out := s.o2.ok("status"); strings.Contains(out, "didn't finish") {
		t.Errorf("the phone still shows a change in flight after finishing:\n%s", out)
	}
	wantErr(t, s.o2.run("finish", "House"), 1, "no change started on another device is waiting in House")
	s.o1.ok("sync")
	s.o1.ok("sync")
	s.syncAll()
	for i, d := range []*device{s.o1, s.o2, s.cc} {
		if got := s.members(t, d); got["Jesper"] != "" || got["Carol"] != "writer" || got["Aimee"] != "owner" {
			t.Errorf("device %d: members after the finished removal: %v", i, got)
		}
	}
	if out := s.jesper.ok("status"); !strings.Contains(out, "House is no longer shared with you.") {
		t.Errorf("Jesper's status:\n%s", out)
	}
	// The laptop carried on: the list works, with the new key, for both
	// devices and Carol.
	s.o1.ok("add", "House", "After Jesper")
	s.o1.ok("sync")
	s.cc.ok("sync")
	s.jesper.ok("sync")
	if out := s.cc.ok("show", "House"); !strings.Contains(out, "After Jesper") {
		t.Errorf("Carol does not get writes after the removal:\n%s", out)
	}
	if out := s.jesper.ok("show", "House"); strings.Contains(out, "After Jesper") || !strings.Contains(out, "Paint the door") {
		t.Errorf("Jesper after his removal:\n%s", out)
	}
	for _, d := range []*device{s.o1, s.o2} {
		if out := d.ok("status"); strings.Contains(out, "can't sync") || strings.Contains(out, "didn't finish") {
			t.Errorf("an owner device after the finished change:\n%s", out)
		}
	}
}

// TestChangeInFlightDiscard (§11.7), on Dovecot and Cyrus IMAP: the laptop loses the network
// after its note went out and before anything of the change was uploaded.
// The phone cannot finish it (and says what to do instead), discards it
// after asking, and the laptop, back, drops it: Carol stays; the phone
// then makes the change itself.
func TestChangeInFlightDiscard(t *testing.T) {
	for _, srv := range imapServers {
		t.Run(srv.name, func(t *testing.T) { testChangeInFlightDiscard(t, setUpOwnerTwoDevices(t, srv.account)) })
	}
}

func testChangeInFlightDiscard(t *testing.T, s *ownerTwoDevices) {
	s.cutRemoval(t, "Carol", cutAtUpload)

	s.o2.ok("sync")
	what := "removing Carol in House"
	if out := s.o2.ok("status"); !strings.Contains(out, "Another of your devices started "+what+" and didn't finish") {
		t.Fatalf("the phone's status:\n%s", out)
	}
	wantErr(t, s.o2.run("finish", "House"), 1, "the other device didn't get far enough with "+what+": ferry discard "+s.house+", then make the change here")
	before := s.o2.stored()
	wantErr(t, s.o2.runIn("n\n", "discard", "House"), 1, "nothing changed in House")
	if s.o2.stored() != before {
		t.Error("a discard answered no changed the phone")
	}
	if out := s.o2.okIn("y\n", "discard", "House"); !strings.Contains(out, "Discarded "+what+".") {
		t.Fatalf("discard: %s", out)
	}
	s.o1.ok("sync")
	s.syncAll()
	for i, d := range []*device{s.o1, s.o2} {
		if got := s.members(t, d); got["Carol"] != "writer" || got["Jesper"] != "writer" {
			t.Errorf("device %d: members after the discard: %v", i, got)
		}
		if out := d.ok("status"); strings.Contains(out, "didn't finish") {
			t.Errorf("device %d still shows a change in flight:\n%s", i, out)
		}
	}
	s.o2.ok("remove", "House", "Carol", "--yes")
	s.syncAll()
	if got := s.members(t, s.o1); got["Carol"] != "" {
		t.Errorf("the laptop after the phone removed Carol: %v", got)
	}
	if out := s.cc.ok("status"); !strings.Contains(out, "House is no longer shared with you.") {
		t.Errorf("Carol's status:\n%s", out)
	}
}

// TestDeadList (§9.4, §11.8, §13.3), on Dovecot and Cyrus IMAP: both of Aimee's devices change
// who House is shared with at the same moment — each has signed its change
// before the other's note reached the hub. Nobody can follow either
// history: every device shows "can't sync any more" with the copy
// command, refuses edits with a line, and the copy works.
func TestDeadList(t *testing.T) {
	for _, srv := range imapServers {
		t.Run(srv.name, func(t *testing.T) { testDeadList(t, setUpOwnerTwoDevices(t, srv.account)) })
	}
}

func testDeadList(t *testing.T, s *ownerTwoDevices) {
	watch := s.cc.start("sync", "--watch")
	watch.line(`^Connected: changes from elsewhere appear here`)
	s.gate.arm(holdAll)
	laptop := s.o1.start("remove", "House", "Jesper", "--yes")
	s.gate.waitHeld(1) // the laptop's note, held: the phone cannot see it
	phone := s.o2.start("new-key", "House")
	s.gate.waitHeld(2)
	s.gate.release()
	laptop.cmd.Wait()
	phone.cmd.Wait()
	watch.line(`^House can't sync any more\. Copy it to a new list\? \(ferry copy ` + s.house + `\)$`)
	watch.cmd.Process.Signal(os.Interrupt)
	watch.line(`^Stopped\.$`)
	watch.wait()
	s.syncAll()

	msg := regexp.MustCompile(`House can't sync any more\. Copy it to a new list\? \(ferry copy ` + s.house + `\)`)
	for i, d := range []*device{s.o1, s.o2, s.cc} {
		out := d.ok("status")
		if !msg.MatchString(out) {
			t.Errorf("device %d: status of a dead list:\n%s", i, out)
		}
		var st struct {
			Lists []struct{ Name, State string }
		}
		d.jsonOut(&st, "status")
		if len(st.Lists) != 1 || st.Lists[0].State != "can't sync" {
			t.Errorf("device %d: status --json of a dead list: %+v", i, st)
		}
	}
	before := s.o1.stored()
	r := s.o1.run("add", "House", "One more")
	if r.code != 1 || !strings.Contains(r.err, "House can't sync any more") {
		t.Errorf("an edit of a dead list: exit %d, %q", r.code, r.err)
	}
	humanLine(t, r.err)
	if s.o1.stored() != before {
		t.Error("a refused edit of a dead list changed the laptop")
	}
	if out := s.o1.ok("show", "House"); !strings.Contains(out, "Paint the door") {
		t.Errorf("a dead list is not readable:\n%s", out)
	}
	if out := s.cc.ok("copy", "House", "Our house"); !strings.Contains(out, `into the new list "Our house"`) {
		t.Errorf("copy: %s", out)
	}
	s.cc.ok("add", "Our house", "Carol's own")
	if out := s.cc.ok("show", "Our house"); !strings.Contains(out, "Paint the door  colour green") || !strings.Contains(out, "Carol's own") {
		t.Errorf("Carol's copy:\n%s", out)
	}
}
