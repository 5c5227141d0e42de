package jmaphub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Requested EventSource parameters (§10.2 watch).
const (
	pingSeconds = 60
	// maxReconnectDelay caps the pause between reconnects of a stream that
	// keeps ending without any event.
	maxReconnectDelay = 30 * time.Second
)

// errNoPush means the server offers no EventSource push (Cyrus 3.6 on Debian
// answers 204 No Content): Watch polls instead.
var errNoPush = errors.New("jmaphub: server has no EventSource push")

// errSilent means neither an event nor a ping came for two ping intervals,
// or the stream's request got no answer within the request timeout.
var errSilent = errors.New("jmaphub: event stream silent (no answer, or no event or ping for two ping intervals)")

// Watch calls onChange whenever the account's emails may have changed, until
// ctx ends or the store is closed (§10.2 watch). It uses EventSource push
// (RFC 8620 §7.3) with types=Email, closeafter=no, ping=60, and calls
// onChange on every StateChange that names Email in the account. The server
// says its ping interval in every ping; when neither an event nor a ping
// arrives for two intervals (or the stream gets no answer within
// Config.RequestTimeout), Watch returns a hub.ErrUnavailable error so the
// caller reconnects. A stream the server ends is reopened; after every
// (re)connect Watch calls onChange once, since events may have been
// missed. A server without push (no eventSourceUrl, or 204, 404, 405 or
// 501 to the request) is polled with Email/changes every
// Config.PollInterval instead, each poll bounded by Config.RequestTimeout.
//
// Watch returns ctx.Err() when ctx ends, hub.ErrClosed after Close, or the
// error that broke the connection.
func (st *Store) Watch(ctx context.Context, onChange func()) error {
	if err := st.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(st.done, cancel)
	defer stop()
	err := st.watch(ctx, onChange)
	if st.check() != nil {
		return hub.ErrClosed
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (st *Store) watch(ctx context.Context, onChange func()) error {
	if st.s.eventSourceURL == "" {
		return st.poll(ctx, onChange)
	}
	delay := time.Duration(0)
	for {
		events, err := st.stream(ctx, onChange)
		switch {
		case errors.Is(err, errNoPush):
			st.log.Debug("jmaphub: no EventSource push, polling", "interval", st.c.cfg.PollInterval)
			return st.poll(ctx, onChange)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errSilent):
			// A silent path: Watch returns so the caller reconnects
			// (and runs Changes), as IMAP's Watch does.
			return &hub.UnavailableError{Op: "watch", Err: err}
		case errors.Is(err, io.EOF):
			// The server ended the stream: reconnect, pausing longer each
			// time a stream brings nothing.
			if events > 0 {
				delay = 0
			}
			delay = min(max(2*delay, 250*time.Millisecond), maxReconnectDelay)
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// stream runs one EventSource connection until it fails, ends or goes
// silent, and returns how many events it delivered.
func (st *Store) stream(ctx context.Context, onChange func()) (int, error) {
	u, err := st.s.resolve(st.s.eventSourceURL, map[string]string{
		"types": "Email", "closeafter": "no", "ping": strconv.Itoa(pingSeconds),
	})
	if err != nil {
		return 0, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	var silent atomic.Bool
	// Until the answer's headers, the request timeout bounds the wait.
	connecting := time.AfterFunc(st.c.cfg.requestTimeout(), func() { silent.Store(true); cancel() })
	resp, err := st.c.do(req)
	connecting.Stop()
	if silent.Load() {
		if resp != nil {
			resp.Body.Close()
		}
		return 0, errSilent
	}
	var he *HTTPError
	if errors.As(err, &he) && (he.Status == 404 || he.Status == 405 || he.Status == 501) {
		return 0, errNoPush
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return 0, errNoPush
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return 0, badResponse("eventsource", "Content-Type %q, want text/event-stream", resp.Header.Get("Content-Type"))
	}
	onChange() // connected: catch up on anything missed before
	timeout := 2 * pingSeconds * time.Second
	timer := time.AfterFunc(timeout, func() { silent.Store(true); cancel() })
	defer timer.Stop()
	r := newSSEReader(resp.Body)
	for n := 0; ; n++ {
		ev, err := r.next()
		if err != nil {
			if silent.Load() {
				return n, errSilent
			}
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return n, err
			}
			if errors.Is(err, bufio.ErrTooLong) {
				return n, badResponse("eventsource", "event longer than %d bytes", maxEventBytes)
			}
			return n, fmt.Errorf("jmaphub: event stream: %w", err)
		}
		interval, err := st.handleEvent(ev, onChange)
		if err != nil {
			return n, err
		}
		if interval > 0 {
			timeout = 2 * interval
		}
		timer.Reset(timeout)
	}
}

// handleEvent acts on one event: a StateChange naming Email in the account
// calls onChange; a ping returns its interval.
func (st *Store) handleEvent(ev sseEvent, onChange func()) (time.Duration, error) {
	switch ev.Type {
	case "ping":
		var p struct {
			Interval *int64 `json:"interval"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil || p.Interval == nil || *p.Interval < 0 {
			return 0, badResponse("eventsource", "malformed ping %q", truncateText(ev.Data))
		}
		return time.Duration(min(*p.Interval, 3600)) * time.Second, nil
	case "state", "":
		var sc struct {
			Type    string                       `json:"@type"`
			Changed map[string]map[string]string `json:"changed"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &sc); err != nil || sc.Type != "StateChange" {
			return 0, badResponse("eventsource", "malformed StateChange %q", truncateText(ev.Data))
		}
		if _, ok := sc.Changed[st.s.accountID]["Email"]; ok {
			onChange()
		}
	}
	return 0, nil
}

func truncateText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
