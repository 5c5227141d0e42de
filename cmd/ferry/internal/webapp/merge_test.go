package webapp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBrowserMergedValue: a conflict made by two devices of one person (the
// CLI on two profiles, each editing before it syncs) is settled in the page
// by writing a merged value, and the other device reads that value.
func TestBrowserMergedValue(t *testing.T) {
	addr, pass := dovecot(t)
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(pass), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newProfile(t, "aimee")
	a.ferry("init", "--name", "Aimee")
	a.ferry("connect", "imap", addr, "--user", dovecotUser, "--security", "none", "--password-file", pw)
	a.ferry("new", "Groceries")
	id := a.lists()[0].ID
	a.ferry("add", id, "Milk")
	a.ferry("sync")

	b := a.otherDevice("other", "Aimee")
	b.ferry("connect", "imap", addr, "--user", dovecotUser, "--security", "none", "--password-file", pw)
	b.ferry("sync")

	// Both edit the title before either syncs: a conflict once both did.
	a.ferry("set", id, "Milk", "title=Oat milk")
	b.ferry("set", id, "Milk", "title=Soy milk")
	a.ferry("sync")
	b.ferry("sync")
	a.ferry("sync")

	pg := open(t, browser(t), "aimee", a.app())
	pg.goTo("/l/" + id)
	pg.waitJS(`document.querySelector(".items .title") !== null`, actionWait)
	pg.goTo(eval[string](pg, `document.querySelector(".items .title").getAttribute("href")`))
	pg.waitJS(`document.querySelectorAll(".conflict-box .side").length === 2`, actionWait)
	pg.fill("merge-title", "Oat and soy milk")
	pg.click(`//form[contains(@class, "merge")]`, "Save merged value")
	pg.waitJS(`document.querySelector(".conflict-box") === null && document.querySelector("h1").textContent === "Oat and soy milk"`, actionWait)

	// The app sends it: the other device reads the merged value, with no
	// conflict left.
	out := ""
	for end := time.Now().Add(syncWait); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		b.ferry("sync")
		if out = b.ferry("show", id, "--json"); strings.Contains(out, "Oat and soy milk") {
			break
		}
	}
	if !strings.Contains(out, "Oat and soy milk") || strings.Contains(out, `Soy milk"`) || strings.Contains(out, `"Oat milk"`) {
		t.Errorf("the other device after the merge: %s", out)
	}
}
