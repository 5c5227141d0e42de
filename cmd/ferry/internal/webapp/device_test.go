package webapp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// connected is a profile set up with the CLI, connected to the Dovecot
// account and synced, with one list.
func connected(t *testing.T, name, addr, pass string) *profile {
	p := newProfile(t, strings.ToLower(name))
	p.ferry("init", "--name", name)
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(pass), 0o600); err != nil {
		t.Fatal(err)
	}
	p.ferry("connect", "imap", addr, "--user", dovecotUser, "--security", "none", "--password-file", pw)
	p.ferry("new", "Groceries")
	p.ferry("sync")
	return p
}

// TestBrowserAddDeviceAndRestore: in the pages, a new device joins the
// identity with the QR code's text, both pages showing the same six-digit
// code and the new one added with one click; and a profile restored with
// the backup key finds the user's lists once connected.
func TestBrowserAddDeviceAndRestore(t *testing.T) {
	addr, pass := dovecot(t)
	br := browser(t)
	a := connected(t, "Aimee", addr, pass)
	pa := open(t, br, "aimee", a.app())
	pa.goTo("/device")
	pa.click("", "Show a code")
	pa.waitJS(`document.getElementById("pair-text") !== null`, syncWait)
	text := eval[string](pa, `document.getElementById("pair-text").value`)
	if !pa.has(`document.querySelector("img.qr").naturalWidth > 0`) {
		t.Error("the pairing QR code image did not load")
	}

	c := newProfile(t, "laptop")
	pc := open(t, br, "laptop", c.app())
	pc.fill("pair-name", "Aimee's laptop")
	pc.fill("pair-code", text)
	pc.click(`//section[@aria-labelledby="h-pair"]`, "Add this device")
	pc.waitJS(`document.getElementById("join-code") !== null`, syncWait)
	joinCode := eval[string](pc, `document.getElementById("join-code").textContent`)
	pa.waitJS(`document.querySelector(".ask .code") !== null`, syncWait)
	askCode := eval[string](pa, `document.querySelector(".ask .code").textContent`)
	if len(strings.ReplaceAll(joinCode, " ", "")) != 6 || joinCode != askCode {
		t.Fatalf("the new device shows code %q, the other %q: want the same six digits", joinCode, askCode)
	}
	if !strings.Contains(pa.text(), "Add “Aimee's laptop”?") {
		t.Errorf("the question does not name the device: %q", pa.text())
	}
	pa.screenshot("device-add")
	pc.screenshot("device-join")
	pa.click("", "Add it")
	pa.waitText("Added Aimee's laptop", syncWait)
	pc.waitJS(`[...document.querySelectorAll(".lists a")].some(a => a.textContent === "Groceries")`, syncWait)
	if !strings.Contains(pc.text(), "You are Aimee's laptop") {
		t.Errorf("the new device's page: %q", pc.text())
	}

	// Restore with the backup key, then connect: the lists come back.
	var bk struct {
		Key string `json:"backup_key"`
	}
	if err := json.Unmarshal([]byte(a.ferry("backup-key", "--yes", "--json")), &bk); err != nil || bk.Key == "" {
		t.Fatalf("backup key: %v", err)
	}
	r := newProfile(t, "restored")
	pr := open(t, br, "restored", r.app())
	pr.fill("restore-name", "Aimee")
	pr.fill("restore-key", bk.Key)
	pr.click(`//section[@aria-labelledby="h-restore"]`, "Restore")
	pr.waitText("Restored Aimee's identity", actionWait)
	if strings.Contains(pr.text(), "Write this down") {
		t.Error("a restore shows the backup key again as if new")
	}
	host, port, _ := strings.Cut(addr, ":")
	connect := func(password string) {
		pr.fill("imap-host", host)
		pr.fill("imap-port", port)
		pr.fill("imap-sec", "none")
		pr.fill("imap-user", dovecotUser)
		pr.fill("imap-pass", password)
		pr.click(`//section[@aria-labelledby="h-imap"]`, "Connect")
	}
	// A wrong password first: the §13.3 sentence, and the indicator says so
	// with a way to reconnect.
	connect(pass + "-wrong")
	pr.waitText("Sync access was revoked or changed. Reconnect to keep syncing.", syncWait)
	pr.waitJS(`document.getElementById("sync").dataset.state === "error" && document.querySelector('#sync a[href="/account"]') !== null`, syncWait)
	pr.screenshot("account-refused")
	connect(pass)
	pr.waitJS(`[...document.querySelectorAll(".lists a")].some(a => a.textContent === "Groceries")`, syncWait)
	pr.waitJS(`document.getElementById("sync").dataset.state !== "error"`, syncWait)
}

// TestBrowserConnectJMAP: the first-run page connects a JMAP account (Cyrus,
// user and password) and the list made in the page reaches it.
func TestBrowserConnectJMAP(t *testing.T) {
	sessionURL, pass := cyrusJMAP(t)
	br := browser(t)
	p := newProfile(t, "aimee")
	pg := open(t, br, "aimee", p.app())
	pg.fill("new-name", "Aimee")
	pg.click("", "Start")
	pg.click("", "I wrote it down")
	pg.fill("jmap-url", sessionURL)
	pg.fill("jmap-user", dovecotUser)
	pg.fill("jmap-pass", pass)
	pg.click(`//section[@aria-labelledby="h-jmap"]`, "Connect")
	pg.waitText("Connected to JMAP", syncWait)
	pg.fill("new-list", "Groceries")
	pg.click("", "Make it")
	pg.waitJS(`document.getElementById("sync").dataset.state === "ok"`, syncWait) // published: nothing behind

	// Another device of Aimee's finds the list on the account.
	q := p.otherDevice("other", "Aimee")
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(pass), 0o600); err != nil {
		t.Fatal(err)
	}
	q.ferry("connect", "jmap", sessionURL, "--user", dovecotUser, "--password-file", pw)
	if out := q.ferry("lists"); !strings.Contains(out, "Groceries") {
		t.Errorf("the other device does not find the list made in the page: %s", out)
	}
}
