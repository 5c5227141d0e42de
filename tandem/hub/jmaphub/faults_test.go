package jmaphub

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/faultproxy"
	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// The fault tests of issue 15 on Cyrus JMAP: a faultproxy the test starts
// carries every connection of the store under test, and a second store on
// the same account (admin) acts behind its back. Users: mallory (renames,
// silence, cuts, a destroyed mailbox), uma and xena (two accounts, one
// cursor); the imaphub tests use other Cyrus users.

// cyrusUser returns the Config of the named Cyrus user.
func cyrusUser(t *testing.T, name string) Config {
	t.Helper()
	cfg := cyrusConfig(t, 0)
	cfg.Username, cfg.Password = "", ""
	for _, up := range strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",") {
		if u, p, _ := strings.Cut(up, ":"); u == name {
			cfg.Username, cfg.Password = u, p
		}
	}
	if cfg.Username == "" {
		noServer(t, "FERRY_CYRUS_USERS has no user "+name+" (run scripts/setup.d/20-cyrus.sh)")
	}
	return cfg
}

// proxied makes cfg's HTTP connections go through a fault proxy.
func proxied(t *testing.T, cfg Config) (Config, *faultproxy.Proxy) {
	target := strings.TrimPrefix(strings.TrimPrefix(cfg.SessionURL, "http://"), "https://")
	target, _, _ = strings.Cut(target, "/")
	p := faultproxy.Start(t, target)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, p.Addr())
	}}
	t.Cleanup(tr.CloseIdleConnections)
	cfg.HTTPClient = &http.Client{Transport: tr}
	return cfg, p
}

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrProtocol) {
		t.Fatalf("%s: %v (%T), want hub.ErrUnavailable and not hub.ErrProtocol", what, err, err)
	}
}

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

func mustT[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestCyrusCursorOfAnotherAccount (issue 15, point 2): the same messages
// imported into two accounts get the same email ids on Cyrus (derived from
// the bytes); a cursor of one account used on the other is a full resync
// from nothing that reports every message of the second, with Reset.
func TestCyrusCursorOfAnotherAccount(t *testing.T) {
	cfgA, cfgB := cyrusUser(t, "uma"), cyrusUser(t, "xena")
	adA, adB := admin{openCyrus(t, cfgA)}, admin{openCyrus(t, cfgB)}
	adA.reset(t)
	adB.reset(t)
	a, b := openCyrus(t, cfgA), openCyrus(t, cfgB)
	mbA := mustT[string](t)(a.ensureMailbox(t.Context()))
	mbB := mustT[string](t)(b.ensureMailbox(t.Context()))
	var idsA, idsB []string
	for i := range 4 {
		raw := hubtest.RawMessage(hubtest.Channel(i), hubtest.Envelope(90), hubtest.Encodings()[0])
		idsA = append(idsA, string(adA.inject(t, mbA, raw)))
		idsB = append(idsB, string(adB.inject(t, mbB, raw)))
	}
	t.Logf("same ids in both accounts: %v", slices.Equal(idsA, idsB))
	ca := mustT[hub.Changes](t)(a.Changes(t.Context(), nil))
	cb := mustT[hub.Changes](t)(b.Changes(t.Context(), ca.Cursor))
	if !cb.Reset || !slices.Equal(sortedCopy(addedIDs(cb)...), sortedCopy(idsB...)) || !slices.Equal(sortedCopy(removedIDs(cb)...), sortedCopy(idsA...)) {
		t.Fatalf("account B with account A's cursor: reset %v, added %v, removed %v; want a Reset adding all of %v", cb.Reset, addedIDs(cb), removedIDs(cb), idsB)
	}
	if c := mustT[hub.Changes](t)(b.Changes(t.Context(), cb.Cursor)); c.Reset || len(c.Added)+len(c.Removed) != 0 {
		t.Fatalf("B's own cursor: %+v", c)
	}
}

// TestCyrusRenamedMailbox (issue 15, point 3): another client renames the
// Tandem mailbox. A store opened before keeps no cached id that is no
// longer §10.2's Tandem mailbox: it and a store opened afterwards converge
// on one mailbox and see the same messages.
func TestCyrusRenamedMailbox(t *testing.T) {
	cfg := cyrusUser(t, "mallory")
	adm := admin{openCyrus(t, cfg)}
	adm.reset(t)
	t.Cleanup(func() { destroyMailboxes(t, adm, "Renamed") })
	before := openCyrus(t, cfg)
	mustT[hub.ID](t)(before.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(80)))
	c0 := mustT[hub.Changes](t)(before.Changes(t.Context(), nil))
	mb := mustT[string](t)(before.ensureMailbox(t.Context()))
	var set struct {
		Updated map[string]any `json:"updated"`
	}
	adm.req(t, call{"Mailbox/set", map[string]any{"accountId": adm.st.s.accountID,
		"update": map[string]any{mb: map[string]any{"name": "Renamed"}}}, &set})
	if _, ok := set.Updated[mb]; !ok {
		t.Fatalf("rename: %+v", set)
	}
	after := openCyrus(t, cfg)
	m2 := mustT[hub.ID](t)(after.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(80)))
	m3 := mustT[hub.ID](t)(before.Append(t.Context(), hubtest.Channel(3), hubtest.Envelope(80)))
	cb := mustT[hub.Changes](t)(before.Changes(t.Context(), c0.Cursor))
	ca := mustT[hub.Changes](t)(after.Changes(t.Context(), nil))
	want := sortedCopy(string(m2), string(m3))
	if got := sortedCopy(addedIDs(ca)...); !slices.Equal(got, want) {
		t.Fatalf("the store opened after the rename sees %v, want %v", got, want)
	}
	if got := sortedCopy(addedIDs(cb)...); !cb.Reset || !slices.Equal(got, want) {
		t.Fatalf("the store opened before the rename: reset %v, added %v; want a Reset adding %v", cb.Reset, got, want)
	}
}

// TestCyrusWatchEndsOnSilence (issue 15, point 9): a poll over a silent
// connection ends Watch with hub.ErrUnavailable within RequestTimeout, and
// a Changes with a context that has no deadline fails within it too.
func TestCyrusWatchEndsOnSilence(t *testing.T) {
	base := cyrusUser(t, "mallory")
	admin{openCyrus(t, base)}.reset(t)
	cfg, p := proxied(t, base)
	cfg.RequestTimeout = 2 * time.Second // a loaded CI machine still answers within it
	st := openCyrus(t, cfg)
	if err := st.EnsureFolder(t.Context()); err != nil {
		t.Fatal(err)
	}
	calls, done := watchCalls(t, st, t.Context())
	waitCall(t, calls, done, "the start of polling")
	p.Silence(true)
	select {
	case err := <-done:
		wantUnavailable(t, "Watch over a silent connection", err)
	case <-time.After(realtest.Scale(8 * time.Second)):
		t.Fatal("Watch still polling 8 s (scaled) after the connection went silent")
	}
	_, err := within(t, 8*time.Second, "Changes over a silent connection", func() (hub.Changes, error) {
		return st.Changes(context.Background(), nil)
	})
	wantUnavailable(t, "Changes over a silent connection", err)
	p.Silence(false)
	p.Cut()
	if _, err := st.Changes(t.Context(), nil); err != nil {
		t.Fatalf("Changes once the path is back: %v", err)
	}
}

// TestCyrusCutIsUnavailable (issue 15, point 11): an answer cut in the
// middle and a refused connection are hub.ErrUnavailable, not
// hub.ErrProtocol; the store works again afterwards.
func TestCyrusCutIsUnavailable(t *testing.T) {
	base := cyrusUser(t, "mallory")
	admin{openCyrus(t, base)}.reset(t)
	cfg, p := proxied(t, base)
	st := openCyrus(t, cfg)
	var msgs []hub.Message
	for i := range 20 {
		msgs = append(msgs, hub.Message{Channel: hubtest.Channel(i), Envelope: hubtest.Envelope(2000)})
	}
	ids := mustT[[]hub.ID](t)(st.appendBatch(t.Context(), msgs))
	p.CutAfter(8000)
	_, err := st.Fetch(t.Context(), ids)
	wantUnavailable(t, "Fetch cut in the middle", err)
	p.Refuse(true)
	_, err = st.Changes(t.Context(), nil)
	wantUnavailable(t, "Changes with the server refusing connections", err)
	p.Refuse(false)
	b, err := st.Fetch(t.Context(), ids)
	if err != nil || b[19].Err != nil {
		t.Fatalf("Fetch once the path is back: %v", err)
	}
}

// TestCyrusMissingMailboxAgrees (issue 15, point 11): with the Tandem
// mailbox destroyed by another client, Fetch reports the messages gone,
// Destroy has nothing to do, and Changes and Append find or make the
// mailbox again — as the IMAP binding does (imaphub TestMissingFolderAgrees).
func TestCyrusMissingMailboxAgrees(t *testing.T) {
	cfg := cyrusUser(t, "mallory")
	adm := admin{openCyrus(t, cfg)}
	adm.reset(t)
	st := openCyrus(t, cfg)
	m1 := mustT[hub.ID](t)(st.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(80)))
	c0 := mustT[hub.Changes](t)(st.Changes(t.Context(), nil))
	adm.destroyTandem(t)
	b := mustT[[]hub.Body](t)(st.Fetch(t.Context(), []hub.ID{m1}))
	if !errors.Is(b[0].Err, hub.ErrNotFound) {
		t.Fatalf("Fetch with the mailbox gone: %+v", b[0])
	}
	if err := st.Destroy(t.Context(), []hub.ID{m1}); err != nil {
		t.Fatalf("Destroy with the mailbox gone: %v", err)
	}
	c1 := mustT[hub.Changes](t)(st.Changes(t.Context(), c0.Cursor))
	if !c1.Reset || !slices.Equal(removedIDs(c1), []string{string(m1)}) || len(c1.Added) != 0 {
		t.Fatalf("Changes with the mailbox gone: %+v, want a Reset removing %s", c1, m1)
	}
	adm.destroyTandem(t)
	m2, err := st.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(80))
	if err != nil {
		t.Fatalf("Append with the mailbox gone: %v", err)
	}
	c2 := mustT[hub.Changes](t)(st.Changes(t.Context(), c1.Cursor))
	if !slices.Equal(addedIDs(c2), []string{string(m2)}) {
		t.Fatalf("Changes after Append made the mailbox again: %+v", c2)
	}
}

// TestCyrusRateBudget (issue 15, point 14): the shared budget refuses a
// session fetch (a login) and an append batch over it before anything is
// sent, with an error matching hub.ErrUnavailable.
func TestCyrusRateBudget(t *testing.T) {
	cfg := cyrusUser(t, "mallory")
	admin{openCyrus(t, cfg)}.reset(t)
	cfg.Budget = hub.NewRateBudget(hub.Rate{N: 1, Per: time.Hour}, hub.Rate{N: 3, Per: time.Hour})
	st := openCyrus(t, cfg)
	_, err := Open(t.Context(), cfg)
	var be *hub.BudgetError
	if !errors.As(err, &be) || be.What != "login" || !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("a second login on a budget of one: %v", err)
	}
	two := []hub.Message{{Channel: hubtest.Channel(1), Envelope: hubtest.Envelope(80)}, {Channel: hubtest.Channel(2), Envelope: hubtest.Envelope(80)}}
	mustT[[]hub.ID](t)(st.appendBatch(t.Context(), two))
	if _, err := st.appendBatch(t.Context(), two); !errors.As(err, &be) || be.What != "append" {
		t.Fatalf("two more appends on a budget of three: %v", err)
	}
	if c := mustT[hub.Changes](t)(st.Changes(t.Context(), nil)); len(c.Added) != 2 {
		t.Fatalf("%d messages stored, want 2", len(c.Added))
	}
}
