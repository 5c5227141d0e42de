package imaphub

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// Real-server tests run against the Dovecot that scripts/setup.d/10-dovecot.sh
// starts (docs/decisions/tandem-hub-imap-test-servers.md). Each test uses its own user, so packages and tests don't collide:
//
//	alice  conformance suite, QRESYNC (127.0.0.1:1143)
//	bob    conformance suite, no QRESYNC, namespace prefix INBOX. (:1144)
//	carol  not used here (cmd/ferry TestDemoDovecot)
//	grace  benchmarks
//	dave   one folder seen through both instances
//	erin   UIDVALIDITY change
//	frank  IDLE re-issue

// dovecot returns the Config of user on the instance named by env
// (FERRY_DOVECOT_ADDR or FERRY_DOVECOT_PLAIN_ADDR), or skips the test (fails
// it when FERRY_REQUIRE_REAL=1) if that server is not reachable.
func dovecot(tb testing.TB, env, user string) Config {
	tb.Helper()
	unavailable := func(why string) {
		tb.Helper()
		realtest.Unavailable(tb, "Dovecot: "+why+" (run scripts/setup.d/10-dovecot.sh)")
	}
	addr := realtest.Getenv(env)
	if addr == "" {
		unavailable(env + " is not set")
	}
	pass := ""
	for _, up := range strings.Fields(realtest.Getenv("FERRY_DOVECOT_USERS")) {
		if u, p, _ := strings.Cut(up, ":"); u == user {
			pass = p
		}
	}
	if pass == "" {
		unavailable("FERRY_DOVECOT_USERS has no user " + user)
	}
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		unavailable(err.Error())
	}
	nc.Close()
	return Config{Addr: addr, User: user, Password: pass}
}

func openT(t *testing.T, cfg Config) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// admin is a raw connection for what the suite does behind the binding's
// back: delete folders, move messages, append raw bytes.
type admin struct {
	t       *testing.T
	c       *conn
	prefix  string
	tandem  string
	archive string
}

func newAdmin(t *testing.T, cfg Config) *admin {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg.DisableQRESYNC = true
	c, err := dial(ctx, &cfg)
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	t.Cleanup(func() { c.close() })
	name, err := c.folderName(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(name, hub.Folder)
	return &admin{t: t, c: c, prefix: prefix, tandem: name, archive: prefix + "Archive"}
}

func (a *admin) do(line string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return a.c.cmd(ctx, "admin", line, nil)
}

func (a *admin) must(line string) {
	a.t.Helper()
	if err := a.do(line); err != nil {
		a.t.Fatalf("%s: %v", line, err)
	}
}

// reset deletes the Tandem and Archive folders. It uses only what §10.3
// requires of a server (no UNSELECT, no MOVE): EXAMINE INBOX leaves the
// folders unselected.
func (a *admin) reset() {
	a.t.Helper()
	a.must("EXAMINE INBOX")
	for _, mb := range []string{a.tandem, a.archive} {
		err := a.do("DELETE " + quote(mb))
		for i := 0; i < 3 && err != nil && strings.Contains(err.Error(), "already exists"); i++ {
			// Cyrus's delayed delete names the deleted folder by the
			// second: a second DELETE within it fails.
			time.Sleep(time.Second)
			err = a.do("DELETE " + quote(mb))
		}
		var se *statusError
		if err != nil && !(errors.As(err, &se) && se.status == "NO") {
			a.t.Fatalf("DELETE %s: %v", mb, err)
		}
	}
}

func (a *admin) moveOut(id hub.ID) func(*testing.T) {
	a.t.Helper()
	_, uid, ok := parseID(id)
	if !ok {
		a.t.Fatalf("bad id %q", id)
	}
	a.do("CREATE " + quote(a.archive))
	a.must("SELECT " + quote(a.tandem))
	set := setOf([]uint32{uid}).String()
	// COPY, \Deleted, UID EXPUNGE (UIDPLUS): a move without MOVE.
	a.must("UID COPY " + set + " " + quote(a.archive))
	a.must("UID STORE " + set + ` +FLAGS.SILENT (\Deleted)`)
	a.must("UID EXPUNGE " + set)
	return func(t *testing.T) {
		a.must("SELECT " + quote(a.archive))
		a.must("COPY 1:* " + quote(a.tandem))
		a.must(`STORE 1:* +FLAGS.SILENT (\Deleted)`)
		a.must("UID EXPUNGE 1:*")
	}
}

func (a *admin) inject(raw []byte) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := a.c.append(ctx, a.tandem, raw); err != nil {
		a.t.Fatalf("inject: %v", err)
	}
}

func harness(t *testing.T, cfg Config) hubtest.Harness {
	a := newAdmin(t, cfg)
	return hubtest.Harness{
		Open:    func(t *testing.T) hub.Store { return openT(t, cfg) },
		Reset:   func(t *testing.T) { a.t = t; a.reset() },
		MoveOut: func(t *testing.T, id hub.ID) func(*testing.T) { a.t = t; return a.moveOut(id) },
		Inject:  func(t *testing.T, raw []byte) { a.t = t; a.inject(raw) },
	}
}

func TestConformanceDovecotQRESYNC(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_ADDR", "alice")
	if s := openT(t, cfg); !s.c.qresync {
		t.Fatal("QRESYNC is not enabled on the QRESYNC instance")
	} else {
		s.Close()
	}
	hubtest.Run(t, harness(t, cfg))
}

func TestConformanceDovecotSearchAll(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_PLAIN_ADDR", "bob")
	s := openT(t, cfg)
	if s.c.qresync || s.mailbox != "INBOX.Tandem" {
		t.Fatalf("plain instance: qresync %v, mailbox %q; want false, INBOX.Tandem", s.c.qresync, s.mailbox)
	}
	s.Close()
	hubtest.Run(t, harness(t, cfg))
}
