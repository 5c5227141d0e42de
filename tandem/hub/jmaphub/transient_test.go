package jmaphub

import (
	"bytes"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// The tests of issue 28 point 3 on JMAP: an answer that the server failed
// for now (serverFail, serverUnavailable, HTTP 5xx) is hub.ErrUnavailable,
// sent again after a pause, and never read as a missing mailbox.

// failing wraps a method handler: its first times calls answer with the
// method error typ, the rest go to h.
func failing(times int, typ string, h func(map[string]any) (string, any)) func(map[string]any) (string, any) {
	var mu sync.Mutex
	return func(a map[string]any) (string, any) {
		mu.Lock()
		defer mu.Unlock()
		if times > 0 {
			times--
			return "error", map[string]any{"type": typ}
		}
		return h(a)
	}
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

// TestTransientMailboxLookupIsRetried: a serverFail or serverUnavailable
// to the Tandem mailbox lookup, or an HTTP 5xx to the request, is tried
// again; the mailbox is found and never created anew.
func TestTransientMailboxLookupIsRetried(t *testing.T) {
	for _, typ := range []string{"serverFail", "serverUnavailable", "HTTP 500", "HTTP 503"} {
		t.Run(typ, func(t *testing.T) {
			f := newFake(t)
			st := f.open(t)
			if status, ok := map[string]int{"HTTP 500": 500, "HTTP 503": 503}[typ]; ok {
				left := 2
				f.setRaw(func() (int, string) { // serveAPI calls it with f.mu free
					if left--; left == 0 {
						f.setRaw(nil)
					}
					return status, `{"type":"urn:ietf:params:jmap:error:serverFail","status":` + strconv.Itoa(status) + `}`
				})
			} else {
				f.mu.Lock()
				f.methods["Mailbox/get"] = failing(2, typ, f.methods["Mailbox/get"])
				f.mu.Unlock()
			}
			if err := st.EnsureFolder(t.Context()); err != nil {
				t.Fatalf("EnsureFolder after two %s: %v", typ, err)
			}
			calls := f.callLog()
			if n := count(calls, "Mailbox/set"); n != 0 {
				t.Errorf("%d Mailbox/set: a transient failure was read as a missing mailbox (%v)", n, calls)
			}
			if n := count(calls, "Mailbox/get"); n < 3 {
				t.Errorf("%d Mailbox/get, want 3 (two failed, one answered): %v", n, calls)
			}
		})
	}
}

// TestTransientStaysUnavailable: a server that keeps answering serverFail
// gives hub.ErrUnavailable after a few tries, never hub.ErrNoFolder; an
// error that is not transient is not tried again.
func TestTransientStaysUnavailable(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	c0, err := st.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m.setChangesError("serverUnavailable")
	before := count(f.callLog(), "Email/changes")
	_, err = st.Changes(t.Context(), c0.Cursor)
	if !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrNoFolder) {
		t.Fatalf("Changes while the server fails for now: %v, want hub.ErrUnavailable only", err)
	}
	if n := count(f.callLog(), "Email/changes") - before; n < 2 {
		t.Fatalf("%d Email/changes, want retries", n)
	}
	m.setChangesError("invalidArguments")
	before = count(f.callLog(), "Email/changes")
	if _, err = st.Changes(t.Context(), c0.Cursor); errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("invalidArguments: %v, not a failure for now", err)
	}
	if n := count(f.callLog(), "Email/changes") - before; n != 1 {
		t.Fatalf("invalidArguments: %d Email/changes, want 1 (no retry)", n)
	}
}

// TestTransientAppend: a serverFail to Email/set made no change, so the
// request goes again and the message is stored once; a serverFail to the
// mailbox check that follows an Email/set in the same request is not sent
// again (the set may have stored the message) but is still
// hub.ErrUnavailable.
func TestTransientAppend(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	f.mu.Lock()
	f.methods["Email/set"] = failing(1, "serverFail", f.methods["Email/set"])
	f.mu.Unlock()
	if _, err := st.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(40)); err != nil {
		t.Fatalf("Append after a serverFail to Email/set: %v", err)
	}
	f.mu.Lock()
	stored := len(m.emails)
	f.mu.Unlock()
	if stored != 1 {
		t.Fatalf("%d messages stored, want 1", stored)
	}
	f.mu.Lock()
	f.methods["Mailbox/get"] = failing(1, "serverFail", f.methods["Mailbox/get"])
	f.mu.Unlock()
	before := count(f.callLog(), "Email/set")
	_, err := st.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(40))
	if !errors.Is(err, hub.ErrUnavailable) {
		t.Fatalf("Append whose mailbox check failed for now: %v, want hub.ErrUnavailable", err)
	}
	if n := count(f.callLog(), "Email/set") - before; n != 1 {
		t.Fatalf("%d Email/set after a serverFail that followed one, want 1 (no blind resend)", n)
	}
}

// TestTransientSession: an HTTP 503 to the session resource is
// tried again by Open.
func TestTransientSession(t *testing.T) {
	f := newFake(t)
	var mu sync.Mutex
	fails := 2
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fail := r.URL.Path == "/jmap/session" && fails > 0
		if fail {
			fails--
		}
		mu.Unlock()
		if fail {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, r)
	})
	f.open(t)
	mu.Lock()
	defer mu.Unlock()
	if fails != 0 {
		t.Fatalf("%d failures left unserved", fails)
	}
}

// TestTransientCyrus: through a fault proxy in front of real Cyrus JMAP
// that turns the first answers into 503 Service Unavailable, Open,
// Changes and Append work, and the mailbox is not made again.
func TestTransientCyrus(t *testing.T) {
	cfg := cyrusUser(t, "mallory")
	adm := admin{openCyrus(t, cfg)}
	adm.reset(t)
	id := mustT[hub.ID](t)(adm.st.Append(t.Context(), hubtest.Channel(1), hubtest.Envelope(80)))
	mb := mustT[string](t)(adm.st.ensureMailbox(t.Context()))
	pcfg, p := proxied(t, cfg)
	var mu sync.Mutex
	left := 0
	p.Rewrite(func(b []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if left > 0 && bytes.HasPrefix(b, []byte("HTTP/1.1 200 OK\r\n")) {
			left--
			return append([]byte("HTTP/1.1 503 Service Unavailable\r\n"), b[len("HTTP/1.1 200 OK\r\n"):]...)
		}
		return b
	})
	injected := func(n int) func() int {
		mu.Lock()
		defer mu.Unlock()
		left = n
		return func() int { mu.Lock(); defer mu.Unlock(); return n - left }
	}
	done := injected(2)
	st := openCyrus(t, pcfg)
	if n := done(); n != 2 {
		t.Fatalf("the proxy turned %d answers into 503, want 2", n)
	}
	done = injected(2)
	c := mustT[hub.Changes](t)(st.Changes(t.Context(), nil))
	if got := addedIDs(c); !slices.Equal(got, []string{string(id)}) {
		t.Fatalf("Changes = %v, want [%s]", got, id)
	}
	if n := done(); n != 2 {
		t.Fatalf("the proxy turned %d answers into 503, want 2", n)
	}
	done = injected(1)
	id2 := mustT[hub.ID](t)(st.Append(t.Context(), hubtest.Channel(2), hubtest.Envelope(80)))
	if n := done(); n != 1 {
		t.Fatalf("the proxy turned %d answers into 503, want 1", n)
	}
	if got := mustT[string](t)(st.ensureMailbox(t.Context())); got != mb {
		t.Fatalf("the mailbox is %s now, was %s: it was made again", got, mb)
	}
	// The 503 replaced the answer to an Email/set Cyrus had done: the
	// second try is refused with alreadyExists, whose existingId is the
	// message (one email per Message-ID), not a duplicate.
	c2 := mustT[hub.Changes](t)(adm.st.Changes(t.Context(), nil))
	if got := addedIDs(c2); len(got) != 2 || !slices.Contains(got, string(id2)) {
		t.Fatalf("the account holds %v, want 2 messages with %s (one Append, stored once)", got, id2)
	}
}
