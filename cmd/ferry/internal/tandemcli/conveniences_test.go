package tandemcli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConveniencesDovecot: several items added at once (arguments and
// standard input), done and rm of several, rm --done, show's filters,
// --expires in days, -q and -v, help listing --version, man pages made in
// a new directory with their own names and ENVIRONMENT, FILES and EXIT
// STATUS, and ferry name.
func TestConveniencesDovecot(t *testing.T) {
	d := aimeeOnDovecot(t, "Groceries")
	out := d.ok("add", "Groceries", "--each", "Eggs", "Bread", "qty=1", "Butter", "--tag", "shop")
	if strings.Count(out, "Added ") != 3 {
		t.Errorf("add --each of three: %s", out)
	}
	if out := d.okIn("Tea\n\nCoffee\n", "add", "Groceries", "-"); !strings.Contains(out, `Added "Tea"`) || !strings.Contains(out, `Added "Coffee"`) {
		t.Errorf("add from standard input: %s", out)
	}
	if out := d.ok("show", "Groceries"); !strings.Contains(out, "Butter  qty 1  #shop") || !strings.Contains(out, "(5 item(s))") {
		t.Errorf("after adding five:\n%s", out)
	}
	if out := d.ok("done", "Groceries", "Eggs", "bread"); !strings.Contains(out, "Done: Eggs.") || !strings.Contains(out, "Done: Bread.") {
		t.Errorf("done of two: %s", out)
	}
	before := d.ok("show", "Groceries", "--json")
	wantErr(t, d.run("done", "Groceries", "Butter", "Nope"), 1, `has no item "Nope"`)
	if d.ok("show", "Groceries", "--json") != before {
		t.Error("done with one unknown item changed the others")
	}
	out = d.ok("show", "Groceries", "--hide-done")
	if strings.Contains(out, "Eggs") || !strings.Contains(out, "Butter") || !strings.Contains(out, "Tea") {
		t.Errorf("show --hide-done:\n%s", out)
	}
	out = d.ok("show", "Groceries", "--tag", "SHOP", "--hide-done")
	if strings.Contains(out, "Tea") || strings.Contains(out, "Eggs") || !strings.Contains(out, "Butter") {
		t.Errorf("show --tag shop --hide-done:\n%s", out)
	}
	if out := d.ok("rm", "Groceries", "--done"); !strings.Contains(out, "Deleted Eggs") || !strings.Contains(out, "Deleted Bread") {
		t.Errorf("rm --done: %s", out)
	}
	d.ok("rm", "Groceries", "Tea", "Coffee")
	if out := d.ok("show", "Groceries"); !strings.Contains(out, "(1 item(s))") {
		t.Errorf("after the rms:\n%s", out)
	}
	if out := d.ok("show", "Groceries", "--all"); !strings.Contains(out, "Tea  (deleted)") || !strings.Contains(out, "Eggs  qty 1  #shop  (deleted)") && !strings.Contains(out, "Eggs  (deleted)") {
		t.Errorf("show --all lists deleted items without their titles:\n%s", out)
	}
	wantErr(t, d.run("rm", "Groceries", "Butter", "--done"), 2, "--done deletes every item that is done")

	var inv struct{ Expires time.Time }
	d.jsonOut(&inv, "share", "Groceries", "--link", "--expires", "7d")
	if left := time.Until(inv.Expires); left < 7*24*time.Hour-time.Hour || left > 7*24*time.Hour {
		t.Errorf("--expires 7d: the invite runs out in %s", left)
	}
	wantErr(t, d.run("share", "Groceries", "--link", "--expires", "31d"), 2, "--expires 744h0m0s is out of range: give 1s to 30d")

	if r := d.run("add", "-q", "Groceries", "Jam"); r.code != 0 || r.out != "" {
		t.Errorf("add -q printed %q (exit %d)", r.out, r.code)
	}
	if out := d.ok("show", "-q", "Groceries"); !strings.Contains(out, "Jam") {
		t.Errorf("show -q shows nothing:\n%s", out)
	}
	if r := d.run("sync", "-v"); r.code != 0 || !strings.Contains(r.err, "level=INFO") {
		t.Errorf("sync -v shows no log on stderr: %q", r.err)
	}

	if out := d.ok("help"); !strings.Contains(out, "--version") {
		t.Errorf("ferry help does not list --version:\n%s", out)
	}
	dir := filepath.Join(t.TempDir(), "new", "man1")
	if out := d.ok("man", dir); !strings.HasPrefix(out, "Wrote ") || !strings.Contains(out, dir) || !strings.Contains(out, "ferry-sync.1") {
		t.Errorf("man says %q", out)
	}
	page, err := os.ReadFile(filepath.Join(dir, "ferry-sync.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`.TH "FERRY-SYNC" "1"`, ".SH ENVIRONMENT", "FERRY_HOME", ".SH FILES", "profile.json", ".SH EXIT STATUS", "130"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("ferry-sync.1 lacks %q", want)
		}
	}

	if out := d.ok("name"); !strings.Contains(out, "You join and make lists as Aimee") {
		t.Errorf("name: %s", out)
	}
	d.ok("name", "Aimee B.")
	if out := d.ok("name"); !strings.Contains(out, "as Aimee B.") {
		t.Errorf("name after a change: %s", out)
	}
}

// TestSyncSaysWhatHappenedDovecot: a one-off sync says when the owner
// declined your request, when you were let in, and when you were removed
// from a list.
func TestSyncSaysWhatHappenedDovecot(t *testing.T) {
	a := aimeeOnDovecot(t, "House")
	var inv struct{ Link string }
	a.jsonOut(&inv, "share", "House", "--link")
	j, c := newDevice(t, "jesper"), newDevice(t, "carol")
	j.ok("init", "--name", "Jesper")
	c.ok("init", "--name", "Carol")
	j.ok("join", inv.Link)
	c.ok("join", inv.Link)
	a.ok("approve", "Jesper")
	a.ok("decline", "Carol")
	if out := j.ok("sync"); !strings.Contains(out, "You're in: House is on this device.") {
		t.Errorf("Jesper's sync after the approval:\n%s", out)
	}
	if out := c.ok("sync"); !strings.Contains(out, "declined") {
		t.Errorf("Carol's sync after the decline:\n%s", out)
	}
	a.ok("remove", "House", "Jesper", "--yes")
	if out := j.ok("sync"); !strings.Contains(out, "House is no longer shared with you.") {
		t.Errorf("Jesper's sync after his removal:\n%s", out)
	}
	j.ok("leave", "House", "--yes")
	if out := j.ok("status"); strings.Contains(out, "Joining") || strings.Contains(out, "House") {
		t.Errorf("Jesper's status keeps a line about a list he left:\n%s", out)
	}
}
