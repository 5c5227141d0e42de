package imaphub

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// Append implements hub.Store: APPEND <mailbox> (\Seen) {literal} with the
// §10.4 message; the UID comes from UIDPLUS's APPENDUID (§10.3).
func (s *Store) Append(ctx context.Context, channel string, envelope []byte) (hub.ID, error) {
	msg, err := hub.Build(channel, envelope, time.Now())
	if err != nil {
		return "", err
	}
	if err := s.cfg.Budget.Append(1); err != nil {
		return "", fmt.Errorf("imaphub: append: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var id hub.ID
	// A transient NO stored nothing (RFC 9051 §6.3.12): append again.
	err = s.retry.Do(ctx, isTransient, func() error {
		var err error
		id, err = s.appendOnce(ctx, msg)
		return err
	})
	return id, err
}

// appendOnce appends msg, making the folder again if another client
// deleted it, and trying a fresh connection where the last one was
// unusable. s.mu is held.
func (s *Store) appendOnce(ctx context.Context, msg []byte) (hub.ID, error) {
	created := false
	for attempt := 0; ; attempt++ {
		reused := s.c != nil && s.c.broken == nil
		c, err := s.conn(ctx)
		if err != nil {
			return "", err
		}
		id, sent, err := c.append(ctx, s.mailbox, msg)
		if err == nil || attempt == 2 {
			return id, err
		}
		se, no := refusal(err)
		switch {
		case no && se.hasCode("TRYCREATE") && !created:
			// The folder is gone (another client deleted it): make it
			// again and append once more; a NO stored nothing (RFC 9051
			// §6.3.12).
			if err := c.ensureFolder(ctx, s.mailbox); err != nil {
				return "", noFolder("append", err)
			}
			created = true
		case (no || isTransient(err)) && c.selected:
			// Dovecot refuses appends on a connection whose selected
			// folder was deleted (and maybe created again) by another
			// client, with NO [SERVERBUG] when it was renamed; a fresh
			// connection appends fine.
			c.fail("append", err)
		case !sent && reused && c.gone && ctx.Err() == nil:
			// The server had logged the idle connection out before the
			// message was sent: nothing can have been stored.
		default:
			return "", err
		}
	}
}

// append sends one APPEND. sent reports whether the message itself went
// out (after the server's continuation request); until then nothing can
// have been stored.
func (c *conn) append(ctx context.Context, mailbox string, msg []byte) (id hub.ID, sent bool, err error) {
	const op = "append"
	if c.broken != nil {
		return "", false, fmt.Errorf("imaphub: %s: connection broken: %w", op, c.broken)
	}
	stop := c.watchContext(ctx)
	defer stop()
	tag := c.nextTag()
	fmt.Fprintf(c.w, "%s APPEND %s (\\Seen) {%d}\r\n", tag, quote(mailbox), len(msg))
	if err := c.w.Flush(); err != nil {
		return "", false, c.ioFail(ctx, op, err)
	}
	for { // wait for the continuation request
		r, err := c.rd.readResponse()
		if err != nil {
			return "", false, c.ioFail(ctx, op, err)
		}
		if r.tag == "+" {
			break
		}
		if r.tag == tag {
			return "", false, &statusError{cmd: op, status: r.status, code: r.code, text: r.text}
		}
		if r.tag == "*" && r.status == "BYE" {
			return "", false, c.bye(op, r)
		}
		if r.tag != "*" {
			return "", false, c.fail(op, fmt.Errorf("response for unknown tag %q", r.tag))
		}
	}
	c.w.Write(msg)
	c.w.WriteString("\r\n")
	if err := c.w.Flush(); err != nil {
		return "", true, c.ioFail(ctx, op, err)
	}
	err = c.complete(ctx, op, tag, func(r *response) error {
		if r.tag != tag {
			return nil
		}
		v, uid, ok := parseAppendUID(r.code)
		if !ok {
			return &hub.ProtocolError{Op: op, Msg: "no APPENDUID in the answer (UIDPLUS is required, §10.3): " + strconv.Quote(r.code)}
		}
		id = makeID(v, uid)
		return nil
	})
	if err == nil && id == "" {
		err = &hub.ProtocolError{Op: op, Msg: "no APPENDUID in the answer (UIDPLUS is required, §10.3)"}
	}
	return id, true, err
}

// parseAppendUID reads "APPENDUID uidvalidity uid" (RFC 4315 §3).
func parseAppendUID(code string) (uidValidity, uid uint32, ok bool) {
	f := strings.Fields(code)
	if len(f) != 3 || !strings.EqualFold(f[0], "APPENDUID") {
		return 0, 0, false
	}
	v, err1 := strconv.ParseUint(f[1], 10, 32)
	u, err2 := strconv.ParseUint(f[2], 10, 32)
	if err1 != nil || err2 != nil || v == 0 || u == 0 {
		return 0, 0, false
	}
	return uint32(v), uint32(u), true
}

// Destroy implements hub.Store: UID STORE +FLAGS.SILENT (\Deleted), then
// UID EXPUNGE of the same UIDs (UIDPLUS), so no other message is affected.
func (s *Store) Destroy(ctx context.Context, ids []hub.ID) error {
	byValidity := map[uint32][]uint32{}
	for _, id := range ids {
		if v, uid, ok := parseID(id); ok {
			byValidity[v] = append(byValidity[v], uid)
		}
	}
	if len(byValidity) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run(ctx, func(c *conn) error {
		sel, err := c.selectFolder(ctx, s.mailbox, nil)
		if isNoFolder(err) {
			return nil // no folder: nothing left to destroy
		}
		if err != nil {
			return err
		}
		// Ids of another UIDVALIDITY are gone already.
		s.headers.forget(sel.uidValidity, byValidity[sel.uidValidity])
		for _, set := range batches(setOf(byValidity[sel.uidValidity])) {
			if err := c.cmd(ctx, "destroy", "UID STORE "+set.String()+` +FLAGS.SILENT (\Deleted)`, nil); err != nil {
				return err
			}
			if err := c.cmd(ctx, "destroy", "UID EXPUNGE "+set.String(), nil); err != nil {
				return err
			}
		}
		return nil
	})
}
