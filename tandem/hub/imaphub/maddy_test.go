package imaphub

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// The fourth real IMAP server family (issue 28, point 5): maddy, which
// scripts/setup.d/15-maddy.sh builds from the module proxy and starts on
// 127.0.0.1. Its IMAP code (go-imap v1 with go-imap-sql) is neither
// Dovecot's nor Cyrus's (docs/decisions/tandem-hub-imap-maddy.md).
// Users: alice (refusal or conformance), walter (faults).

// maddyIMAP returns the Config of user on maddy, or skips the test (fails
// it when FERRY_REQUIRE_REAL=1) if maddy is not reachable.
func maddyIMAP(tb testing.TB, user string) Config {
	tb.Helper()
	addr := realtest.Getenv("FERRY_MADDY_ADDR")
	pass := ""
	for _, up := range strings.Fields(realtest.Getenv("FERRY_MADDY_USERS")) {
		if u, p, _ := strings.Cut(up, ":"); u == user {
			pass = p
		}
	}
	if addr == "" || pass == "" {
		realtest.Unavailable(tb, "maddy: FERRY_MADDY_ADDR or user "+user+" not set (run scripts/setup.d/15-maddy.sh)")
	}
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		realtest.Unavailable(tb, "maddy: "+err.Error())
	}
	nc.Close()
	return Config{Addr: addr, User: user, Password: pass}
}

// rawSession logs in to cfg with a plain IMAP exchange of its own (not
// this package's, which refuses servers without UIDPLUS or IDLE), runs
// the commands, and returns every line the server sent after the login
// (a command's NO is in them; a failed login fails t).
func rawSession(t *testing.T, cfg Config, commands ...string) []string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", cfg.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(realtest.Scale(30 * time.Second)))
	r := bufio.NewReader(nc)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("greeting: %v", err)
	}
	var out []string
	for i, c := range append([]string{"LOGIN " + quote(cfg.User) + " " + quote(cfg.Password)}, commands...) {
		tag := fmt.Sprintf("r%d", i)
		fmt.Fprintf(nc, "%s %s\r\n", tag, c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if i > 0 {
				out = append(out, strings.TrimRight(line, "\r\n"))
			}
			if strings.HasPrefix(line, tag+" ") {
				if i == 0 && !strings.HasPrefix(line, tag+" OK") {
					t.Fatalf("login: %s", line)
				}
				break
			}
		}
	}
	return out
}

// maddyMissing returns the extensions §10.3 requires that maddy does not
// announce once logged in.
func maddyMissing(t *testing.T, cfg Config) []string {
	caps := map[string]bool{}
	for _, line := range rawSession(t, cfg, "CAPABILITY") {
		if rest, ok := strings.CutPrefix(line, "* CAPABILITY "); ok {
			for _, c := range strings.Fields(rest) {
				caps[strings.ToUpper(c)] = true
			}
		}
	}
	var missing []string
	for _, need := range []string{"UIDPLUS", "IDLE"} {
		if !caps[need] {
			missing = append(missing, need)
		}
	}
	return missing
}

// TestMaddy: maddy 0.8.1 announces IDLE but not UIDPLUS (it answers APPEND
// without APPENDUID, and UID EXPUNGE with "NO Command unsupported with
// UID"), which §10.3 requires. Open refuses it with a protocol error that
// names the extension, before touching the account (no Tandem folder is
// made). Should a later maddy announce both, the conformance suite runs
// against it instead.
func TestMaddy(t *testing.T) {
	cfg := maddyIMAP(t, "alice")
	missing := maddyMissing(t, cfg)
	if len(missing) == 0 {
		t.Log("maddy announces UIDPLUS and IDLE: running the conformance suite")
		hubtest.Run(t, harness(t, cfg))
		return
	}
	t.Logf("maddy lacks %v, which §10.3 requires: the binding must refuse it", missing)
	rawSession(t, cfg, "DELETE "+quote(hub.Folder))
	_, err := Open(ctx5(t), cfg)
	if !errors.Is(err, hub.ErrProtocol) || errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrAuth) {
		t.Fatalf("Open on maddy: %v, want a protocol error (hub.ErrProtocol)", err)
	}
	for _, ext := range missing {
		if !strings.Contains(err.Error(), ext) || !strings.Contains(err.Error(), "cannot be a Tandem hub") {
			t.Fatalf("Open on maddy: %q, want it to say that the server lacks %s and cannot be a hub", err, ext)
		}
	}
	for _, line := range rawSession(t, cfg, `LIST "" "*"`) {
		if strings.HasPrefix(line, "* LIST") && strings.Contains(line, hub.Folder) {
			t.Fatalf("the refused Open left a folder on the account: %s", line)
		}
	}
}

// TestMaddyFaults: the fault cases that need no working binding hold on
// maddy too: a server that is down is hub.ErrUnavailable, a wrong
// password is hub.ErrAuth (both reported before the extensions are
// looked at), and a NO [SERVERBUG] (injected by a fault proxy, as Dovecot
// says it under load) to the login is not a refused credential.
func TestMaddyFaults(t *testing.T) {
	base := maddyIMAP(t, "walter")
	cfg, p := proxied(t, base)

	bad := cfg
	bad.Password = "wrong"
	if _, err := Open(ctx5(t), bad); !errors.Is(err, hub.ErrAuth) {
		t.Errorf("Open with a wrong password: %v, want hub.ErrAuth", err)
	}

	loginOK := regexp.MustCompile(`(?m)^(t[0-9]+) OK [^\r\n]*(LOGIN|AUTHENTICATE) completed`)
	p.Rewrite(func(b []byte) []byte {
		return loginOK.ReplaceAll(b, []byte("$1 NO [SERVERBUG] Internal error occurred."))
	})
	_, err := Open(ctx5(t), cfg)
	if !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrAuth) {
		t.Errorf("Open while maddy's logins fail for now: %v, want hub.ErrUnavailable, not hub.ErrAuth", err)
	}

	p.Rewrite(nil)
	p.Refuse(true)
	p.Cut()
	_, err = Open(ctx5(t), cfg)
	wantUnavailable(t, "Open on a maddy that refuses connections", err)
}
