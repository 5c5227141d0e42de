package tandemcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// ferryBin is the ferry binary the tests run, built once by TestMain.
var ferryBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run()) // fuzzing needs no binary
	}
	dir, err := os.MkdirTemp("", "ferry-cli-test-")
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

// result is what one ferry run gave.
type result struct {
	out, err string
	code     int
}

// device is one profile: one device.
type device struct {
	t    *testing.T
	dir  string
	home string
	env  []string
}

// newDevice is a profile directory (not created yet) in a fresh home.
func newDevice(t *testing.T, name string) *device {
	home := t.TempDir()
	return &device{t: t, dir: filepath.Join(home, name), home: home}
}

// run runs ferry with the device's profile, no standard input.
func (d *device) run(args ...string) result { return d.runIn("", args...) }

// runIn runs ferry with the device's profile and stdin.
func (d *device) runIn(stdin string, args ...string) result {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ferryBin, args...)
	cmd.Env = append([]string{"HOME=" + d.home, "PATH=" + os.Getenv("PATH"), "FERRY_HOME=" + d.dir, "FERRY_DEBUG=" + os.Getenv("FERRY_DEBUG")}, d.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out: out.String(), err: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("ferry %v: %v", args, err)
	}
	return r
}

// ok runs ferry and fails the test unless it exits 0.
func (d *device) ok(args ...string) string {
	d.t.Helper()
	r := d.run(args...)
	if r.code != 0 {
		d.t.Fatalf("ferry %s: exit %d\nstdout: %s\nstderr: %s\nlog: %s", strings.Join(args, " "), r.code, r.out, r.err, d.logTail())
	}
	return r.out
}

// logTail is the end of the profile's log, for a failure's message.
func (d *device) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "ferry.log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// okIn is ok with standard input.
func (d *device) okIn(stdin string, args ...string) string {
	d.t.Helper()
	r := d.runIn(stdin, args...)
	if r.code != 0 {
		d.t.Fatalf("ferry %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// jsonOut runs ferry with --json and decodes stdout.
func (d *device) jsonOut(v any, args ...string) {
	d.t.Helper()
	out := d.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		d.t.Fatalf("ferry %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// wantErr checks that a run failed with code, one line on stderr
// containing msg, nothing on stdout, and no HTML or Go error chain.
func wantErr(t *testing.T, r result, code int, msg string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, code, r.err)
	}
	if !strings.Contains(r.err, msg) {
		t.Errorf("stderr %q lacks %q", r.err, msg)
	}
	humanLine(t, r.err)
}

// humanLine checks that s is one line for a person.
func humanLine(t *testing.T, s string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var errLines []string
	for _, l := range lines {
		if strings.HasPrefix(l, "ferry: ") || strings.HasPrefix(l, "{") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 {
		t.Errorf("want one error line, got %q", s)
	}
	for _, bad := range []string{"<html", "<HTML", "<!DOCTYPE", "tandem: ", "imaphub", "jmaphub", ": dial tcp", "context deadline", "panic"} {
		if strings.Contains(s, bad) {
			t.Errorf("error output %q has %q", s, bad)
		}
	}
}

// credential finds user's password in a list of user:password pairs.
func credential(list, sep, user string) string {
	for _, up := range strings.Split(list, sep) {
		if u, p, ok := strings.Cut(strings.TrimSpace(up), ":"); ok && u == user {
			return p
		}
	}
	return ""
}

// The mail accounts of these tests: no other test package uses them
// (scripts/setup.d/10-dovecot.sh and 20-cyrus.sh make them).
const (
	dovecotUser = "trent"
	cyrusUser   = "trent"
)

// dovecotAccount returns the Dovecot account's address and password,
// with its Tandem folder emptied.
func dovecotAccount(t *testing.T) (addr, user, pass string) {
	t.Helper()
	return imapAccount(t, "FERRY_DOVECOT_ADDR", "FERRY_DOVECOT_USERS", " ", dovecotUser, "10-dovecot.sh")
}

// cyrusIMAPAccount returns Cyrus's IMAP address and the account's
// password, with its Tandem folder emptied.
func cyrusIMAPAccount(t *testing.T) (addr, user, pass string) {
	t.Helper()
	return imapAccount(t, "FERRY_CYRUS_IMAP_ADDR", "FERRY_CYRUS_USERS", ",", cyrusUser, "20-cyrus.sh")
}

// imapAccount reads an IMAP server's address and user's password from the
// variables its setup script wrote, and empties the user's Tandem folder.
func imapAccount(t *testing.T, addrVar, usersVar, sep, user, script string) (addr, _, pass string) {
	t.Helper()
	addr = realtest.Getenv(addrVar)
	pass = credential(realtest.Getenv(usersVar), sep, user)
	if addr == "" || pass == "" {
		realtest.Unavailable(t, addrVar+" / "+usersVar+" with user "+user+" (run scripts/setup.d/"+script+")")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := imaphub.Open(ctx, imaphub.Config{Addr: addr, User: user, Password: pass})
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	emptyFolder(ctx, t, s)
	return addr, user, pass
}

// imapServers are the real IMAP servers a test runs on, each giving its
// account as dovecotAccount does.
var imapServers = []struct {
	name    string
	account func(*testing.T) (addr, user, pass string)
}{{"dovecot", dovecotAccount}, {"cyrus", cyrusIMAPAccount}}

// cyrusAccount returns Cyrus's JMAP URL and the account's password, with
// its Tandem folder emptied.
func cyrusAccount(t *testing.T) (url, user, pass string) {
	t.Helper()
	url = realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	pass = credential(realtest.Getenv("FERRY_CYRUS_USERS"), ",", cyrusUser)
	if url == "" || pass == "" {
		realtest.Unavailable(t, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS with user "+cyrusUser+" (run scripts/setup.d/20-cyrus.sh)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := jmaphub.Open(ctx, jmaphub.Config{SessionURL: url, Username: cyrusUser, Password: pass})
	if err != nil {
		t.Fatalf("cyrus: %v", err)
	}
	emptyFolder(ctx, t, s)
	return url, cyrusUser, pass
}

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

// writeFile writes a file in the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// stored is what a profile holds, as ferry shows it, to check that a
// failed command changed nothing.
func (d *device) stored() string {
	d.t.Helper()
	var sb strings.Builder
	for _, f := range []string{"profile.json", "state.json"} {
		b, _ := os.ReadFile(filepath.Join(d.dir, f))
		sb.Write(b)
	}
	if _, err := os.Stat(filepath.Join(d.dir, "profile.json")); err != nil {
		return sb.String()
	}
	sb.WriteString(d.ok("lists", "--json"))
	var st map[string]any
	d.jsonOut(&st, "status")
	fmt.Fprint(&sb, st["hub"], st["pending"], st["last_sync"], st["connection"])
	var lists []struct{ ID string }
	json.Unmarshal([]byte(d.ok("lists", "--json")), &lists)
	for _, l := range lists {
		sb.WriteString(d.ok("show", l.ID, "--all", "--json"))
	}
	return sb.String()
}
