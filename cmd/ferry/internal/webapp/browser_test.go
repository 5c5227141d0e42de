package webapp_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/faultproxy"
)

// syncWait bounds what waits on the mail server and the other device:
// generous, since the machine may be loaded; each wait ends as soon as
// what it waits for shows.
const syncWait = 90 * time.Second

// liveWait is the bound for a change to show on another device's
// open page, without reloading it.
const liveWait = 2 * time.Second

// TestBrowserTwoPeople is the app's story on a real Dovecot, in a real
// browser, each person with ferry app on their own profile in their own
// page: first run, a list shared by link and approved in the pages, an item
// showing up live on the other page, a conflict made offline settled with
// one click, a reader's page without editing, and removal.
func TestBrowserTwoPeople(t *testing.T) {
	addr, pass := dovecot(t)
	br := browser(t)
	px := faultproxy.Start(t, addr) // both devices reach the account through it: the test takes them offline
	host, port, _ := net.SplitHostPort(px.Addr())
	a, b := newProfile(t, "aimee"), newProfile(t, "ben")
	pa := open(t, br, "aimee", a.app())
	pb := open(t, br, "ben", b.app())

	// First run: name, backup key shown once, connect IMAP.
	pa.waitText("Welcome to Ferry", actionWait)
	pa.screenshot("welcome")
	pa.fill("new-name", "Aimee")
	pa.click("", "Start")
	pa.waitText("Write this down", actionWait)
	key := eval[string](pa, `document.getElementById("backup-key").textContent`)
	if len(strings.Fields(key)) < 10 {
		t.Fatalf("backup key shown as %q", key)
	}
	pa.screenshot("backup-key")
	pa.goTo("/") // a reload before it is written down shows it still
	pa.waitText(key, actionWait)
	pa.click("", "I wrote it down")
	pa.waitText("Connect a mail account", actionWait)
	pa.goTo("/")
	pa.waitText("connect a mail account", actionWait)
	if strings.Contains(pa.text(), key) {
		t.Error("the backup key is shown again after it was written down")
	}
	pa.goTo("/account")
	pa.fill("imap-host", host)
	pa.fill("imap-port", port)
	pa.fill("imap-sec", "none")
	pa.fill("imap-user", dovecotUser)
	pa.fill("imap-pass", pass)
	pa.screenshot("connect")
	pa.click(`//section[@aria-labelledby="h-imap"]`, "Connect")
	pa.waitText("Connected to", syncWait)

	// A list, shared by link.
	pa.fill("new-list", "Groceries")
	pa.click("", "Make it")
	pa.waitJS(`document.querySelector("h1").textContent === "Groceries"`, actionWait)
	list := eval[string](pa, `location.pathname`)
	pa.goTo(list + "/share")
	pa.fill("inv-form", "link")
	pa.click("", "Make invite")
	pa.waitJS(`document.getElementById("invite-link") !== null`, actionWait)
	link := eval[string](pa, `document.getElementById("invite-link").value`)
	if !pa.has(`document.querySelector("img.qr").naturalWidth > 0`) {
		t.Error("the invite's QR code image did not load")
	}
	pa.screenshot("share-link")

	// Ben: first run, then joins with the link (it brings the account).
	pb.fill("new-name", "Ben")
	pb.click("", "Start")
	pb.click("", "I wrote it down")
	pb.waitText("I was sent a link", actionWait)
	pb.fill("join-link", link)
	pb.click(`//section[@aria-labelledby="h-join"]`, "Ask to join")
	pb.waitText("Waiting for Aimee to let you in.", actionWait)

	// Aimee's share page shows the request as it arrives; she approves.
	pa.waitJS(`[...document.querySelectorAll("main button")].some(b => b.textContent.trim() === "Approve")`, syncWait)
	if !strings.Contains(pa.text(), "Ben wants to join") {
		t.Errorf("the request does not say who asks: %q", pa.text())
	}
	pa.screenshot("share-request")
	pa.click("", "Approve")
	pa.waitText("Ben can now use Groceries", syncWait)
	pb.waitJS(`document.querySelector('.lists a[href="`+list+`"]') !== null`, syncWait) // on Ben's page, live
	pb.goTo(list)
	pb.waitJS(`document.getElementById("new-item") !== null`, actionWait)

	// An item added on one page shows on the other within 2 s, no reload.
	origin := eval[float64](pb, `performance.timeOrigin`)
	pa.goTo(list)
	pa.fill("new-item", "Milk")
	pa.fill("new-tags", "dairy")
	pa.click("", "Add")
	pa.waitText("Milk", actionWait)
	added := time.Now()
	pb.waitJS(`[...document.querySelectorAll(".items .title")].some(e => e.textContent === "Milk")`, syncWait)
	d := time.Since(added)
	t.Logf("the item showed on the other page %s after it was added", d.Round(time.Millisecond))
	if d > liveWait {
		t.Errorf("that is later than %s", liveWait)
	}
	if o := eval[float64](pb, `performance.timeOrigin`); o != origin {
		t.Error("the other page was reloaded to show the item; it should update in place")
	}
	pa.screenshot("list")

	// A conflict made offline: both change the title while the account is
	// out of reach; back online, both pages show both values with their
	// authors, and one click settles it everywhere.
	item := eval[string](pa, `document.querySelector(".items .title").getAttribute("href")`)
	pa.goTo(item)
	pb.goTo(item)
	px.Refuse(true)
	px.Cut()
	offline := `document.getElementById("sync").dataset.state === "offline"`
	pa.waitJS(offline, syncWait)
	pb.waitJS(offline, syncWait)
	pa.fill("f-title", "Oat milk")
	pa.click(`//form[.//input[@id="f-title"]]`, "Save")
	pb.fill("f-title", "Soy milk")
	pb.click(`//form[.//input[@id="f-title"]]`, "Save")
	px.Refuse(false)
	for _, p := range []*page{pa, pb} {
		p.waitJS(`document.querySelector(".conflict-box") !== null && document.querySelectorAll(".conflict-box .side").length === 2`, syncWait)
		sides := eval[string](p, `[...document.querySelectorAll(".conflict-box .side")].map(s => s.innerText.replace(/\s+/g, " ").trim()).join(" | ")`)
		for _, want := range []string{"Oat milk by Aimee", "Soy milk by Ben"} {
			if !strings.Contains(sides, want) {
				t.Errorf("%s's page shows the conflict as %q, lacking %q", p.name, sides, want)
			}
		}
	}
	pa.screenshot("conflict")
	pa.click("", "Keep Ben's")
	settled := `document.querySelector(".conflict-box") === null && document.querySelector("h1").textContent === "Soy milk"`
	pa.waitJS(settled, actionWait)
	pb.waitJS(settled, syncWait)

	// Ben made a reader: his page offers no editing.
	pa.goTo(list + "/share")
	pa.click("", "Make reader")
	pa.waitText("Ben is now a reader", syncWait)
	pa.screenshot("share-members")
	pb.goTo(list)
	pb.waitText("You can read this list", syncWait)
	noEditing := `document.querySelectorAll('main form[action$="/items"], main form[action*="/i/"], main form[action$="/rename"], main form[action$="/delete"], main button.check').length === 0`
	if !pb.has(noEditing) {
		t.Errorf("the reader's list page offers editing: %s", eval[string](pb, `document.querySelector("main").innerHTML`))
	}
	pb.screenshot("reader")
	pb.goTo(item)
	pb.waitText("Soy milk", actionWait)
	if !pb.has(noEditing + ` && document.querySelectorAll("main input:not([type=hidden]), main textarea").length === 0`) {
		t.Errorf("the reader's item page offers editing: %s", eval[string](pb, `document.querySelector("main").innerHTML`))
	}

	// Removed: Ben's page says so.
	pb.goTo(list)
	pa.click("", "Remove")
	pa.waitText("Removed Ben", syncWait)
	pb.waitText("Groceries is no longer shared with you.", syncWait)
	pb.screenshot("removed")
	pa.goTo("/")
	pa.waitText("Groceries", actionWait)
	pa.screenshot("lists")
}
