package imaphub

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// fetched is one FETCH response's items that this package asks for.
type fetched struct {
	uid      uint32
	header   []byte // BODY[HEADER.FIELDS (…)]; nil if absent or NIL
	text     []byte // BODY[TEXT]; nil if absent or NIL
	tooLarge bool   // a literal was over maxLiteral
}

// parseFetch reads "* n FETCH (name value …)".
func parseFetch(r *response) (fetched, error) {
	var f fetched
	if len(r.args) != 1 {
		return f, errors.New("FETCH without one item list")
	}
	items, ok := r.args[0].([]any)
	if !ok || len(items)%2 != 0 {
		return f, errors.New("FETCH items are not name-value pairs")
	}
	for i := 0; i < len(items); i += 2 {
		name, ok := items[i].(atom)
		if !ok {
			return f, fmt.Errorf("FETCH item name %v", items[i])
		}
		key := strings.ToUpper(string(name))
		val := items[i+1]
		var target *[]byte
		switch {
		case key == "UID":
			n, ok := number(val)
			if !ok || n == 0 {
				return f, fmt.Errorf("FETCH UID %v", val)
			}
			f.uid = n
			continue
		case strings.HasPrefix(key, "BODY[HEADER.FIELDS"):
			target = &f.header
		case key == "BODY[TEXT]":
			target = &f.text
		default:
			continue // FLAGS, MODSEQ, …
		}
		switch v := val.(type) {
		case []byte:
			*target = v
		case tooLarge:
			f.tooLarge = true
		case atom:
			if !strings.EqualFold(string(v), "NIL") {
				return f, fmt.Errorf("FETCH %s is the atom %q", key, v)
			}
		default:
			return f, fmt.Errorf("FETCH %s is not a string", key)
		}
	}
	if f.uid == 0 {
		return f, errors.New("FETCH without UID")
	}
	return f, nil
}

// Fetch implements hub.Store: UID FETCH (BODY.PEEK[HEADER.FIELDS
// (Content-Type Content-Transfer-Encoding …)] BODY.PEEK[TEXT]), then the
// three reading steps of §10.4.
func (s *Store) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	out := make([]hub.Body, len(ids))
	want := map[uint32][]int{} // uid → indexes in out
	var uidValidity uint32
	for i, id := range ids {
		out[i].ID = id
		out[i].Err = fmt.Errorf("imaphub: fetch %s: %w", id, hub.ErrNotFound)
		v, uid, ok := parseID(id)
		if !ok || (uidValidity != 0 && v != uidValidity) {
			continue // not an id of this folder's current UIDVALIDITY
		}
		uidValidity = v
		want[uid] = append(want[uid], i)
	}
	if len(want) == 0 {
		return out, nil
	}
	uids := make([]uint32, 0, len(want))
	for uid := range want {
		uids = append(uids, uid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.run(ctx, func(c *conn) error {
		sel, err := c.selectFolder(ctx, s.mailbox, nil)
		if err != nil || sel.uidValidity != uidValidity {
			return err // another UIDVALIDITY: a full resync is due, the ids are gone
		}
		for _, set := range batches(setOf(uids)) {
			if err := c.fetchBodies(ctx, set, want, out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// batchRanges bounds the ranges per command, keeping each command line
// (at most about 22 bytes per range) well under servers' line limits
// (Dovecot: 64 KiB). Contiguous UIDs are one range, so a whole folder
// usually goes in one command.
const batchRanges = 1000

// batches splits a set into sets of at most batchRanges ranges.
func batches(s uidSet) []uidSet {
	var out []uidSet
	for len(s) > batchRanges {
		out = append(out, s[:batchRanges])
		s = s[batchRanges:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

func (c *conn) fetchBodies(ctx context.Context, set uidSet, want map[uint32][]int, out []hub.Body) error {
	line := fmt.Sprintf("UID FETCH %s (UID BODY.PEEK[HEADER.FIELDS (%s %s Content-Type Content-Transfer-Encoding)] BODY.PEEK[TEXT])",
		set, hub.HeaderVersion, hub.HeaderChannel)
	return c.cmd(ctx, "fetch", line, func(r *response) error {
		if r.name != "FETCH" {
			return nil
		}
		f, err := parseFetch(r)
		if err != nil {
			return &hub.ProtocolError{Op: "fetch", Msg: "malformed FETCH response", Err: err}
		}
		idx, ok := want[f.uid]
		if !ok || !set.contains(f.uid) {
			return nil // unsolicited
		}
		if f.header == nil && f.text == nil && !f.tooLarge {
			return nil // a flag update, not our answer
		}
		b := decode(f)
		for _, i := range idx {
			b.ID = out[i].ID
			out[i] = b
		}
		return nil
	})
}

// decode applies §10.4 to one fetched message.
func decode(f fetched) hub.Body {
	var b hub.Body
	if f.tooLarge || len(f.text) >= hub.MaxMessage*4 {
		b.Err = fmt.Errorf("imaphub: UID %d: %w", f.uid, hub.ErrTooLarge)
		return b
	}
	h, err := hub.ParseHeader(f.header)
	if err != nil {
		b.Err = err
		return b
	}
	b.Channel = h.Get(hub.HeaderChannel)
	if err := hub.CheckVersion(h); err != nil {
		b.Err = err
		return b
	}
	if b.Channel == "" {
		b.Err = fmt.Errorf("%w: no %s header", hub.ErrNotEnvelope, hub.HeaderChannel)
		return b
	}
	b.Envelope, b.Err = hub.DecodeBody(h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"), f.text)
	return b
}
