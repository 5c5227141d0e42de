package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

func TestDemoHumanOutput(t *testing.T) {
	out, err := run(t, "demo")
	if err != nil {
		t.Fatalf("ferry demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"hub         memhub (in memory)",
		"finds \"Groceries\" in home (3 items)",
		"Device A (",
		"Device B (",
		"- Milk     qty CONFLICT 2 | 3  tags dairy",
		"- Coffee   qty 1",
		"ok   both devices hold identical merged state",
		"The two devices converged to identical lists.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "FAIL") || strings.Contains(out, "Bread") && !strings.Contains(out, "Bread deleted") {
		t.Errorf("unexpected output:\n%s", out)
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
	if !res.OK || !res.Identical || len(res.Devices) != 2 {
		t.Fatalf("result: %s", out)
	}
	a, b := res.Devices[0], res.Devices[1]
	if a.DeviceID == b.DeviceID || a.State != b.State || !reflect.DeepEqual(a.Items, b.Items) {
		t.Fatalf("devices differ: %s", out)
	}
	want := []demoItem{
		{Title: []string{"Apples"}, Qty: []string{"6"}, Tags: []string{}},
		{Title: []string{"Coffee"}, Qty: []string{"1"}, Tags: []string{}},
		{Title: []string{"Eggs"}, Qty: []string{"12"}, Tags: []string{}},
		{Title: []string{"Milk"}, Qty: []string{"2", "3"}, Conflict: true, Tags: []string{"dairy"}},
	}
	if !reflect.DeepEqual(a.Items, want) {
		t.Fatalf("items %+v, want %+v", a.Items, want)
	}
	if !reflect.DeepEqual(a.List, []string{"Groceries"}) {
		t.Fatalf("list name %q", a.List)
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
	// §5.3: the first 20 bytes of the user ID in b32, in 8 groups of 4.
	if g := strings.Fields(res.User); len(g) != 8 || len(strings.Join(g, "")) != 32 {
		t.Fatalf("user shown as %q", res.User)
	}
}

func TestDemoFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--imap", "127.0.0.1:1"},
		{"demo", "--jmap", "http://127.0.0.1:1/", "--imap", "127.0.0.1:1", "--user", "u"},
		{"demo", "stray"},
	} {
		if out, err := run(t, args...); err == nil {
			t.Errorf("%q accepted:\n%s", args, out)
		}
	}
}

func TestDemoCheckFailsOnDivergence(t *testing.T) {
	r := &demoRun{res: &demoResult{Devices: []demoDevice{
		{Name: "A", State: "aa", Items: []demoItem{{Title: []string{"Milk"}}}},
		{Name: "B", State: "bb", Items: []demoItem{{Title: []string{"Milk"}}}},
	}}}
	r.check()
	if r.res.Identical || r.res.OK {
		t.Fatalf("diverging devices pass: %+v", r.res)
	}
	var out bytes.Buffer
	printDemo(&out, r.res)
	if !strings.Contains(out.String(), "FAIL both devices hold identical merged state") ||
		!strings.Contains(out.String(), "did NOT converge") {
		t.Fatalf("output:\n%s", out.String())
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

// TestDemoDovecot runs the demo scenario against the real Dovecot of
// scripts/setup.d/10-dovecot.sh, as user carol: the imaphub tests reset
// the folders of the other users, carol is used there only by benchmarks
// and a read-only probe, and the demo removes its own messages afterwards.
// Messages of other channels in carol's folder are skipped, as they must be.
func TestDemoDovecot(t *testing.T) {
	addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
	pass := credential(realtest.Getenv("FERRY_DOVECOT_USERS"), " ", "carol")
	if addr == "" || pass == "" {
		realServer(t, "FERRY_DOVECOT_ADDR / FERRY_DOVECOT_USERS not set (run scripts/setup.d/10-dovecot.sh and source .cache/env.d/dovecot.env)")
	}
	if nc, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		realServer(t, "Dovecot at "+addr+" not reachable: "+err.Error())
	} else {
		nc.Close()
	}
	res := demoJSON(t, "--imap", addr, "--user", "carol", "--pass", pass)
	if !strings.HasPrefix(res.Hub, "imap ") || !strings.Contains(res.Steps[len(res.Steps)-1], "messages are removed") {
		t.Fatalf("hub %q, steps %q", res.Hub, res.Steps)
	}
}

// TestDemoCyrus runs the demo scenario against the real Cyrus JMAP server of
// scripts/setup.d/20-cyrus.sh, as user heidi (not used by other tests).
func TestDemoCyrus(t *testing.T) {
	url := realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	pass := credential(realtest.Getenv("FERRY_CYRUS_USERS"), ",", "heidi")
	if url == "" || pass == "" {
		realServer(t, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS not set (run scripts/setup.d/20-cyrus.sh and source .cache/env.d/cyrus.env)")
	}
	c := &http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Get(url); err != nil {
		realServer(t, "Cyrus at "+url+" not reachable: "+err.Error())
	} else {
		resp.Body.Close()
	}
	res := demoJSON(t, "--jmap", url, "--user", "heidi", "--pass", pass)
	if !strings.HasPrefix(res.Hub, "jmap ") || !strings.Contains(res.Steps[len(res.Steps)-1], "messages are removed") {
		t.Fatalf("hub %q, steps %q", res.Hub, res.Steps)
	}
}
