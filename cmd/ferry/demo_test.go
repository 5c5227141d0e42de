package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// The README's first command tells the whole story and every check holds.
func TestDemoHumanOutput(t *testing.T) {
	out, err := run(t, "demo")
	if err != nil {
		t.Fatalf("ferry demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"hub   memhub (in memory)",
		"Jesper's phone: Add 'Jesper's laptop'? Code ",
		"Aimee: ",
		"Ben: \"Waiting for Jesper to approve\"",
		"qty CONFLICT: 3 by Jesper, 5 by Aimee",
		"Ben: ",
		"House is no longer shared with you.",
		"A tablet Jesper sets up now from his backup key finds everything:",
		"Everyone who should sees the same list; nothing was lost.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a check failed")
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// demoJSON runs ferry demo with --json and the given flags, and checks
// what every hub must give.
func demoJSON(t *testing.T, args ...string) demoResult {
	t.Helper()
	out, err := run(t, append([]string{"demo", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("ferry demo: %v\n%s", err, out)
	}
	var res demoResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if !res.OK || len(res.Checks) < 8 || len(res.Steps) < 8 {
		t.Fatalf("result: %s", out)
	}
	for _, c := range res.Checks {
		if !c.OK {
			t.Fatalf("check failed: %s", c.Check)
		}
	}
	return res
}

func TestDemoJSON(t *testing.T) {
	res := demoJSON(t)
	if res.Hub != "memhub (in memory)" || len(res.Collection) != 26 {
		t.Fatalf("hub %q, collection %q", res.Hub, res.Collection)
	}
}

func TestDemoFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--imap", "127.0.0.1:1"}, "--user is required"},
		{[]string{"demo", "--jmap", "http://127.0.0.1:1/", "--imap", "127.0.0.1:1", "--user", "u"}, "exclude each other"},
		{[]string{"demo", "--imap", "nohost", "--user", "u"}, "host:port"},
		{[]string{"demo", "--jmap", "ftp://x", "--user", "u"}, "http(s) URL"},
		{[]string{"demo", "--tls"}, "--tls applies to --imap only"},
		{[]string{"demo", "stray"}, ""},
	} {
		out, err := run(t, tc.args...)
		if err == nil {
			t.Errorf("%q accepted:\n%s", tc.args, out)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A wrong port is refused in seconds with one human line, never a Go error
// chain.
func TestDemoUnreachableServer(t *testing.T) {
	start := time.Now()
	_, err := run(t, "demo", "--imap", "127.0.0.1:1", "--user", "u", "--pass", "p")
	if err == nil || time.Since(start) > 30*time.Second {
		t.Fatalf("demo against a closed port: %v after %v", err, time.Since(start))
	}
	if strings.Count(err.Error(), ": ") > 2 {
		t.Fatalf("not one human line: %q", err)
	}
}

func TestDemoCheckFails(t *testing.T) {
	s := &story{res: &demoResult{}}
	s.check()
	if s.res.OK {
		t.Fatal("a story where nothing happened passes its checks")
	}
}

// realServer skips the test, or fails it when FERRY_REQUIRE_REAL=1, when a
// server is not configured or not reachable.
func realServer(t *testing.T, why string) {
	t.Helper()
	realtest.Unavailable(t, why)
}

// credential returns the password of user in a "u:p<sep>u:p" list.
func credential(list, sep, user string) string {
	for _, up := range strings.Split(list, sep) {
		if u, p, _ := strings.Cut(strings.TrimSpace(up), ":"); u == user {
			return p
		}
	}
	return ""
}

// TestDemoDovecot runs the story against the real Dovecot of
// scripts/setup.d/10-dovecot.sh, as user carol; the demo removes its own
// messages afterwards and leaves others alone.
func TestDemoDovecot(t *testing.T) {
	addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
	pass := credential(realtest.Getenv("FERRY_DOVECOT_USERS"), " ", "carol")
	if addr == "" || pass == "" {
		realServer(t, "FERRY_DOVECOT_ADDR / FERRY_DOVECOT_USERS not set (run scripts/setup.d/10-dovecot.sh)")
	}
	if nc, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		realServer(t, "Dovecot at "+addr+" not reachable: "+err.Error())
	} else {
		nc.Close()
	}
	res := demoJSON(t, "--imap", addr, "--user", "carol", "--pass", pass)
	if !strings.HasPrefix(res.Hub, "imap ") || !strings.Contains(res.Steps[len(res.Steps)-1].Title, "messages are removed") {
		t.Fatalf("hub %q, last step %q", res.Hub, res.Steps[len(res.Steps)-1].Title)
	}
}

// TestDemoCyrus runs the story against the real Cyrus JMAP server of
// scripts/setup.d/20-cyrus.sh, as user heidi, given only the server's
// origin (the session URL is found at /.well-known/jmap).
func TestDemoCyrus(t *testing.T) {
	url := realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	pass := credential(realtest.Getenv("FERRY_CYRUS_USERS"), ",", "heidi")
	if url == "" || pass == "" {
		realServer(t, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS not set (run scripts/setup.d/20-cyrus.sh)")
	}
	c := &http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(url); err != nil {
		realServer(t, "Cyrus at "+url+" not reachable: "+err.Error())
	} else {
		resp.Body.Close()
	}
	origin, _, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	res := demoJSON(t, "--jmap", "http://"+origin+"/", "--user", "heidi", "--pass", pass)
	if !strings.HasPrefix(res.Hub, "jmap ") || !strings.Contains(res.Steps[len(res.Steps)-1].Title, "messages are removed") {
		t.Fatalf("hub %q, last step %q", res.Hub, res.Steps[len(res.Steps)-1].Title)
	}
}
