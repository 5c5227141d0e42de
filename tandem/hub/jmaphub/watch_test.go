package jmaphub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/hubtest"
)

// sseServer is an in-process EventSource endpoint (RFC 8620 §7.3). script
// runs once per connection with a function that writes one event.
type sseServer struct {
	conns  atomic.Int32
	query  atomic.Value // the last request's raw query
	script func(n int, send func(event, data string), r *http.Request)
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.conns.Add(1))
	s.query.Store(r.URL.RawQuery)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	s.script(n, func(event, data string) {
		fmt.Fprintf(w, "event: %s\r\ndata: %s\r\n\r\n", event, data)
		w.(http.Flusher).Flush()
	}, r)
}

const stateChangeA1 = `{"@type":"StateChange","changed":{"A1":{"Email":"s9","Thread":"t2"}}}`

// watchCalls runs Watch in the background and returns its onChange signals
// and its result.
func watchCalls(t *testing.T, st *Store, ctx context.Context) (<-chan struct{}, <-chan error) {
	calls := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() { done <- st.Watch(ctx, func() { calls <- struct{}{} }) }()
	return calls, done
}

func waitCall(t *testing.T, calls <-chan struct{}, done <-chan error, what string) {
	t.Helper()
	select {
	case <-calls:
	case err := <-done:
		t.Fatalf("Watch ended while waiting for %s: %v", what, err)
	case <-time.After(realtest.Scale(10 * time.Second)):
		t.Fatalf("no onChange for %s", what)
	}
}

func noCall(t *testing.T, calls <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-calls:
		t.Fatalf("onChange for %s", what)
	case <-time.After(d):
	}
}

func TestWatchEventSource(t *testing.T) {
	f := newFake(t)
	withMail(f)
	release := make(chan struct{})
	srv := &sseServer{script: func(n int, send func(string, string), r *http.Request) {
		if n == 1 {
			send("ping", `{"@type":"Ping","interval":1}`)
			<-release
			send("state", `{"@type":"StateChange","changed":{"other":{"Email":"x"}}}`)
			send("state", `{"@type":"StateChange","changed":{"A1":{"Mailbox":"m2"}}}`)
			send("state", stateChangeA1)
			// Then silence: no event, no ping. Watch must end after two
			// intervals (2 s) so that the caller reconnects.
		}
		<-r.Context().Done()
	}}
	f.events = srv.ServeHTTP
	st := f.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls, done := watchCalls(t, st, ctx)
	waitCall(t, calls, done, "the first connect")
	if q := srv.query.Load().(string); q != "types=Email&closeafter=no&ping=60" {
		t.Fatalf("EventSource query %q", q)
	}
	noCall(t, calls, 200*time.Millisecond, "a ping")
	close(release)
	waitCall(t, calls, done, "a StateChange naming Email in the account")
	noCall(t, calls, 500*time.Millisecond, "StateChanges of other accounts or types")
	// Two silent ping intervals: Watch returns hub.ErrUnavailable.
	select {
	case err := <-done:
		if !errors.Is(err, hub.ErrUnavailable) || errors.Is(err, hub.ErrProtocol) {
			t.Fatalf("Watch after a silent stream: %v, want hub.ErrUnavailable", err)
		}
	case <-time.After(realtest.Scale(5 * time.Second)):
		t.Fatal("Watch still running after two silent ping intervals")
	}
}

func TestWatchEventSourceServerCloses(t *testing.T) {
	f := newFake(t)
	withMail(f)
	srv := &sseServer{script: func(n int, send func(string, string), r *http.Request) {
		if n <= 2 {
			send("state", stateChangeA1) // then end the response
			return
		}
		<-r.Context().Done()
	}}
	f.events = srv.ServeHTTP
	st := f.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls, done := watchCalls(t, st, ctx)
	for i := range 5 { // connect, event, reconnect, event, reconnect
		waitCall(t, calls, done, fmt.Sprintf("call %d", i))
	}
	if n := srv.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

func TestWatchEventSourceBad(t *testing.T) {
	for name, ev := range map[string][2]string{
		"state not JSON":     {"state", `{"@type":"StateCh`},
		"not a StateChange":  {"state", `{"@type":"Other","changed":{}}`},
		"ping without value": {"ping", `{}`},
		"ping negative":      {"ping", `{"interval":-5}`},
		"event over 1 MiB":   {"state", strings.Repeat("x", maxEventBytes+10)},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			withMail(f)
			f.events = (&sseServer{script: func(n int, send func(string, string), r *http.Request) {
				send(ev[0], ev[1])
				<-r.Context().Done()
			}}).ServeHTTP
			err := f.open(t).Watch(t.Context(), func() {})
			if !errors.Is(err, hub.ErrProtocol) {
				t.Fatalf("Watch on a bad event: %v, want hub.ErrProtocol", err)
			}
		})
	}
	f := newFake(t)
	withMail(f)
	f.events = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") }
	if err := f.open(t).Watch(t.Context(), func() {}); !errors.Is(err, hub.ErrProtocol) {
		t.Fatalf("Watch on an HTML answer: %v, want hub.ErrProtocol", err)
	}
}

// TestWatchPollingFallback: the fake answers 204 to EventSource, as Cyrus
// 3.6 does; Watch polls Email/changes and notices another client's append.
func TestWatchPollingFallback(t *testing.T) {
	f := newFake(t)
	m := withMail(f)
	st := f.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls, done := watchCalls(t, st, ctx)
	waitCall(t, calls, done, "the start of polling")
	noCall(t, calls, 300*time.Millisecond, "no change")
	addEnvelope(m, hubtest.Channel(1), hubtest.Envelope(80))
	waitCall(t, calls, done, "an append")
	// A state the server no longer accepts: re-read it and report a change.
	m.setChangesError("cannotCalculateChanges")
	waitCall(t, calls, done, "cannotCalculateChanges")
	m.setChangesError("")
	polls := strings.Count(strings.Join(f.callLog(), " "), "Email/changes")
	if polls < 3 {
		t.Fatalf("%d Email/changes polls", polls)
	}
}
