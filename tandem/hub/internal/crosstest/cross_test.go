package crosstest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// user is the Cyrus account of this package (scripts/setup.d/20-cyrus.sh).
const user = "victor"

func configs(t *testing.T) (imaphub.Config, jmaphub.Config) {
	addr, url := realtest.Getenv("FERRY_CYRUS_IMAP_ADDR"), realtest.Getenv("FERRY_CYRUS_JMAP_URL")
	pass := ""
	for _, up := range strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",") {
		if u, p, _ := strings.Cut(up, ":"); u == user {
			pass = p
		}
	}
	if addr == "" || url == "" || pass == "" {
		realtest.Unavailable(t, "Cyrus: FERRY_CYRUS_IMAP_ADDR, FERRY_CYRUS_JMAP_URL or user "+user+" not set (run scripts/setup.d/20-cyrus.sh)")
	}
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		realtest.Unavailable(t, "Cyrus IMAP: "+err.Error())
	}
	nc.Close()
	return imaphub.Config{Addr: addr, User: user, Password: pass},
		jmaphub.Config{SessionURL: url, Username: user, Password: pass}
}

// raw is a second client on the account, speaking IMAP by hand: it
// empties the folder and stores messages as another client would.
type raw struct {
	t   *testing.T
	nc  net.Conn
	rd  *bufio.Reader
	tag int
}

func dialRaw(t *testing.T, cfg imaphub.Config) *raw {
	nc, err := net.DialTimeout("tcp", cfg.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &raw{t: t, nc: nc, rd: bufio.NewReader(nc)}
	r.line()
	if st := r.cmd(fmt.Sprintf("LOGIN %s %s", cfg.User, cfg.Password), nil); !strings.HasPrefix(st, "OK") {
		t.Fatalf("raw LOGIN: %s", st)
	}
	return r
}

func (r *raw) line() string {
	r.nc.SetDeadline(time.Now().Add(30 * time.Second))
	l, err := r.rd.ReadString('\n')
	if err != nil {
		r.t.Fatalf("raw client: %v", err)
	}
	return l
}

// cmd sends a command (with an optional literal) and returns the tagged
// status line after the tag.
func (r *raw) cmd(line string, literal []byte) string {
	r.tag++
	tag := fmt.Sprintf("r%d", r.tag)
	if literal != nil {
		fmt.Fprintf(r.nc, "%s %s {%d}\r\n", tag, line, len(literal))
		if l := r.line(); !strings.HasPrefix(l, "+") {
			r.t.Fatalf("raw %s: %q", line, l)
		}
		r.nc.Write(literal)
		r.nc.Write([]byte("\r\n"))
	} else {
		fmt.Fprintf(r.nc, "%s %s\r\n", tag, line)
	}
	for {
		l := r.line()
		if strings.HasPrefix(l, tag+" ") {
			return strings.TrimSpace(strings.TrimPrefix(l, tag+" "))
		}
	}
}

// reset leaves the account with an empty Tandem folder.
func (r *raw) reset() {
	for i := 0; ; i++ {
		st := r.cmd(`DELETE "Tandem"`, nil)
		if !strings.Contains(st, "already exists") || i == 3 {
			break
		}
		time.Sleep(time.Second) // Cyrus's delayed delete names by the second
	}
	if st := r.cmd(`CREATE "Tandem"`, nil); !strings.HasPrefix(st, "OK") {
		r.t.Fatalf("raw CREATE: %s", st)
	}
}

// reading is what one binding made of one message.
type reading struct {
	listed  bool
	channel string
	env     []byte
	err     error // the sentinel Body.Err matched, or nil
}

var sentinels = []error{hub.ErrNotEnvelope, hub.ErrUnknownVersion, hub.ErrTooLarge, hub.ErrNotFound}

func class(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

func (r reading) String() string {
	if !r.listed {
		return "not listed"
	}
	return fmt.Sprintf("channel %q, %d-byte envelope, err %v", r.channel, len(r.env), r.err)
}

func (r reading) equal(o reading) bool {
	return r.listed == o.listed && r.channel == o.channel && bytes.Equal(r.env, o.env) && r.err == o.err
}

// readNew runs Changes from *cur and reads what it added (at most one).
func readNew(t *testing.T, st hub.Store, cur *hub.Cursor) reading {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := st.Changes(ctx, *cur)
	if err != nil {
		t.Fatal(err)
	}
	*cur = c.Cursor
	switch len(c.Added) {
	case 0:
		return reading{}
	case 1:
	default:
		t.Fatalf("%d messages added, want at most 1", len(c.Added))
	}
	b, err := st.Fetch(ctx, []hub.ID{c.Added[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if b[0].Err == nil && b[0].Channel != c.Added[0].Channel {
		t.Fatalf("Changes says channel %q, Fetch %q", c.Added[0].Channel, b[0].Channel)
	}
	return reading{listed: true, channel: c.Added[0].Channel, env: b[0].Envelope, err: class(b[0].Err)}
}

// TestOneReadingCyrus (issue 15, points 4-8): a corpus of odd messages,
// each written raw by a second client, read through IMAP and JMAP on the
// same Cyrus account: both bindings give the same result, message by
// message, and it is the one the corpus says.
func TestOneReadingCyrus(t *testing.T) {
	icfg, jcfg := configs(t)
	r := dialRaw(t, icfg)
	r.reset()
	ctx := t.Context()
	is, err := imaphub.Open(ctx, icfg)
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	js, err := jmaphub.Open(ctx, jcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	if err := js.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	var ic, jc hub.Cursor
	readNew(t, is, &ic)
	readNew(t, js, &jc)
	for _, o := range hubtest.OddMessages(true) {
		if st := r.cmd(`APPEND "Tandem" (\Seen)`, o.Raw); !strings.HasPrefix(st, "OK") {
			// Cyrus refuses some obsolete syntax outright (a space
			// before a header's colon); nothing to read then. The
			// IMAP reader meets it on Dovecot (imaphub
			// TestOddMessagesDovecot).
			t.Logf("%s: Cyrus refuses to store it: %s", o.Name, st)
			continue
		}
		ir, jr := readNew(t, is, &ic), readNew(t, js, &jc)
		want := reading{listed: o.Channel != "", channel: o.Channel, env: o.Envelope, err: o.Want}
		if !ir.equal(jr) {
			t.Errorf("%s: IMAP and JMAP differ:\n\tIMAP: %v\n\tJMAP: %v", o.Name, ir, jr)
		}
		if !ir.equal(want) {
			t.Errorf("%s: IMAP read %v, want %v", o.Name, ir, want)
		}
		if !jr.equal(want) {
			t.Errorf("%s: JMAP read %v, want %v", o.Name, jr, want)
		}
	}
}
