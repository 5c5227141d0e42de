package imaphub

import (
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// The tests of issue 28 point 3: a NO whose code says the server failed
// for now is hub.ErrUnavailable, tried again after a pause, and never read
// as a missing folder or a refused credential.

// transientCodes are the RFC 5530 codes a server answers with when it
// could not do it now.
var transientCodes = []string{"SERVERBUG", "UNAVAILABLE", "INUSE", "LIMIT"}

// commandCount counts the commands a fake server got, by first word.
type commandCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *commandCount) add(cmd string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	verb, _, _ := strings.Cut(strings.ToUpper(cmd), " ")
	c.n[verb]++
	return c.n[verb]
}

func (c *commandCount) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.n {
		n += k
	}
	return n
}

func (c *commandCount) get(verb string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[verb]
}

// failFirst answers the first times commands starting with verb with a
// NO carrying code, and counts every command.
func failFirst(f *fakeServer, verb, code string, times int) *commandCount {
	var seen commandCount
	f.setHook(func(cmd string) (string, bool, bool) {
		n := seen.add(cmd)
		if strings.HasPrefix(strings.ToUpper(cmd), verb) && n <= times {
			return "%TAG% NO [" + code + "] Internal error occurred. Refer to server log for more information.\r\n", false, true
		}
		return "", false, false
	})
	return &seen
}

// TestTransientSelectIsRetried: Dovecot under load answered a SELECT with
// NO [SERVERBUG], and the binding called it a missing folder and made the
// folder again. Now Changes tries the SELECT again, gets the messages, and
// never sends CREATE.
func TestTransientSelectIsRetried(t *testing.T) {
	for _, code := range transientCodes {
		t.Run(code, func(t *testing.T) {
			f := newFake(t)
			uid := f.add(built(t, hubtest.Channel(1), hubtest.Envelope(40)))
			s := f.open(t)
			seen := failFirst(f, "SELECT", code, 2)
			c, err := s.Changes(ctx5(t), nil)
			if err != nil {
				t.Fatalf("Changes after two NO [%s] to SELECT: %v", code, err)
			}
			if len(c.Added) != 1 || c.Added[0].ID != makeID(f.uidValidity, uid) {
				t.Fatalf("Changes = %v, want the one message", ids(c))
			}
			if n := seen.get("SELECT"); n != 3 {
				t.Errorf("%d SELECTs, want 3 (two refused, one served)", n)
			}
			if n := seen.get("CREATE"); n != 0 {
				t.Errorf("%d CREATEs: a transient NO was read as a missing folder", n)
			}
		})
	}
}

// TestTransientStaysUnavailable: a server that keeps answering NO
// [SERVERBUG] gives hub.ErrUnavailable within the caller's deadline, for
// every call, and never hub.ErrNoFolder, hub.ErrAuth or a CREATE.
func TestTransientStaysUnavailable(t *testing.T) {
	f := newFake(t)
	f.add(built(t, hubtest.Channel(1), hubtest.Envelope(40)))
	cfg := f.config()
	cfg.Budget = hub.NewRateBudget(hub.Rate{N: 1000, Per: time.Minute}, hub.Rate{N: 1000, Per: time.Minute})
	s, err := Open(ctx5(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := failFirst(f, "", "SERVERBUG", 1<<30) // every command, LOGIN too
	calls := map[string]func() error{
		"Changes":      func() error { _, err := s.Changes(ctx5(t), nil); return err },
		"Append":       func() error { _, err := s.Append(ctx5(t), hubtest.Channel(2), hubtest.Envelope(40)); return err },
		"Fetch":        func() error { _, err := s.Fetch(ctx5(t), []hub.ID{makeID(f.uidValidity, 1)}); return err },
		"Destroy":      func() error { return s.Destroy(ctx5(t), []hub.ID{makeID(f.uidValidity, 1)}) },
		"EnsureFolder": func() error { return s.EnsureFolder(ctx5(t)) },
	}
	for name, call := range calls {
		before := seen.total()
		err := call()
		if !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrNoFolder) || errors.Is(err, hub.ErrAuth) {
			t.Errorf("%s against a server failing for now: %v, want hub.ErrUnavailable only", name, err)
		}
		if tries := seen.total() - before; tries < 2 {
			t.Errorf("%s: %d tries, want a retry", name, tries)
		}
	}
	if n := seen.get("CREATE"); n != 0 {
		t.Errorf("%d CREATEs: a transient NO was read as a missing folder", n)
	}
}

// TestTransientLoginIsNotAuth: NO [UNAVAILABLE] to LOGIN (an
// authentication backend down) is not a rejected credential: Open tries
// again and succeeds.
func TestTransientLoginIsNotAuth(t *testing.T) {
	f := newFake(t)
	seen := failFirst(f, "LOGIN", "UNAVAILABLE", 1)
	s := f.open(t)
	if _, err := s.Changes(ctx5(t), nil); err != nil {
		t.Fatal(err)
	}
	if n := seen.get("LOGIN"); n != 2 {
		t.Errorf("%d LOGINs, want 2", n)
	}
	failFirst(f, "LOGIN", "UNAVAILABLE", 1<<30)
	_, err := Open(ctx5(t), f.config())
	if !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrAuth) {
		t.Fatalf("Open while logins fail for now: %v, want hub.ErrUnavailable, not hub.ErrAuth", err)
	}
}

// TestTransientAppendIsRetried: a NO [LIMIT] to APPEND stored nothing;
// Append tries again and the message is stored once.
func TestTransientAppendIsRetried(t *testing.T) {
	f := newFake(t)
	s := f.open(t)
	failFirst(f, "APPEND", "LIMIT", 1)
	id, err := s.Append(ctx5(t), hubtest.Channel(1), hubtest.Envelope(40))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.uids(); len(got) != 1 || makeID(f.uidValidity, got[0]) != id {
		t.Fatalf("stored %v, returned %s; want the one message", got, id)
	}
}

// selectOK matches the tagged OK to a SELECT on Dovecot and Cyrus.
var selectOK = regexp.MustCompile(`(?m)^(t[0-9]+) OK \[READ-WRITE\][^\r\n]*`)

// TestTransientSelectReal: the same through a fault proxy in front of real
// Dovecot and Cyrus, which turns the first answers to SELECT into NO
// [SERVERBUG] (Dovecot's own words under load): Changes still reports the
// folder's messages, and the folder is not made again (its UIDVALIDITY
// stays).
func TestTransientSelectReal(t *testing.T) {
	for _, srv := range both(t, "walter", "walter") {
		t.Run(srv.name, func(t *testing.T) {
			adm := newAdmin(t, srv.cfg)
			adm.reset()
			cfg, p := proxied(t, srv.cfg)
			s := openT(t, cfg)
			ctx := ctx5(t)
			if err := s.EnsureFolder(ctx); err != nil {
				t.Fatal(err)
			}
			id := must[hub.ID](t)(s.Append(ctx, hubtest.Channel(1), hubtest.Envelope(80)))
			validity := adm.uidValidity()
			var mu sync.Mutex
			left := 2
			p.Rewrite(func(b []byte) []byte {
				mu.Lock()
				defer mu.Unlock()
				if left == 0 || !selectOK.Match(b) {
					return b
				}
				left--
				return selectOK.ReplaceAll(b, []byte("$1 NO [SERVERBUG] Internal error occurred. Refer to server log for more information."))
			})
			c, err := s.Changes(ctx, nil)
			if err != nil {
				t.Fatalf("Changes after NO [SERVERBUG] to SELECT: %v", err)
			}
			mu.Lock()
			injected := 2 - left
			mu.Unlock()
			if injected != 2 {
				t.Fatalf("the proxy turned %d SELECT answers into NO [SERVERBUG], want 2", injected)
			}
			if got := ids(c); len(got) != 1 || got[0] != id {
				t.Fatalf("Changes = %v, want [%s]", got, id)
			}
			if v := adm.uidValidity(); v != validity {
				t.Fatalf("UIDVALIDITY %d → %d: the folder was made again", validity, v)
			}
		})
	}
}
