package webapp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// ferryBin is the ferry binary the tests run, built once by TestMain.
var ferryBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "ferry-app-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ferryBin = filepath.Join(dir, "ferry")
	build := exec.Command("go", "build", "-o", ferryBin, "github.com/ferry-sync/ferry/cmd/ferry")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building ferry:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// profile is one profile (one device) in a home of its own.
type profile struct {
	t    *testing.T
	dir  string
	home string
}

func newProfile(t *testing.T, name string) *profile {
	home := t.TempDir()
	return &profile{t: t, dir: filepath.Join(home, name), home: home}
}

func (p *profile) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, ferryBin, args...)
	c.Env = []string{"HOME=" + p.home, "PATH=" + os.Getenv("PATH"), "FERRY_HOME=" + p.dir}
	return c
}

// ferry runs a ferry command on the profile and returns its output.
func (p *profile) ferry(args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 60*time.Second)
	defer cancel()
	out, err := p.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("ferry %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// app runs ferry app on the profile and returns the link it printed; the
// app stops (Ctrl-C) when the test ends.
func (p *profile) app() string {
	p.t.Helper()
	c := p.cmd(context.Background(), "app", "--no-open")
	out, err := c.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		c.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		var err error
		go func() { err = c.Wait(); close(done) }()
		select {
		case <-done:
			if err != nil {
				p.t.Errorf("ferry app did not stop cleanly on Ctrl-C: %v", err)
			}
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			<-done
			p.t.Errorf("ferry app did not stop within 30 s of Ctrl-C")
		}
	})
	links := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "http://") {
				links <- l
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-links:
		return l
	case <-time.After(30 * time.Second):
		p.t.Fatal("ferry app printed no link within 30 s")
	}
	return ""
}

// otherDevice sets up a new profile, named dir, as another device of p's
// user (ferry restore with p's backup key).
func (p *profile) otherDevice(dir, name string) *profile {
	p.t.Helper()
	var bk struct {
		Key string `json:"backup_key"`
	}
	if err := json.Unmarshal([]byte(p.ferry("backup-key", "--yes", "--json")), &bk); err != nil {
		p.t.Fatal(err)
	}
	q := newProfile(p.t, dir)
	cmd := q.cmd(p.t.Context(), "restore", "--name", name, "--backup-key-file", "-")
	cmd.Stdin = strings.NewReader(bk.Key)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("ferry restore: %v\n%s", err, out)
	}
	return q
}

// oneList makes Aimee's profile with the empty list Groceries, runs ferry
// app on it and opens the list in a page of br that listens for live
// updates. It returns the profile, the page and the list's ID.
func oneList(t *testing.T, br context.Context) (*profile, *page, string) {
	t.Helper()
	p := newProfile(t, "aimee")
	p.ferry("init", "--name", "Aimee")
	p.ferry("new", "Groceries")
	id := p.lists()[0].ID
	pg := open(t, br, "aimee", p.app())
	pg.goTo("/l/" + id)
	pg.waitJS(`document.documentElement.dataset.live === "on"`, actionWait)
	return p, pg, id
}

// base is the app's address without the secret.
func base(link string) string {
	u, _ := url.Parse(link)
	return u.Scheme + "://" + u.Host
}

// client is an HTTP client let in with the link's secret (its cookie).
func client(t *testing.T, link string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", link, resp.Status)
	}
	return c
}

// chromium is the browser the setup scripts installed.
func chromium(t *testing.T) string {
	t.Helper()
	bin := realtest.Getenv("CHROMIUM")
	if bin == "" {
		realtest.Unavailable(t, "CHROMIUM (run scripts/setup.d/50-chromium.sh)")
	}
	if _, err := os.Stat(bin); err != nil {
		realtest.Unavailable(t, "CHROMIUM="+bin+" is not there (run scripts/setup.d/50-chromium.sh)")
	}
	return bin
}

// browser starts a headless Chromium with a fresh profile; each tab made
// from the returned context is a page of its own.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", chromium(t), err)
	}
	return bctx
}

// page is one browser tab on one app.
type page struct {
	t    *testing.T
	name string
	ctx  context.Context
	base string
}

// open opens a tab and lets it in with the app's link.
func open(t *testing.T, b context.Context, name, link string) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab: no deadline on this first call
		t.Fatalf("opening a tab: %v", err)
	}
	p := &page{t: t, name: name, ctx: ctx, base: base(link)}
	p.do(chromedp.Navigate(link))
	p.waitJS(`document.readyState === "complete" && location.search === ""`, 10*time.Second)
	return p
}

// actionWait bounds one browser action (a click, a navigation).
var actionWait = realtest.Scale(30 * time.Second)

func (p *page) do(as ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionWait)
	defer cancel()
	if err := chromedp.Do(ctx, as...); err != nil {
		p.t.Fatalf("%s: %v\npage: %s", p.name, err, p.text())
	}
}

// text is the page's main text, for failure messages.
func (p *page) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// waitJS waits until the expression is true on the page (asking again
// through navigations, which end a page's evaluations).
func (p *page) waitJS(expr string, within time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(p.ctx, time.Until(deadline))
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("%s: %s did not hold within %s (%v)\npage: %s", p.name, expr, within, err, p.text())
}

// waitText waits until the page (its notices and main part) shows s.
func (p *page) waitText(s string, within time.Duration) {
	p.t.Helper()
	p.waitJS(fmt.Sprintf(`document.getElementById("live") !== null && document.getElementById("live").innerText.includes(%q)`, s), within)
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("%s: %s: %v", p.name, expr, err)
	}
	return v
}

func (p *page) has(expr string) bool {
	p.t.Helper()
	return eval[bool](p, expr)
}

// goTo navigates to a path of the app.
func (p *page) goTo(path string) {
	p.t.Helper()
	p.do(chromedp.Navigate(p.base + path))
}

// fill sets a field by its id.
func (p *page) fill(id, value string) {
	p.t.Helper()
	p.onNode(chromedp.SetValue(chromedp.ID(id), value))
}

// onNode runs an action on a node of the page, again if a live update
// swapped the node out between finding it and acting on it (the browser
// then answers that the node it was given is gone): a person's click or
// typing lands on the fresh page, and so does the test's.
func (p *page) onNode(a chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, actionWait)
	defer cancel()
	for {
		err := chromedp.Do(ctx, a)
		if err == nil {
			return
		}
		if !nodeGone(err) || ctx.Err() != nil {
			p.t.Fatalf("%s: %v\npage: %s", p.name, err, p.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeGone reports whether err is the browser saying a node the action
// held was removed from the page.
func nodeGone(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Could not find node with given id") ||
		strings.Contains(s, "No node with given id found") ||
		strings.Contains(s, "Node is detached from document") ||
		strings.Contains(s, "node is not attached")
}

// click clicks the button whose text is label (the first one under
// within, an XPath prefix, "" for anywhere) and waits for the next page.
func (p *page) click(within, label string) {
	p.t.Helper()
	before := eval[string](p, `String(performance.timeOrigin)`)
	p.onNode(chromedp.Click(fmt.Sprintf(`(%s//button[normalize-space()=%q])[1]`, within, label)))
	p.waitJS(fmt.Sprintf(`String(performance.timeOrigin) !== %q && document.readyState === "complete"`, before), actionWait)
}

// screenshot saves the page at desktop and phone widths when
// FERRY_APP_SCREENSHOTS names a directory (docs/screenshots in the repo).
func (p *page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("FERRY_APP_SCREENSHOTS")
	if dir == "" {
		return
	}
	for _, v := range []struct {
		suffix string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{}
		if v.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		p.do(chromedp.EmulateViewport(v.w, v.h, opts...), chromedp.Sleep(100*time.Millisecond))
		ctx, cancel := context.WithTimeout(p.ctx, actionWait)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			p.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+v.suffix+".png"), png, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	p.do(chromedp.EmulateViewport(1280, 800))
}

// The mail account of these tests, on Dovecot and on Cyrus: no other test
// package uses it (scripts/setup.d/10-dovecot.sh and 20-cyrus.sh make it).
const dovecotUser = "yara"

// dovecot returns the Dovecot account's address and password, with its
// Tandem folder emptied.
func dovecot(t *testing.T) (addr, pass string) {
	t.Helper()
	addr = realtest.Getenv("FERRY_DOVECOT_ADDR")
	for _, up := range strings.Fields(realtest.Getenv("FERRY_DOVECOT_USERS")) {
		if u, pw, ok := strings.Cut(up, ":"); ok && u == dovecotUser {
			pass = pw
		}
	}
	if addr == "" || pass == "" {
		realtest.Unavailable(t, "FERRY_DOVECOT_ADDR / FERRY_DOVECOT_USERS with user "+dovecotUser+" (run scripts/setup.d/10-dovecot.sh)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := imaphub.Open(ctx, imaphub.Config{Addr: addr, User: dovecotUser, Password: pass})
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	emptyFolder(ctx, t, s)
	return addr, pass
}

// cyrusJMAP returns Cyrus's JMAP session URL and the account's password,
// with its Tandem folder emptied.
func cyrusJMAP(t *testing.T) (sessionURL, pass string) {
	t.Helper()
	sessionURL = realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	for _, up := range strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",") {
		if u, pw, ok := strings.Cut(strings.TrimSpace(up), ":"); ok && u == dovecotUser {
			pass = pw
		}
	}
	if sessionURL == "" || pass == "" {
		realtest.Unavailable(t, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS with user "+dovecotUser+" (run scripts/setup.d/20-cyrus.sh)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := jmaphub.Open(ctx, jmaphub.Config{SessionURL: sessionURL, Username: dovecotUser, Password: pass})
	if err != nil {
		t.Fatalf("cyrus: %v", err)
	}
	emptyFolder(ctx, t, s)
	return sessionURL, pass
}

// emptyFolder removes every message of the store's Tandem folder.
func emptyFolder(ctx context.Context, t *testing.T, s hub.Store) {
	t.Helper()
	defer s.Close()
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Changes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]hub.ID, 0, len(ch.Added))
	for _, a := range ch.Added {
		ids = append(ids, a.ID)
	}
	if err := s.Destroy(ctx, ids); err != nil {
		t.Fatal(err)
	}
}
