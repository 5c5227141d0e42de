package imaphub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Watch implements hub.Store: IDLE on the selected Tandem folder, over a
// connection of its own; EXISTS, EXPUNGE, VANISHED and FETCH responses call
// onChange. Every Config.IdleRefresh (DefaultIdleRefresh) Watch ends IDLE,
// SELECTs the folder again (calling onChange if it changed meanwhile, a
// new UIDVALIDITY included) and idles again. Every wait for the server is
// bounded by Config.ReplyTimeout, so a silent connection ends Watch with a
// hub.ErrUnavailable error at the latest IdleRefresh + ReplyTimeout after
// it went silent; a folder deleted under Watch (Dovecot says BYE, Cyrus
// says nothing until the next SELECT) ends it with hub.ErrNoFolder.
// Decision: docs/decisions/tandem-hub-imap-watch-deadlines.md. On Dovecot
// a change reaches the callback about 500 ms after it happened
// (docs/decisions/tandem-hub-imap-push.md).
func (s *Store) Watch(ctx context.Context, onChange func()) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return hub.ErrClosed
	}
	mailbox := s.mailbox
	s.mu.Unlock()

	c, err := s.login(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return hub.ErrClosed
	}
	s.watches[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watches, c)
		s.mu.Unlock()
		c.close()
	}()
	sel, err := c.selectFolder(ctx, mailbox, nil)
	if err == nil {
		err = c.idleLoop(ctx, &s.cfg, mailbox, sel, onChange)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return hub.ErrClosed
	}
	return s.watchError(ctx, mailbox, err)
}

// watchError tells a folder deleted under Watch (a NO to SELECT, or a BYE
// while the folder is no longer listed) from other failures.
func (s *Store) watchError(ctx context.Context, mailbox string, err error) error {
	if isNoFolder(err) {
		return fmt.Errorf("imaphub: watch %s: %w (%w)", mailbox, hub.ErrNoFolder, err)
	}
	if !errors.Is(err, errBye) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var listed bool
	lerr := s.run(ctx, func(c *conn) error {
		var err error
		listed, err = c.listed(ctx, mailbox)
		return err
	})
	if lerr == nil && !listed {
		return fmt.Errorf("imaphub: watch %s: %w (%w)", mailbox, hub.ErrNoFolder, err)
	}
	return err
}

// idler feeds the responses of a connection in IDLE to the idle loop: a
// reader goroutine, owned by idleLoop and ended by closing the connection.
type idler struct {
	ctx   context.Context
	in    chan idleItem
	reply time.Duration
}

type idleItem struct {
	r   *response
	err error
}

// errIdleTimeout is a wait that the reply timeout ended.
var errIdleTimeout = errors.New("no answer within the reply timeout")

// next returns the next response, waiting at most d (0: until ctx ends).
func (w *idler) next(d time.Duration) (*response, error) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case it := <-w.in:
		return it.r, it.err
	case <-w.ctx.Done():
		return nil, w.ctx.Err()
	case <-timeout:
		return nil, errIdleTimeout
	}
}

// idleLoop runs IDLE until ctx ends or the connection fails, re-selecting
// the folder every refresh.
func (c *conn) idleLoop(ctx context.Context, cfg *Config, mailbox string, sel selection, onChange func()) error {
	c.tc.readsWithoutDeadline()
	w := &idler{ctx: ctx, in: make(chan idleItem), reply: cfg.replyTimeout()}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			r, err := c.rd.readResponse()
			select {
			case w.in <- idleItem{r, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(quit)
		c.nc.Close() // unblocks the reader
		<-done
	}()
	for first := true; ; first = false {
		if err := c.idleOnce(w, cfg.idleRefresh(), first, onChange); err != nil {
			return err
		}
		now, err := c.reselectIdle(w, mailbox)
		if err != nil {
			return err
		}
		if !now.sameState(sel) {
			onChange() // changed while not idling, or the folder was replaced
		}
		sel = now
	}
}

// idleOnce sends IDLE, idles for refresh, and ends it with DONE.
func (c *conn) idleOnce(w *idler, refresh time.Duration, first bool, onChange func()) error {
	tag := c.nextTag()
	if err := c.send(tag + " IDLE\r\n"); err != nil {
		return err
	}
	for idling := false; !idling; { // until the continuation request
		r, err := w.next(w.reply)
		if err != nil {
			return c.idleFail(w, "IDLE", err)
		}
		switch {
		case r.tag == "+":
			idling = true
		case r.tag == tag:
			return &statusError{cmd: "idle", status: r.status, code: r.code, text: r.text}
		default:
			if err := c.untagged(r, onChange); err != nil {
				return err
			}
		}
	}
	if first {
		onChange() // listening: the caller catches up now
	}
	end := time.Now().Add(refresh)
	for {
		r, err := w.next(time.Until(end))
		if errors.Is(err, errIdleTimeout) {
			break
		}
		if err != nil {
			return c.idleFail(w, "IDLE", err)
		}
		if r.tag == tag {
			return &hub.ProtocolError{Op: "watch", Msg: "IDLE ended without DONE"}
		}
		if err := c.untagged(r, onChange); err != nil {
			return err
		}
	}
	if err := c.send("DONE\r\n"); err != nil {
		return err
	}
	for {
		r, err := w.next(w.reply)
		if err != nil {
			return c.idleFail(w, "DONE", err)
		}
		if r.tag == tag {
			if r.status != "OK" {
				return &statusError{cmd: "idle", status: r.status, code: r.code, text: r.text}
			}
			return nil
		}
		if err := c.untagged(r, onChange); err != nil {
			return err
		}
	}
}

// reselectIdle SELECTs mailbox again through the idler's responses.
func (c *conn) reselectIdle(w *idler, mailbox string) (selection, error) {
	var sel selection
	tag := c.nextTag()
	if err := c.send(tag + " SELECT " + quote(mailbox) + "\r\n"); err != nil {
		return sel, err
	}
	for {
		r, err := w.next(w.reply)
		if err != nil {
			return sel, c.idleFail(w, "SELECT", err)
		}
		switch {
		case r.tag == tag && r.status != "OK":
			return sel, &statusError{cmd: "select", status: r.status, code: r.code, text: r.text}
		case r.tag == tag:
			if sel.uidValidity == 0 {
				return sel, &hub.ProtocolError{Op: "select", Msg: "no UIDVALIDITY in the SELECT answer"}
			}
			sel.vanished = nil
			return sel, nil
		case r.tag == "*" && r.status == "BYE":
			return sel, c.bye("watch", r)
		case r.tag == "*":
			if err := sel.absorb(r); err != nil {
				return sel, err
			}
		default:
			return sel, c.fail("watch", fmt.Errorf("unexpected response %q while selecting", r.tag))
		}
	}
}

// untagged handles a response while idling.
func (c *conn) untagged(r *response, onChange func()) error {
	switch {
	case r.tag == "*" && r.status == "BYE":
		return c.bye("watch", r)
	case r.tag == "*":
		switch r.name {
		case "EXISTS", "EXPUNGE", "VANISHED", "FETCH":
			onChange()
		}
		return nil
	}
	return c.fail("watch", errors.New("unexpected response while idling"))
}

// send writes a line (bounded by the write timeout).
func (c *conn) send(line string) error {
	c.w.WriteString(line)
	if err := c.w.Flush(); err != nil {
		return c.fail("watch", err)
	}
	return nil
}

// idleFail turns a failed wait into Watch's error.
func (c *conn) idleFail(w *idler, what string, err error) error {
	switch {
	case w.ctx.Err() != nil:
		return w.ctx.Err()
	case errors.Is(err, errIdleTimeout):
		c.fail("watch", err)
		return &hub.UnavailableError{Op: "watch", Err: fmt.Errorf("no answer to %s within %v: the connection is silent", what, w.reply)}
	}
	return c.fail("watch", err)
}
