package imaphub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// ctx5 is a context for a few calls: 5 s on an idle machine, scaled for a
// busy one (realtest.Scale).
func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), realtest.Scale(5*time.Second))
	t.Cleanup(cancel)
	return ctx
}

func built(t *testing.T, ch string, env []byte) string {
	msg, err := hub.Build(ch, env, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return string(msg)
}

func ids(c hub.Changes) []hub.ID {
	var out []hub.ID
	for _, a := range c.Added {
		out = append(out, a.ID)
	}
	return out
}

// TestBadAnswersKeepCursor: for each way a server answer can be broken,
// Changes fails with a clear protocol error, and the same cursor then
// gives exactly the right changes once the server answers well again.
func TestBadAnswersKeepCursor(t *testing.T) {
	cases := []struct {
		name    string
		command string // the command whose answer is broken
		answer  string
		hangUp  bool
		want    string // in the error text
	}{
		{"truncated literal", "UID FETCH", "* 1 FETCH (UID 3 BODY[HEADER.FIELDS (X)] {500}\r\nTandem-Channel: abc", true, "unavailable"},
		{"connection closed", "SELECT", "", true, "select"},
		{"tagged BAD", "SELECT", "%TAG% BAD no idea\r\n", false, "BAD"},
		{"unterminated list", "UID FETCH", "* 1 FETCH (UID 3\r\n%TAG% OK\r\n", false, "malformed"},
		{"non-numeric search", "UID SEARCH", "* SEARCH 1 two\r\n%TAG% OK\r\n", false, "non-numeric"},
		{"continuation out of turn", "SELECT", "+ what?\r\n", false, "continuation"},
		{"unknown tag", "UID FETCH", "zz9 OK fine\r\n", false, "unknown tag"},
		{"no UIDVALIDITY", "SELECT", "* 3 EXISTS\r\n%TAG% OK\r\n", false, "UIDVALIDITY"},
		{"bad UIDVALIDITY", "SELECT", "* OK [UIDVALIDITY x] hm\r\n%TAG% OK\r\n", false, "UIDVALIDITY"},
		{"FETCH without UID", "UID FETCH", "* 1 FETCH (BODY[HEADER.FIELDS (X)] {0}\r\n)\r\n%TAG% OK\r\n", false, "malformed FETCH"},
		{"BYE", "UID FETCH", "* BYE going away\r\n", true, "BYE"},
		{"huge literal size", "UID FETCH", "* 1 FETCH (UID 3 BODY[HEADER.FIELDS (X)] {99999999999999}\r\n", true, "literal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			ch := hubtest.Channel(1)
			uid1 := f.add(built(t, ch, hubtest.Envelope(70)))
			uid2 := f.add(built(t, ch, hubtest.Envelope(70)))
			s := f.open(t)
			c1, err := s.Changes(ctx5(t), nil)
			if err != nil || len(c1.Added) != 2 {
				t.Fatalf("first Changes: %+v, %v", c1, err)
			}
			saved := bytes.Clone(c1.Cursor)
			// Changes since saved: uid1 destroyed, uid3 appended.
			f.mu.Lock()
			delete(f.msgs, uid1)
			f.mu.Unlock()
			uid3 := f.add(built(t, ch, hubtest.Envelope(70)))

			f.setHook(func(line string) (string, bool, bool) {
				if strings.HasPrefix(strings.ToUpper(line), tc.command) {
					return tc.answer, tc.hangUp, true
				}
				return "", false, false
			})
			_, err = s.Changes(ctx5(t), saved)
			if err == nil {
				t.Fatal("Changes succeeded on a broken answer")
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if !bytes.Equal(saved, c1.Cursor) {
				t.Fatal("the caller's cursor was modified")
			}
			f.setHook(nil)
			c2, err := s.Changes(ctx5(t), saved)
			if err != nil {
				t.Fatalf("Changes after the server recovered: %v", err)
			}
			if got := ids(c2); !slices.Equal(got, []hub.ID{makeID(7, uid3)}) {
				t.Errorf("added %v, want [%s]", got, makeID(7, uid3))
			}
			if !slices.Equal(c2.Removed, []hub.ID{makeID(7, uid1)}) {
				t.Errorf("removed %v, want [%s]", c2.Removed, makeID(7, uid1))
			}
			_ = uid2
		})
	}
}

// TestProtocolErrorsAreTyped: an answer cut short by the connection
// ending is hub.ErrUnavailable (retry), a malformed one hub.ErrProtocol
// (stop); neither matches the other.
func TestProtocolErrorsAreTyped(t *testing.T) {
	f := newFake(t)
	f.add(built(t, hubtest.Channel(1), hubtest.Envelope(70)))
	s := f.open(t)
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "UID FETCH") {
			return "* 1 FETCH (UID 1 BODY[HEADER.FIELDS (X)] {50}\r\nshort", true, true
		}
		return "", false, false
	})
	_, err := s.Changes(ctx5(t), nil)
	var ue *hub.UnavailableError
	if !errors.As(err, &ue) || errors.Is(err, hub.ErrProtocol) || ue.Op != "changes" {
		t.Fatalf("truncated literal: %v (%T), want a *hub.UnavailableError for changes", err, err)
	}
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "UID FETCH") {
			return "* 1 FETCH (UID 1\r\n%TAG% OK\r\n", false, true
		}
		return "", false, false
	})
	_, err = s.Changes(ctx5(t), nil)
	var pe *hub.ProtocolError
	if !errors.As(err, &pe) || errors.Is(err, hub.ErrUnavailable) || pe.Op != "changes" {
		t.Fatalf("malformed answer: %v (%T), want a *hub.ProtocolError for changes", err, err)
	}
}

func TestFetchPerMessageErrors(t *testing.T) {
	f := newFake(t)
	ch := hubtest.Channel(2)
	good := hubtest.Envelope(120)
	ugood := f.add(built(t, ch, good))
	utext := f.add("Tandem-Version: 1\r\nTandem-Channel: " + ch + "\r\n\r\nnot an envelope\r\n")
	uv2 := f.add("Tandem-Version: 2\r\nTandem-Channel: " + ch + "\r\n\r\n" + hub.EncodeBody(good))
	ubig := f.add(built(t, ch, hubtest.Envelope(100))) // its answer is replaced below
	s := f.open(t)
	f.setHook(func(line string) (string, bool, bool) {
		if !strings.HasPrefix(line, "UID FETCH") || !strings.Contains(line, "BODY.PEEK[TEXT]") {
			return "", false, false
		}
		// The three real answers, then one with a literal over the limit.
		var b strings.Builder
		for _, uid := range []uint32{ugood, utext, uv2} {
			hdr, body := splitRaw(f.msgs[uid])
			fmt.Fprintf(&b, "* %d FETCH (UID %d BODY[HEADER.FIELDS (X)] {%d}\r\n%s BODY[TEXT] {%d}\r\n%s)\r\n", uid, uid, len(hdr), hdr, len(body), body)
		}
		big := maxLiteral + 1
		fmt.Fprintf(&b, "* 4 FETCH (UID %d BODY[HEADER.FIELDS (X)] {2}\r\n\r\n BODY[TEXT] {%d}\r\n%s)\r\n", ubig, big, strings.Repeat("A", big))
		b.WriteString("%TAG% OK done\r\n")
		return b.String(), false, true
	})
	want := []hub.ID{makeID(7, ugood), makeID(7, utext), makeID(7, uv2), makeID(7, ubig), makeID(7, 99), makeID(8, ugood), "junk"}
	bodies, err := s.Fetch(ctx5(t), want)
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != len(want) {
		t.Fatalf("%d bodies for %d ids", len(bodies), len(want))
	}
	if b := bodies[0]; b.Err != nil || !bytes.Equal(b.Envelope, good) || b.Channel != ch {
		t.Errorf("good message: %v", b.Err)
	}
	for i, wantErr := range []error{nil, hub.ErrNotEnvelope, hub.ErrUnknownVersion, hub.ErrTooLarge, hub.ErrNotFound, hub.ErrNotFound, hub.ErrNotFound} {
		if i > 0 && !errors.Is(bodies[i].Err, wantErr) {
			t.Errorf("%s: %v, want %v", want[i], bodies[i].Err, wantErr)
		}
	}
	f.setHook(nil)
	if b, err := s.Fetch(ctx5(t), want[:1]); err != nil || b[0].Err != nil {
		t.Fatalf("the connection is unusable after per-message errors: %v %v", err, b[0].Err)
	}
}

func TestAppendWithoutAppendUID(t *testing.T) {
	f := newFake(t)
	s := f.open(t)
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "APPEND") {
			return "+ ok\r\n%TAG% OK appended\r\n", false, true
		}
		return "", false, false
	})
	if _, err := s.Append(ctx5(t), hubtest.Channel(1), hubtest.Envelope(70)); !errors.Is(err, hub.ErrProtocol) || !strings.Contains(err.Error(), "APPENDUID") {
		t.Fatalf("Append without APPENDUID: %v", err)
	}
}

func TestServerWithoutUIDPLUS(t *testing.T) {
	f := newFake(t)
	f.caps = "IMAP4rev1 IDLE"
	if _, err := Open(ctx5(t), f.config()); !errors.Is(err, hub.ErrProtocol) || !strings.Contains(err.Error(), "UIDPLUS") {
		t.Fatalf("Open on a server without UIDPLUS: %v", err)
	}
}

func TestContextCancelInterrupts(t *testing.T) {
	f := newFake(t)
	s := f.open(t)
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "SELECT") {
			return "* 1 EXISTS\r\n", false, true // and never completes
		}
		return "", false, false
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Changes(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Changes on a silent server: %v, want DeadlineExceeded", err)
	}
	f.setHook(nil)
	if _, err := s.Changes(ctx5(t), nil); err != nil {
		t.Fatalf("Changes after a timeout (redial): %v", err)
	}
}

// TestQRESYNCLongKnownSet: with QRESYNC, removals come from VANISHED
// (EARLIER), intersected with the cursor's UIDs; a known set too long for a
// command line is left out of SELECT rather than sent.
func TestQRESYNCLongKnownSet(t *testing.T) {
	f := newFake(t)
	f.caps += " CONDSTORE QRESYNC ENABLE"
	var mu sync.Mutex
	var lastSelect string
	selectLine := func() string { mu.Lock(); defer mu.Unlock(); return lastSelect }
	f.setHook(func(line string) (string, bool, bool) {
		if !strings.HasPrefix(line, "SELECT") {
			return "", false, false
		}
		mu.Lock()
		lastSelect = line
		mu.Unlock()
		return "* 0 EXISTS\r\n* OK [UIDVALIDITY 7] ok\r\n* OK [HIGHESTMODSEQ 9] ok\r\n" +
			"* VANISHED (EARLIER) 1:9999,20000\r\n%TAG% OK [READ-WRITE] done\r\n", false, true
	})
	s := f.open(t)
	if !s.c.qresync {
		t.Fatal("QRESYNC not enabled")
	}
	var odd []uint32
	for uid := uint32(1); uid < 10000; uid += 2 {
		odd = append(odd, uid)
	}
	cur := cursor{identity: s.identity, uidValidity: 7, modSeq: 5, lastUID: 10000, known: setOf(odd)}
	c, err := s.Changes(ctx5(t), cur.encode())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(selectLine(), `SELECT "Tandem" (QRESYNC (7 5))`) {
		t.Errorf("SELECT line %.60q…; want QRESYNC without the long known set", selectLine())
	}
	if len(c.Removed) != len(odd) || len(c.Added) != 0 {
		t.Fatalf("removed %d (want %d), added %d", len(c.Removed), len(odd), len(c.Added))
	}
	next, err := decodeCursor(c.Cursor)
	if err != nil || next.modSeq != 9 || len(next.known) != 0 || next.lastUID != 10000 {
		t.Fatalf("next cursor %+v, %v", next, err)
	}
	// A short known set is sent.
	cur.known = setOf([]uint32{2, 4})
	if _, err := s.Changes(ctx5(t), cur.encode()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(selectLine(), `SELECT "Tandem" (QRESYNC (7 5 2,4))`) {
		t.Errorf("SELECT line %q; want the known UIDs", selectLine())
	}
}

// TestReconnectAfterIdleLogout: a server that logged the idle connection
// out (BYE, close) costs a retry on a fresh connection, not an error, for
// every idempotent operation, and for an append whose message was not sent.
func TestReconnectAfterIdleLogout(t *testing.T) {
	f := newFake(t)
	ch := hubtest.Channel(1)
	env := hubtest.Envelope(70)
	uid := f.add(built(t, ch, env))
	s := f.open(t)
	ops := []struct {
		name string
		op   func() error
	}{
		{"EnsureFolder", func() error { return s.EnsureFolder(ctx5(t)) }},
		{"Changes", func() error {
			c, err := s.Changes(ctx5(t), nil)
			if err == nil && len(c.Added) != 1 {
				err = fmt.Errorf("added %v", c.Added)
			}
			return err
		}},
		{"Fetch", func() error {
			b, err := s.Fetch(ctx5(t), []hub.ID{makeID(7, uid)})
			if err == nil && !bytes.Equal(b[0].Envelope, env) {
				err = fmt.Errorf("body %+v", b[0])
			}
			return err
		}},
		{"Destroy", func() error { return s.Destroy(ctx5(t), []hub.ID{makeID(7, 999)}) }},
		{"Append", func() error {
			f.mu.Lock()
			n := len(f.msgs)
			f.mu.Unlock()
			_, err := s.Append(ctx5(t), ch, hubtest.Envelope(70))
			f.mu.Lock()
			defer f.mu.Unlock()
			if err == nil && len(f.msgs) != n+1 {
				err = fmt.Errorf("%d messages stored, want 1", len(f.msgs)-n)
			}
			return err
		}},
	}
	for _, o := range ops {
		name, op := o.name, o.op
		time.Sleep(20 * time.Millisecond) // let the fake register the connection
		f.mu.Lock()
		before := f.dials
		f.mu.Unlock()
		f.dropAll()
		if err := op(); err != nil {
			t.Errorf("%s after an idle logout: %v", name, err)
		}
		f.mu.Lock()
		if f.dials != before+1 {
			t.Errorf("%s: %d new connections, want 1", name, f.dials-before)
		}
		f.mu.Unlock()
	}
	// A connection that fails on its first use is not retried.
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "SELECT") {
			return "", true, true
		}
		return "", false, false
	})
	f.dropAll()
	if _, err := s.Changes(ctx5(t), nil); err == nil {
		t.Fatal("Changes succeeded on a server that always hangs up")
	}
}

// TestCloseInterrupts: Close does not wait for a server that never answers.
func TestCloseInterrupts(t *testing.T) {
	f := newFake(t)
	s, err := Open(ctx5(t), f.config())
	if err != nil {
		t.Fatal(err)
	}
	f.setHook(func(line string) (string, bool, bool) {
		if strings.HasPrefix(line, "SELECT") {
			return "* 1 EXISTS\r\n", false, true // and never completes
		}
		return "", false, false
	})
	done := make(chan error, 1)
	go func() { _, err := s.Changes(t.Context(), nil); done <- err }()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(realtest.Scale(5 * time.Second)):
		t.Fatal("Close waited for a silent server")
	}
	if err := <-done; err == nil {
		t.Fatal("the interrupted Changes succeeded")
	}
	if _, err := s.Changes(t.Context(), nil); !errors.Is(err, hub.ErrClosed) {
		t.Fatalf("Changes after Close: %v, want ErrClosed", err)
	}
}

// TestLoginMechanisms: LOGIN normally; AUTHENTICATE PLAIN, with or without
// SASL-IR, where LOGIN is disabled; a clear error where neither works.
func TestLoginMechanisms(t *testing.T) {
	for _, tc := range []struct {
		caps string
		ok   bool
	}{
		{"IMAP4rev1 UIDPLUS IDLE", true},
		{"IMAP4rev1 UIDPLUS IDLE LOGINDISABLED AUTH=PLAIN SASL-IR", true},
		{"IMAP4rev1 UIDPLUS IDLE LOGINDISABLED AUTH=PLAIN", true},
		{"IMAP4rev1 UIDPLUS IDLE LOGINDISABLED", false},
	} {
		f := newFake(t)
		f.caps = tc.caps
		s, err := Open(ctx5(t), f.config())
		if (err == nil) != tc.ok {
			t.Errorf("caps %q: Open: %v", tc.caps, err)
		}
		if err == nil {
			s.Close()
		}
		cfg := f.config()
		cfg.Password = "wrong"
		if _, err := Open(ctx5(t), cfg); err == nil {
			t.Errorf("caps %q: a wrong password was accepted", tc.caps)
		}
	}
}
