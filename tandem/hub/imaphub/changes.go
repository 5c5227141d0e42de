package imaphub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// maxKnownInSelect bounds the known-UIDs parameter of SELECT (QRESYNC),
// keeping the line far below servers' limits (Dovecot: 64 KiB).
const maxKnownInSelect = 8 << 10

// selection is what SELECT reported.
type selection struct {
	uidValidity uint32
	modSeq      uint64 // HIGHESTMODSEQ; 0 when absent or NOMODSEQ
	exists      uint32
	uidNext     uint32
	mailboxID   string // MAILBOXID (RFC 8474 OBJECTID); "" when not offered
	vanished    uidSet // VANISHED (EARLIER), with QRESYNC
}

// sameState reports whether two SELECTs saw the folder unchanged.
func (s selection) sameState(o selection) bool {
	return s.uidValidity == o.uidValidity && s.modSeq == o.modSeq && s.exists == o.exists &&
		s.uidNext == o.uidNext && s.mailboxID == o.mailboxID
}

// absorb takes one untagged response of a SELECT answer into s.
func (s *selection) absorb(r *response) error {
	switch {
	case r.status == "OK" && r.code != "":
		name, arg, _ := strings.Cut(r.code, " ")
		switch strings.ToUpper(name) {
		case "UIDVALIDITY":
			v, err := strconv.ParseUint(arg, 10, 32)
			if err != nil || v == 0 {
				return &hub.ProtocolError{Op: "select", Msg: "bad UIDVALIDITY " + strconv.Quote(arg)}
			}
			s.uidValidity = uint32(v)
		case "UIDNEXT":
			v, _ := strconv.ParseUint(arg, 10, 32)
			s.uidNext = uint32(v)
		case "HIGHESTMODSEQ":
			v, err := strconv.ParseUint(arg, 10, 64)
			if err != nil {
				return &hub.ProtocolError{Op: "select", Msg: "bad HIGHESTMODSEQ " + strconv.Quote(arg)}
			}
			s.modSeq = v
		case "NOMODSEQ":
			s.modSeq = 0
		case "MAILBOXID":
			s.mailboxID = strings.Trim(arg, "() ")
			if len(s.mailboxID) > 64 { // RFC 8474 allows 255; the cursor keeps 64
				h := sha256.Sum256([]byte(s.mailboxID))
				s.mailboxID = hex.EncodeToString(h[:32])
			}
		}
	case r.name == "EXISTS" && r.hasNum:
		s.exists = r.num
	case r.name == "VANISHED":
		set, err := parseVanished(r)
		if err != nil {
			return err
		}
		s.vanished = append(s.vanished, set...)
	}
	return nil
}

// selectFolder selects mailbox. With qr set (QRESYNC enabled and a cursor
// with a mod-sequence) it sends SELECT mailbox (QRESYNC (uidvalidity modseq
// known-uids)) and collects the VANISHED (EARLIER) response (RFC 7162
// §3.2.5).
func (c *conn) selectFolder(ctx context.Context, mailbox string, qr *cursor) (selection, error) {
	var sel selection
	line := "SELECT " + quote(mailbox)
	if qr != nil {
		line += fmt.Sprintf(" (QRESYNC (%d %d", qr.uidValidity, qr.modSeq)
		// The known UIDs only narrow the answer (it is intersected with
		// them anyway), so a set too long for a command line is left out.
		if known := qr.known.String(); known != "" && len(known) <= maxKnownInSelect {
			line += " " + known
		}
		line += "))"
	}
	c.selValidity = 0 // a failed SELECT leaves no mailbox selected (RFC 9051 §6.3.2)
	err := c.cmd(ctx, "select", line, sel.absorb)
	if err != nil {
		return sel, err
	}
	c.selected = true
	if sel.uidValidity == 0 {
		return sel, &hub.ProtocolError{Op: "select", Msg: "no UIDVALIDITY in the SELECT answer"}
	}
	sel.vanished = setOf(sel.vanished.uids())
	c.selMailbox, c.selValidity = mailbox, sel.uidValidity
	return sel, nil
}

// reselect makes mailbox the selected one, with its current messages in
// view, and returns its UIDVALIDITY. When the connection already has it
// selected under uidValidity, a NOOP brings in what other clients changed
// (RFC 9051 §6.1.2) and saves the server reopening the mailbox, which
// makes its next FETCH of bodies slower; otherwise it SELECTs.
func (c *conn) reselect(ctx context.Context, mailbox string, uidValidity uint32) (uint32, error) {
	if c.selValidity != 0 && c.selValidity == uidValidity && c.selMailbox == mailbox {
		err := c.cmd(ctx, "noop", "NOOP", func(r *response) error {
			if r.status == "OK" && r.code != "" {
				name, arg, _ := strings.Cut(r.code, " ")
				if strings.EqualFold(name, "UIDVALIDITY") && arg != strconv.FormatUint(uint64(uidValidity), 10) {
					c.selValidity = 0
				}
			}
			return nil
		})
		var se *statusError
		if errors.As(err, &se) && se.status == "NO" {
			// Cyrus answers NOOP with NO once the selected folder is
			// deleted: SELECT tells what is there now.
			c.selValidity, err = 0, nil
		}
		if err != nil || c.selValidity == uidValidity {
			return c.selValidity, err
		}
	}
	sel, err := c.selectFolder(ctx, mailbox, nil)
	return sel.uidValidity, err
}

// parseVanished reads "VANISHED [(EARLIER)] uid-set".
func parseVanished(r *response) (uidSet, error) {
	args := r.args
	if len(args) > 0 {
		if _, isList := args[0].([]any); isList {
			args = args[1:]
		}
	}
	if len(args) != 1 {
		return nil, &hub.ProtocolError{Op: "select", Msg: "malformed VANISHED response"}
	}
	s, _ := str(args[0])
	set, err := parseSet(s)
	if err != nil {
		return nil, &hub.ProtocolError{Op: "select", Msg: "malformed VANISHED set " + strconv.Quote(s), Err: err}
	}
	return set, nil
}

// Changes implements hub.Store (§10.3): removals by VANISHED (EARLIER) with
// QRESYNC or by comparing UID SEARCH ALL with the cursor's UIDs, additions
// by UID FETCH <last+1>:*. A cursor of another server, user or folder, or
// of another UIDVALIDITY or MAILBOXID, is a full resync from nothing
// (hub.Changes.Reset). A folder another client deleted is made again
// (§10.3 ensureFolder), and the result is a Reset too, as JMAP's is.
// Nothing is kept between calls except in the returned cursor, so an error
// loses nothing.
func (s *Store) Changes(ctx context.Context, since hub.Cursor) (hub.Changes, error) {
	var cur cursor
	if since != nil {
		var err error
		if cur, err = decodeCursor(since); err != nil {
			return hub.Changes{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out hub.Changes
	err := s.run(ctx, func(c *conn) error {
		var err error
		out, err = c.changes(ctx, s.mailbox, s.identity, since, cur, &s.headers)
		if !isNoFolder(err) {
			return err
		}
		// Deleted by another client: make it again, as EnsureFolder does.
		if err := c.ensureFolder(ctx, s.mailbox); err != nil {
			return noFolder("changes", err)
		}
		out, err = c.changes(ctx, s.mailbox, s.identity, since, cur, &s.headers)
		if isNoFolder(err) {
			return noFolder("changes", err)
		}
		return err
	})
	return out, err
}

// noFolder is the error of op when the folder could not be made again
// after it was found missing: hub.ErrNoFolder, unless the server answered
// it failed for now (then the caller's retry may find or make it).
func noFolder(op string, err error) error {
	if isTransient(err) {
		return err
	}
	return fmt.Errorf("imaphub: %s: %w: %w", op, hub.ErrNoFolder, err)
}

// isNoFolder reports whether err is a NO to SELECT: the folder is not
// there (RFC 9051 §6.3.2), or not selectable by this user.
//
// A transient NO (NO [SERVERBUG] from a busy Dovecot) is not: the folder
// may well be there, and the call is retried (statusError.transient).
func isNoFolder(err error) bool {
	se, ok := refusal(err)
	return ok && se.cmd == "select"
}

func (c *conn) changes(ctx context.Context, mailbox string, identity [16]byte, since hub.Cursor, cur cursor, hc *headerCache) (hub.Changes, error) {
	foreign := since != nil && cur.identity != identity
	var qr *cursor
	if since != nil && !foreign && c.qresync && cur.modSeq > 0 {
		qr = &cur
	}
	sel, err := c.selectFolder(ctx, mailbox, qr)
	if err != nil {
		return hub.Changes{}, err
	}
	hc.reset(sel.uidValidity)
	var out hub.Changes
	next := cursor{identity: identity, mailboxID: sel.mailboxID, uidValidity: sel.uidValidity, modSeq: sel.modSeq}
	known, last := cur.known, cur.lastUID
	switch {
	case since == nil:
	case foreign || cur.mailboxID != sel.mailboxID || cur.uidValidity != sel.uidValidity:
		// Not this folder's cursor: a full resync from nothing, never a
		// filter on what is reported (docs/decisions/tandem-hub-cursor-identity.md).
		out.Reset = true
		for _, uid := range known.uids() {
			out.Removed = append(out.Removed, makeID(cur.uidValidity, uid))
		}
		known, last = nil, 0
	default:
		var gone []uint32
		if qr != nil {
			for _, uid := range sel.vanished.uids() {
				if known.contains(uid) {
					gone = append(gone, uid)
				}
			}
		} else if gone, err = c.missing(ctx, known); err != nil {
			return hub.Changes{}, err
		}
		known = subtract(known, gone)
		hc.forget(sel.uidValidity, gone)
		for _, uid := range gone {
			out.Removed = append(out.Removed, makeID(sel.uidValidity, uid))
		}
	}
	if sel.exists > 0 && last < math.MaxUint32 {
		added, maxUID, err := c.fetchNew(ctx, last+1, hc)
		if err != nil {
			return hub.Changes{}, err
		}
		uids := known.uids()
		for _, a := range added {
			out.Added = append(out.Added, hub.Added{ID: makeID(sel.uidValidity, a.uid), Channel: a.channel, Size: a.size})
			uids = append(uids, a.uid)
		}
		known, last = setOf(uids), max(last, maxUID)
	}
	next.known, next.lastUID = known, last
	out.Cursor = next.encode()
	return out, nil
}

// missing returns the UIDs of known that UID SEARCH ALL no longer lists.
func (c *conn) missing(ctx context.Context, known uidSet) ([]uint32, error) {
	if len(known) == 0 {
		return nil, nil
	}
	var present []uint32
	err := c.cmd(ctx, "search", "UID SEARCH ALL", func(r *response) error {
		if r.name != "SEARCH" {
			return nil
		}
		for _, a := range r.args {
			n, ok := number(a)
			if !ok {
				return &hub.ProtocolError{Op: "search", Msg: fmt.Sprintf("non-numeric SEARCH result %v", a)}
			}
			present = append(present, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := setOf(present)
	var gone []uint32
	for _, uid := range known.uids() {
		if !p.contains(uid) {
			gone = append(gone, uid)
		}
	}
	return gone, nil
}

func subtract(s uidSet, gone []uint32) uidSet {
	if len(gone) == 0 {
		return s
	}
	g := setOf(gone)
	var keep []uint32
	for _, uid := range s.uids() {
		if !g.contains(uid) {
			keep = append(keep, uid)
		}
	}
	return setOf(keep)
}

type newMessage struct {
	uid     uint32
	channel string
	size    int64 // RFC822.SIZE
}

// fetchNew runs UID FETCH <from>:* (UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS
// (Tandem-Channel …)]), ignoring a returned UID below from (n:* always
// returns the last message). Messages without the header are skipped but
// count for the last UID. The other header fields Fetch needs come in the
// same answer and go to hc (header.go).
func (c *conn) fetchNew(ctx context.Context, from uint32, hc *headerCache) ([]newMessage, uint32, error) {
	var out []newMessage
	var maxUID uint32
	line := fmt.Sprintf("UID FETCH %d:* (UID RFC822.SIZE BODY.PEEK[HEADER.FIELDS (%s)])", from, changesFields)
	err := c.cmd(ctx, "changes", line, func(r *response) error {
		if r.name != "FETCH" {
			return nil
		}
		f, err := parseFetch(r)
		if err != nil {
			return &hub.ProtocolError{Op: "changes", Msg: "malformed FETCH response", Err: err}
		}
		if f.uid < from || f.header == nil {
			return nil // the last message, or an unsolicited flag update
		}
		maxUID = max(maxUID, f.uid)
		hi := hc.add(f.uid, f.header)
		if hi.parseErr != nil {
			return nil // not a Tandem message (§10.4)
		}
		if hi.channel != "" {
			out = append(out, newMessage{uid: f.uid, channel: hi.channel, size: f.size})
		}
		return nil
	})
	return out, maxUID, err
}
