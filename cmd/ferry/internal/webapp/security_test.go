package webapp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// lists is what ferry lists --json says the profile holds.
func (p *profile) lists() []struct{ ID, Name string } {
	p.t.Helper()
	var out []struct{ ID, Name string }
	if err := json.Unmarshal([]byte(p.ferry("lists", "--json")), &out); err != nil {
		p.t.Fatal(err)
	}
	return out
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf reads the form token from a page.
func csrfOf(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := csrfRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no form token on the page:\n%s", b)
	}
	return string(m[1])
}

// TestRefusedRequests: a request without the secret, with a foreign Host
// header (DNS rebinding), from another origin or without the form token
// is refused and changes nothing; the page carries a strict CSP.
func TestRefusedRequests(t *testing.T) {
	p := newProfile(t, "aimee")
	p.ferry("init", "--name", "Aimee")
	p.ferry("new", "Groceries")
	link := p.app()
	b := base(link)
	in := client(t, link)
	token := csrfOf(t, in, b)
	u, _ := url.Parse(b)
	_, port, _ := net.SplitHostPort(u.Host)

	resp, err := in.Get(b + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "form-action 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q allows inline script or style", csp)
	}

	post := func(c *http.Client, host, origin, token string) int {
		form := url.Values{"csrf": {token}, "name": {"Evil"}}
		req, _ := http.NewRequest(http.MethodPost, b+"/lists", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	stranger := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		name string
		code int
		want int
	}{
		{"no secret", post(stranger, "", b, token), http.StatusForbidden},
		{"wrong secret in the link", get(t, stranger, b+"/?key=guess"), http.StatusForbidden},
		{"no secret, page", get(t, stranger, b+"/"), http.StatusForbidden},
		{"no secret, events", get(t, stranger, b+"/events"), http.StatusForbidden},
		{"foreign Host", post(in, "evil.example:"+port, "http://evil.example:"+port, token), http.StatusMisdirectedRequest},
		{"foreign Host, page", getHost(t, in, b+"/", "evil.example:"+port), http.StatusMisdirectedRequest},
		{"another origin", post(in, "", "http://127.0.0.1:1", token), http.StatusForbidden},
		{"no origin", post(in, "", "", token), http.StatusForbidden},
		{"no token", post(in, "", b, ""), http.StatusForbidden},
		{"wrong token", post(in, "", b, token+"x"), http.StatusForbidden},
	} {
		if c.code != c.want {
			t.Errorf("%s: status %d, want %d", c.name, c.code, c.want)
		}
	}
	if ls := p.lists(); len(ls) != 1 || ls[0].Name != "Groceries" {
		t.Errorf("after refused requests the profile holds %v, want only Groceries", ls)
	}
	// The same post from the app's own page goes through: the refusals above
	// were about what they lacked.
	if code := post(in, "", b, token); code != http.StatusOK {
		t.Errorf("a proper post: status %d", code)
	}
	if ls := p.lists(); len(ls) != 2 {
		t.Errorf("a proper post made no list: %v", ls)
	}
}

func get(t *testing.T, c *http.Client, u string) int { return getHost(t, c, u, "") }

func getHost(t *testing.T, c *http.Client, u, host string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// hostile is a list title that attacks pages and terminals: markup, script
// and a right-to-left override.
const hostile = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>` + "\u202eevil" + `</bdi></h1><b>bold</b>`

// TestBrowserHostileTitle: in a real browser, a title of markup and script
// renders as text, runs nothing, and is isolated from the text around it;
// a form posted by another site's page changes nothing.
func TestBrowserHostileTitle(t *testing.T) {
	br := browser(t)
	p := newProfile(t, "aimee")
	p.ferry("init", "--name", "Aimee")
	p.ferry("new", hostile)
	id := p.lists()[0].ID
	p.ferry("add", id, hostile, "--tag", "<i>tag</i>")
	link := p.app()
	pg := open(t, br, "aimee", link)
	pg.goTo("/l/" + id)
	pg.waitJS(`document.querySelector("h1") !== null`, actionWait)
	if got := eval[string](pg, `document.querySelector("h1").textContent`); got != hostile {
		t.Errorf("the title shows as %q, want the text %q", got, hostile)
	}
	if pg.has(`window.__pwned !== undefined || document.querySelector("main img, main script, main b") !== null`) {
		t.Errorf("the hostile title became markup or ran: %s", eval[string](pg, `document.querySelector("main").innerHTML`))
	}
	if !pg.has(`document.querySelector("h1 bdi") !== null && getComputedStyle(document.querySelector("h1 bdi")).unicodeBidi === "isolate"`) {
		t.Error("the title is not isolated from the text around it (bidi)")
	}
	if got := eval[int](pg, `[...document.querySelectorAll(".items .title")].filter(e => e.textContent === `+jsString(hostile)+`).length`); got != 1 {
		t.Errorf("the item titled with markup shows %d times as text, want 1", got)
	}

	// Another site's page (same host, another port) posts a form to the app,
	// with the right token even: refused by origin.
	token := csrfOf(t, client(t, link), base(link))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id=f method=post action="%s/lists"><input name=csrf value="%s"><input name=name value="Evil"><button id=go>go</button></form>`, base(link), token)
	})}
	go evil.Serve(ln)
	t.Cleanup(func() { evil.Close() })
	pg.do()
	ev := open(t, br, "evil", "http://"+ln.Addr().String()+"/")
	ev.do()
	ev.click("", "go")
	if ls := p.lists(); len(ls) != 1 {
		t.Errorf("a cross-site form post made a list: %v", ls)
	}
	if !strings.Contains(ev.text(), "another site") {
		t.Errorf("the cross-site post was not refused as such: %q", ev.text())
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
