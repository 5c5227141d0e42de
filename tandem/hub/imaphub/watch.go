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
// onChange. IDLE is re-issued every Config.IdleRefresh (28 minutes by
// default, inside RFC 2177's 29). On Dovecot a change reaches the callback
// about 500 ms after it happened: docs/decisions/tandem-hub-imap-push.md.
func (s *Store) Watch(ctx context.Context, onChange func()) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return hub.ErrClosed
	}
	mailbox := s.mailbox
	s.mu.Unlock()

	c, err := dial(ctx, &s.cfg)
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
	if _, err := c.selectFolder(ctx, mailbox, nil); err != nil {
		return err
	}
	err = c.idleLoop(ctx, s.cfg.idleRefresh(), onChange)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return hub.ErrClosed
	}
	return err
}

// idleLoop runs IDLE until ctx ends or the connection fails. A reader
// goroutine, owned by idleLoop and ended by closing the connection, feeds
// the responses in.
func (c *conn) idleLoop(ctx context.Context, refresh time.Duration, onChange func()) error {
	c.nc.SetDeadline(time.Time{})
	type item struct {
		r   *response
		err error
	}
	in := make(chan item)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			r, err := c.rd.readResponse()
			select {
			case in <- item{r, err}:
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

	first := true
	for {
		tag := c.nextTag()
		c.w.WriteString(tag + " IDLE\r\n")
		if err := c.w.Flush(); err != nil {
			return c.fail("watch", err)
		}
		// Until the continuation request, then while idling.
		timer := time.NewTimer(refresh)
		idling, stopping := false, false
		for {
			var it item
			select {
			case it = <-in:
			case <-ctx.Done():
				timer.Stop()
				if idling && !stopping {
					c.w.WriteString("DONE\r\n")
					c.w.Flush()
				}
				return ctx.Err()
			case <-timer.C:
				if idling && !stopping {
					stopping = true
					c.w.WriteString("DONE\r\n")
					if err := c.w.Flush(); err != nil {
						return c.fail("watch", err)
					}
				}
				continue
			}
			if it.err != nil {
				timer.Stop()
				return c.fail("watch", it.err)
			}
			r := it.r
			switch {
			case r.tag == "+" && !idling:
				idling = true
				if first {
					first = false
					onChange() // listening: the caller catches up now
				}
			case r.tag == tag:
				timer.Stop()
				if r.status != "OK" {
					return &statusError{cmd: "idle", status: r.status, code: r.code, text: r.text}
				}
				if !stopping {
					return &hub.ProtocolError{Op: "watch", Msg: "IDLE ended without DONE"}
				}
			case r.tag == "*" && r.status == "BYE":
				timer.Stop()
				return fmt.Errorf("imaphub: watch: server said BYE: %s", r.text)
			case r.tag == "*":
				switch r.name {
				case "EXISTS", "EXPUNGE", "VANISHED", "FETCH":
					onChange()
				}
			default:
				timer.Stop()
				return c.fail("watch", errors.New("unexpected response while idling"))
			}
			if r.tag == tag {
				break
			}
		}
	}
}
