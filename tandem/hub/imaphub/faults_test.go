package imaphub

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/faultproxy"
	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// The fault tests of issue 15 run against real Dovecot and Cyrus IMAP,
// through a faultproxy the test starts, with a second raw client (admin)
// on the same account. Users (scripts/setup.d): mallory on Dovecot and
// hubtrent on Cyrus (silence, cuts), oscar and peggy (two accounts, one
// cursor), victor (extensions, TLS, Dovecot only), walter (deleted
// folders). The jmaphub tests use other Cyrus users (packages run in
// parallel).

// cyrusIMAP returns the Config of user on the Cyrus IMAP server that
// scripts/setup.d/20-cyrus.sh starts.
func cyrusIMAP(tb testing.TB, user string) Config {
	tb.Helper()
	addr := realtest.Getenv("FERRY_CYRUS_IMAP_ADDR")
	pass := ""
	for _, up := range strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",") {
		if u, p, _ := strings.Cut(up, ":"); u == user {
			pass = p
		}
	}
	if addr == "" || pass == "" {
		realtest.Unavailable(tb, "Cyrus IMAP: FERRY_CYRUS_IMAP_ADDR or user "+user+" not set (run scripts/setup.d/20-cyrus.sh)")
	}
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		realtest.Unavailable(tb, "Cyrus IMAP: "+err.Error())
	}
	nc.Close()
	return Config{Addr: addr, User: user, Password: pass}
}

type server struct {
	name string
	cfg  Config
}

// both returns an account on Dovecot (the QRESYNC instance) and one on
// Cyrus.
func both(t *testing.T, dovecotUser, cyrusUser string) []server {
	return []server{
		{"dovecot", dovecot(t, "FERRY_DOVECOT_ADDR", dovecotUser)},
		{"cyrus", cyrusIMAP(t, cyrusUser)},
	}
}

// proxied routes cfg through a fault proxy.
func proxied(t *testing.T, cfg Config) (Config, *faultproxy.Proxy) {
	p := faultproxy.Start(t, cfg.Addr)
	cfg.Addr = p.Addr()
	return cfg, p
}

// watchT runs Watch in the background; it returns the onChange calls and
// Watch's result.
func watchT(t *testing.T, s *Store, ctx context.Context) (<-chan struct{}, <-chan error) {
	calls := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() {
		done <- s.Watch(ctx, func() {
			select {
			case calls <- struct{}{}:
			default:
			}
		})
	}()
	select {
	case <-calls:
	case err := <-done:
		t.Fatalf("Watch ended before listening: %v", err)
	case <-time.After(realtest.Scale(10 * time.Second)):
		t.Fatal("Watch not listening after 10 s (scaled)")
	}
	return calls, done
}

// watchEnds waits at most d (scaled for a busy machine, realtest.Scale)
// for Watch to return, and returns its error.
func watchEnds(t *testing.T, done <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(realtest.Scale(d)):
		t.Fatalf("Watch still running %v after %s", d, what)
		return nil
	}
}

// within runs f and fails the test if it takes longer than d, scaled for
// a busy machine (realtest.Scale): old code would hang forever.
func within[T any](t *testing.T, d time.Duration, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() { v, err := f(); ch <- result{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(realtest.Scale(d)):
		t.Fatalf("%s still waiting after %v", what, d)
		var zero T
		return zero, nil
	}
}

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrProtocol) {
		t.Fatalf("%s: %v (%T), want hub.ErrUnavailable and not hub.ErrProtocol", what, err, err)
	}
}

// uidValidity asks the admin connection for the folder's UIDVALIDITY.
func (a *admin) uidValidity() uint32 {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v uint32
	err := a.c.cmd(ctx, "status", "STATUS "+quote(a.tandem)+" (UIDVALIDITY)", func(r *response) error {
		if r.name == "STATUS" && len(r.args) == 2 {
			if l, ok := r.args[1].([]any); ok && len(l) == 2 {
				n, _ := number(l[1])
				v = n
			}
		}
		return nil
	})
	if err != nil {
		a.t.Fatal(err)
	}
	return v
}

// TestCursorOfAnotherAccount (issue 15, point 1): a cursor saved on one
// account and used on another whose folder has the same UIDVALIDITY
// (Dovecot gives folders created in the same second the same value) is a
// full resync from nothing: every message of the second account is
// reported, with Reset.
func TestCursorOfAnotherAccount(t *testing.T) {
	for _, srv := range []struct{ name, a, b string }{{"dovecot", "oscar", "peggy"}, {"cyrus", "oscar", "peggy"}} {
		t.Run(srv.name, func(t *testing.T) {
			cfgA, cfgB := dovecot(t, "FERRY_DOVECOT_ADDR", srv.a), dovecot(t, "FERRY_DOVECOT_ADDR", srv.b)
			if srv.name == "cyrus" {
				cfgA, cfgB = cyrusIMAP(t, srv.a), cyrusIMAP(t, srv.b)
			}
			adA, adB := newAdmin(t, cfgA), newAdmin(t, cfgB)
			a, b := openT(t, cfgA), openT(t, cfgB)
			defer a.Close()
			defer b.Close()
			ctx := context.Background()
			same := false
			for attempt := 0; attempt < 3 && !same; attempt++ {
				adA.reset()
				adB.reset()
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
				if err := a.EnsureFolder(ctx); err != nil {
					t.Fatal(err)
				}
				if err := b.EnsureFolder(ctx); err != nil {
					t.Fatal(err)
				}
				same = adA.uidValidity() == adB.uidValidity()
			}
			t.Logf("same UIDVALIDITY in both accounts: %v", same)
			ctx = ctx5(t)
			if srv.name == "dovecot" && !same {
				t.Fatal("could not make two Dovecot folders with the same UIDVALIDITY")
			}
			var idsA, idsB []hub.ID
			for i := range 2 {
				idsA = append(idsA, must[hub.ID](t)(a.Append(ctx, hubtest.Channel(i), hubtest.Envelope(80))))
			}
			for i := range 3 {
				idsB = append(idsB, must[hub.ID](t)(b.Append(ctx, hubtest.Channel(10+i), hubtest.Envelope(80))))
			}
			ca := must[hub.Changes](t)(a.Changes(ctx, nil))
			cb := must[hub.Changes](t)(b.Changes(ctx, ca.Cursor))
			if !cb.Reset || !slices.Equal(ids(cb), idsB) || !slices.Equal(cb.Removed, idsA) {
				t.Fatalf("account B with account A's cursor: reset %v, added %v, removed %v; want a Reset adding %v and removing %v",
					cb.Reset, ids(cb), cb.Removed, idsB, idsA)
			}
			// Its own cursor afterwards: nothing new, no Reset.
			if c := must[hub.Changes](t)(b.Changes(ctx, cb.Cursor)); c.Reset || len(c.Added)+len(c.Removed) != 0 {
				t.Fatalf("B's own cursor: %+v", c)
			}
		})
	}
}

// TestWatchEndsOnSilence (issue 15, point 9): a connection that goes
// silent (sockets open, nothing passes) ends Watch with hub.ErrUnavailable
// within IdleRefresh + ReplyTimeout, and a command on a silent connection
// fails within ReplyTimeout, even with a context that has no deadline.
func TestWatchEndsOnSilence(t *testing.T) {
	for _, srv := range both(t, "mallory", "hubtrent") {
		t.Run(srv.name, func(t *testing.T) {
			newAdmin(t, srv.cfg).reset()
			cfg, p := proxied(t, srv.cfg)
			cfg.IdleRefresh = 300 * time.Millisecond
			cfg.ReplyTimeout = 1500 * time.Millisecond // a loaded CI machine still answers within it
			s := openT(t, cfg)
			defer s.Close()
			if err := s.EnsureFolder(ctx5(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Changes(ctx5(t), nil); err != nil {
				t.Fatal(err)
			}
			_, done := watchT(t, s, t.Context())
			p.Silence(true)
			wantUnavailable(t, "Watch over a silent connection", watchEnds(t, done, 8*time.Second, "the connection went silent"))
			_, err := within(t, 8*time.Second, "Changes over a silent connection", func() (hub.Changes, error) {
				return s.Changes(context.Background(), nil)
			})
			wantUnavailable(t, "Changes over a silent connection", err)
			p.Silence(false)
			p.Cut()
			if _, err := s.Changes(ctx5(t), nil); err != nil {
				t.Fatalf("Changes once the path is back: %v", err)
			}
		})
	}
}

// TestWatchFolderDeleted (issue 15, point 10): another client deletes the
// folder Watch is idling on. Dovecot says BYE; Cyrus says nothing and
// idles on. Both end Watch with hub.ErrNoFolder, Cyrus at the next IDLE
// re-issue.
func TestWatchFolderDeleted(t *testing.T) {
	for _, srv := range both(t, "walter", "walter") {
		t.Run(srv.name, func(t *testing.T) {
			adm := newAdmin(t, srv.cfg)
			adm.reset()
			cfg := srv.cfg
			cfg.IdleRefresh = 300 * time.Millisecond
			s := openT(t, cfg)
			defer s.Close()
			if err := s.EnsureFolder(ctx5(t)); err != nil {
				t.Fatal(err)
			}
			_, done := watchT(t, s, t.Context())
			adm.reset()
			err := watchEnds(t, done, 5*time.Second, "its folder was deleted")
			if !errors.Is(err, hub.ErrNoFolder) {
				t.Fatalf("Watch after its folder was deleted: %v, want hub.ErrNoFolder", err)
			}
		})
	}
}

// TestCutIsUnavailable (issue 15, point 11): an answer cut in the middle,
// and a server that cannot be reached, are hub.ErrUnavailable (retry), not
// hub.ErrProtocol (stop); the store works again once the path is back.
// A cut Watch ends with hub.ErrUnavailable too.
func TestCutIsUnavailable(t *testing.T) {
	for _, srv := range both(t, "mallory", "hubtrent") {
		t.Run(srv.name, func(t *testing.T) {
			newAdmin(t, srv.cfg).reset()
			cfg, p := proxied(t, srv.cfg)
			s := openT(t, cfg)
			defer s.Close()
			ctx := ctx5(t)
			if err := s.EnsureFolder(ctx); err != nil {
				t.Fatal(err)
			}
			var all []hub.ID
			for i := range 20 {
				all = append(all, must[hub.ID](t)(s.Append(ctx, hubtest.Channel(i), hubtest.Envelope(2000))))
			}
			if _, err := s.Fetch(ctx, all); err != nil {
				t.Fatal(err)
			}
			p.Refuse(true) // the retry on a fresh connection fails too
			p.CutAfter(5000)
			_, err := s.Fetch(ctx, all)
			wantUnavailable(t, "Fetch cut in the middle", err)
			_, err = s.Changes(ctx, nil)
			wantUnavailable(t, "Changes with the server unreachable", err)
			p.Refuse(false)
			p.CutAfter(0)
			b, err := s.Fetch(ctx, all)
			if err != nil || len(b) != len(all) || b[19].Err != nil {
				t.Fatalf("Fetch once the path is back: %v", err)
			}
			_, done := watchT(t, s, t.Context())
			p.Cut()
			wantUnavailable(t, "a cut Watch", watchEnds(t, done, 5*time.Second, "its connection was cut"))
		})
	}
}

// TestMissingFolderAgrees (issue 15, point 11): with the folder deleted by
// another client, Fetch reports the messages gone, Destroy has nothing to
// do, Changes makes the folder again and reports a Reset, and Append makes
// it again (NO [TRYCREATE]) and stores — as the JMAP binding does
// (jmaphub TestCyrusMissingMailboxAgrees).
func TestMissingFolderAgrees(t *testing.T) {
	for _, srv := range both(t, "walter", "walter") {
		t.Run(srv.name, func(t *testing.T) {
			adm := newAdmin(t, srv.cfg)
			adm.reset()
			s := openT(t, srv.cfg)
			defer s.Close()
			ctx := ctx5(t)
			if err := s.EnsureFolder(ctx); err != nil {
				t.Fatal(err)
			}
			m1 := must[hub.ID](t)(s.Append(ctx, hubtest.Channel(1), hubtest.Envelope(80)))
			c0 := must[hub.Changes](t)(s.Changes(ctx, nil))
			adm.reset()
			b := must[[]hub.Body](t)(s.Fetch(ctx, []hub.ID{m1}))
			if !errors.Is(b[0].Err, hub.ErrNotFound) {
				t.Fatalf("Fetch with the folder gone: %+v, want hub.ErrNotFound", b[0])
			}
			if err := s.Destroy(ctx, []hub.ID{m1}); err != nil {
				t.Fatalf("Destroy with the folder gone: %v", err)
			}
			c1 := must[hub.Changes](t)(s.Changes(ctx, c0.Cursor))
			if !c1.Reset || !slices.Equal(c1.Removed, []hub.ID{m1}) || len(c1.Added) != 0 {
				t.Fatalf("Changes with the folder gone: %+v, want a Reset removing %s", c1, m1)
			}
			adm.reset()
			m2, err := s.Append(ctx, hubtest.Channel(2), hubtest.Envelope(80))
			if err != nil {
				t.Fatalf("Append with the folder gone: %v", err)
			}
			c2 := must[hub.Changes](t)(s.Changes(ctx, c1.Cursor))
			if !c2.Reset || !slices.Equal(ids(c2), []hub.ID{m2}) {
				t.Fatalf("Changes after Append made the folder again: %+v, want a Reset adding %s", c2, m2)
			}
		})
	}
}

// TestOnlyRequiredExtensions (issue 15, point 13): the binding and the
// conformance harness work on a server that offers only what §10.3
// requires — no CONDSTORE, QRESYNC, MOVE or UNSELECT (hidden, and refused
// as unknown commands, by the proxy) — and a server without IDLE or
// UIDPLUS is refused clearly at Open.
func TestOnlyRequiredExtensions(t *testing.T) {
	base := dovecot(t, "FERRY_DOVECOT_ADDR", "victor")
	cfg, p := proxied(t, base)
	hide := []func([]byte) []byte{}
	for _, ext := range []string{"CONDSTORE", "QRESYNC", "MOVE", "UNSELECT"} {
		hide = append(hide, faultproxy.DropToken(ext))
	}
	p.Rewrite(func(b []byte) []byte {
		for _, f := range hide {
			b = f(b)
		}
		return b
	})
	p.RewriteClient(func(b []byte) []byte {
		for _, cmd := range []string{" UNSELECT", " MOVE ", " UID MOVE "} {
			b = faultproxy.Replace(cmd, " X"+strings.TrimPrefix(cmd, " "))(b)
		}
		return b
	})
	s := openT(t, cfg)
	if s.c.qresync || s.c.caps["MOVE"] || s.c.caps["UNSELECT"] {
		t.Fatalf("the proxy did not hide the extensions: %v", s.c.caps)
	}
	s.Close()
	hubtest.Run(t, harness(t, cfg))

	for _, ext := range []string{"IDLE", "UIDPLUS"} {
		p.Rewrite(faultproxy.DropToken(ext))
		_, err := Open(ctx5(t), cfg)
		if !errors.Is(err, hub.ErrProtocol) || !strings.Contains(err.Error(), ext) {
			t.Errorf("Open on a server without %s: %v, want a protocol error naming it", ext, err)
		}
	}
}

// TestOddMessagesDovecot (issue 15, points 4-8): the IMAP reader reads
// the one-reading corpus (hubtest.OddMessages), stored raw by a second
// client on Dovecot, as the corpus says; Dovecot stores the obsolete
// header syntax that Cyrus refuses. The same corpus is read through both
// bindings on Cyrus by tandem/hub/internal/crosstest.
func TestOddMessagesDovecot(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_ADDR", "victor")
	adm := newAdmin(t, cfg)
	adm.reset()
	s := openT(t, cfg)
	defer s.Close()
	ctx := t.Context()
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	cur := must[hub.Changes](t)(s.Changes(ctx, nil)).Cursor
	for _, o := range hubtest.OddMessages(true) {
		adm.inject(o.Raw)
		c := must[hub.Changes](t)(s.Changes(ctx, cur))
		cur = c.Cursor
		if o.Channel == "" {
			if len(c.Added) != 0 {
				t.Errorf("%s: listed %v", o.Name, c.Added)
			}
			continue
		}
		if len(c.Added) != 1 || c.Added[0].Channel != o.Channel {
			t.Errorf("%s: added %v, want one on channel %s", o.Name, c.Added, o.Channel)
			continue
		}
		b := must[[]hub.Body](t)(s.Fetch(ctx, ids(c)))[0]
		switch {
		case o.Want != nil && !errors.Is(b.Err, o.Want):
			t.Errorf("%s: %v, want %v", o.Name, b.Err, o.Want)
		case o.Want == nil && (b.Err != nil || !bytes.Equal(b.Envelope, o.Envelope)):
			t.Errorf("%s: %v, %d-byte envelope; want the corpus envelope", o.Name, b.Err, len(b.Envelope))
		}
	}
}

// TestRateBudget (issue 15, point 14): a device's budget, shared by its
// Stores, refuses the login and the append over it at once, with an error
// that matches hub.ErrUnavailable (retry later) and before anything
// reaches the server.
func TestRateBudget(t *testing.T) {
	base := dovecot(t, "FERRY_DOVECOT_ADDR", "victor")
	newAdmin(t, base).reset()
	cfg, p := proxied(t, base)
	cfg.Budget = hub.NewRateBudget(hub.Rate{N: 2, Per: time.Hour}, hub.Rate{N: 3, Per: time.Hour})
	a, b := openT(t, cfg), openT(t, cfg)
	defer a.Close()
	defer b.Close()
	_, err := Open(ctx5(t), cfg)
	var be *hub.BudgetError
	if !errors.As(err, &be) || be.What != "login" || !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("a third login on a budget of two: %v", err)
	}
	if n := p.Accepted(); n != 2 {
		t.Fatalf("%d connections reached the server, want 2", n)
	}
	ctx := ctx5(t)
	if err := a.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		must[hub.ID](t)([]*Store{a, b}[i%2].Append(ctx, hubtest.Channel(i), hubtest.Envelope(80)))
	}
	if _, err := b.Append(ctx, hubtest.Channel(9), hubtest.Envelope(80)); !errors.As(err, &be) || be.What != "append" {
		t.Fatalf("a fourth append on a budget of three: %v", err)
	}
	if c := must[hub.Changes](t)(a.Changes(ctx, nil)); len(c.Added) != 3 {
		t.Fatalf("%d messages stored, want 3", len(c.Added))
	}
}

// TestRenamedFolder (issue 15, point 3, the IMAP side): another client
// renames the Tandem folder. A store opened before and one opened after
// converge on one new Tandem folder: Changes and Append make it again
// (NO [TRYCREATE], §10.3 ensureFolder), and both see the same messages.
func TestRenamedFolder(t *testing.T) {
	for _, srv := range both(t, "walter", "walter") {
		t.Run(srv.name, func(t *testing.T) {
			adm := newAdmin(t, srv.cfg)
			adm.reset()
			renamed := adm.prefix + "Renamed"
			adm.do("DELETE " + quote(renamed))
			t.Cleanup(func() { adm.do("DELETE " + quote(renamed)) })
			ctx := ctx5(t)
			before := openT(t, srv.cfg)
			defer before.Close()
			if err := before.EnsureFolder(ctx); err != nil {
				t.Fatal(err)
			}
			must[hub.ID](t)(before.Append(ctx, hubtest.Channel(1), hubtest.Envelope(80)))
			c0 := must[hub.Changes](t)(before.Changes(ctx, nil))
			adm.must("EXAMINE INBOX")
			adm.must("RENAME " + quote(adm.tandem) + " " + quote(renamed))
			after := openT(t, srv.cfg)
			defer after.Close()
			if err := after.EnsureFolder(ctx); err != nil {
				t.Fatal(err)
			}
			m2 := must[hub.ID](t)(after.Append(ctx, hubtest.Channel(2), hubtest.Envelope(80)))
			m3 := must[hub.ID](t)(before.Append(ctx, hubtest.Channel(3), hubtest.Envelope(80)))
			cb := must[hub.Changes](t)(before.Changes(ctx, c0.Cursor))
			ca := must[hub.Changes](t)(after.Changes(ctx, nil))
			want := []hub.ID{m2, m3}
			if !slices.Equal(ids(ca), want) || !cb.Reset || !slices.Equal(ids(cb), want) {
				t.Fatalf("after the rename: the new store sees %v, the old one %v (reset %v); want both %v", ids(ca), ids(cb), cb.Reset, want)
			}
		})
	}
}
