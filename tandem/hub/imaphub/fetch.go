package imaphub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// fetched is one FETCH response's items that this package asks for.
type fetched struct {
	uid      uint32
	size     int64  // RFC822.SIZE; 0 if absent
	header   []byte // BODY[HEADER.FIELDS (…)]; nil if absent or NIL
	text     []byte // BODY[TEXT]; nil if absent or NIL
	hasText  bool   // BODY[TEXT] was in the answer (maybe "": an empty body)
	tooLarge bool   // a literal was over maxLiteral
}

// parseFetch returns what the reader found in "* n FETCH (name value …)".
func parseFetch(r *response) (fetched, error) {
	return r.fetch, r.fetchErr
}

// fetchResponse reads the rest of a FETCH response (after "FETCH") into
// resp.fetch: the UID, BODY[HEADER.FIELDS …] and BODY[TEXT] items, with
// the literals in the reader's arena. Other items (FLAGS, MODSEQ, …) are
// read and dropped. A response that is well formed but not a FETCH answer
// of the expected shape sets resp.fetchErr and is still read to its end,
// so the connection stays usable; a malformed one is an error.
func (rd *reader) fetchResponse(resp *response) error {
	c, err := rd.peek()
	if err != nil {
		return err
	}
	if c != '(' {
		resp.fetchErr = errors.New("FETCH without one item list")
		_, err := rd.values(0, false)
		return err
	}
	rd.byte()
	if resp.fetchErr, err = rd.fetchItems(&resp.fetch); err != nil {
		return err
	}
	// Anything after the item list makes it not the one list.
	if rest, err := rd.values(0, false); err != nil {
		return err
	} else if len(rest) > 0 && resp.fetchErr == nil {
		resp.fetchErr = errors.New("FETCH without one item list")
	}
	if resp.fetchErr == nil && resp.fetch.uid == 0 {
		resp.fetchErr = errors.New("FETCH without UID")
	}
	return nil
}

// fetchItems reads name-value pairs up to the list's ")". The first
// problem with the items is returned as bad; the rest of the list is then
// read generically.
func (rd *reader) fetchItems(f *fetched) (bad, err error) {
	for {
		end, err := rd.skipSpaces(true)
		if err != nil || end {
			return nil, err
		}
		if c, _ := rd.peek(); c == '(' || c == '"' || c == '{' || c == '~' {
			v, err := rd.value(1)
			if err != nil {
				return nil, err
			}
			return rd.fetchRest(fmt.Errorf("FETCH item name %v", v))
		}
		name, err := rd.atomBytes()
		if err != nil {
			return nil, err
		}
		kind := fetchItemKind(name)
		if end, err := rd.skipSpaces(true); err != nil {
			return nil, err
		} else if end {
			return errors.New("FETCH items are not name-value pairs"), nil
		}
		if bad, err := rd.fetchValue(f, kind); err != nil || bad != nil {
			if err != nil {
				return nil, err
			}
			return rd.fetchRest(bad)
		}
	}
}

// fetchRest reads the rest of an item list after a problem.
func (rd *reader) fetchRest(bad error) (error, error) {
	if _, err := rd.values(1, true); err != nil {
		return nil, err
	}
	return bad, nil
}

// The FETCH items this package reads.
const (
	itemOther = iota
	itemUID
	itemHeader // BODY[HEADER.FIELDS (…)]
	itemText   // BODY[TEXT]
	itemSize   // RFC822.SIZE
)

func fetchItemKind(name []byte) int {
	const header = "BODY[HEADER.FIELDS"
	switch {
	case equalFold(name, "UID"):
		return itemUID
	case equalFold(name, "BODY[TEXT]"):
		return itemText
	case equalFold(name, "RFC822.SIZE"):
		return itemSize
	case len(name) >= len(header) && equalFold(name[:len(header)], header):
		return itemHeader
	}
	return itemOther
}

// fetchValue reads one item's value into f.
func (rd *reader) fetchValue(f *fetched, kind int) (bad, err error) {
	c, err := rd.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case kind == itemOther:
		_, err := rd.value(1)
		return nil, err
	case kind == itemUID || kind == itemSize:
		if c == '(' || c == '"' || c == '{' || c == '~' {
			v, err := rd.value(1)
			return fmt.Errorf("FETCH number %v", v), err
		}
		a, err := rd.atomBytes()
		if err != nil {
			return nil, err
		}
		n, ok := parseUint32(a)
		if kind == itemSize {
			if !ok {
				return fmt.Errorf("FETCH RFC822.SIZE %q", a), nil
			}
			f.size = int64(n)
			return nil, nil
		}
		if !ok || n == 0 {
			return fmt.Errorf("FETCH UID %q", a), nil
		}
		f.uid = n
		return nil, nil
	}
	target := &f.header
	if kind == itemText {
		target = &f.text
		f.hasText = c == '{' || c == '~' || c == '"'
	}
	switch c {
	case '{', '~':
		b, large, err := rd.literalBytes()
		if large > 0 {
			f.tooLarge = true
		} else {
			*target = b
		}
		return nil, err
	case '"':
		b, err := rd.quoted()
		*target = b
		return nil, err
	case '(':
		_, err := rd.value(1)
		return errors.New("FETCH body item is not a string"), err
	}
	a, err := rd.atomBytes()
	if err != nil {
		return nil, err
	}
	if !equalFold(a, "NIL") {
		return fmt.Errorf("FETCH body item is the atom %q", a), nil
	}
	return nil, nil
}

// Fetch implements hub.Store: UID FETCH (BODY.PEEK[HEADER.FIELDS
// (Content-Type Content-Transfer-Encoding …)] BODY.PEEK[TEXT]), then the
// three reading steps of §10.4. For messages whose header fields Changes
// has read (header.go) it asks for BODY.PEEK[TEXT] alone.
func (s *Store) Fetch(ctx context.Context, ids []hub.ID) ([]hub.Body, error) {
	out := make([]hub.Body, len(ids))
	w := wanted{answered: make([]bool, len(ids))}
	var uidValidity uint32
	for i, id := range ids {
		out[i].ID = id
		v, uid, ok := parseID(id)
		if !ok || (uidValidity != 0 && v != uidValidity) {
			continue // not an id of this folder's current UIDVALIDITY
		}
		uidValidity = v
		w.pos = append(w.pos, uidPos{uid, i})
	}
	defer func() {
		for i, ok := range w.answered {
			if !ok {
				out[i].Err = fmt.Errorf("imaphub: fetch %s: %w", out[i].ID, hub.ErrNotFound)
			}
		}
	}()
	if len(w.pos) == 0 {
		return out, nil
	}
	slices.SortFunc(w.pos, func(a, b uidPos) int { return cmp.Compare(a.uid, b.uid) })
	uids := make([]uint32, len(w.pos))
	for i, p := range w.pos {
		uids[i] = p.uid
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.run(ctx, func(c *conn) error {
		v, err := c.reselect(ctx, s.mailbox, uidValidity)
		if isNoFolder(err) {
			return nil // the folder is gone, and its messages with it
		}
		if err != nil || v != uidValidity {
			return err // another UIDVALIDITY: a full resync is due, the ids are gone
		}
		// Messages whose header fields Changes has read need BODY[TEXT]
		// alone (header.go); the others get the §10.3 command.
		var known, other []uint32
		for _, uid := range uids {
			if _, ok := s.headers.lookup(uidValidity, uid); ok {
				known = append(known, uid)
			} else {
				other = append(other, uid)
			}
		}
		for _, part := range []struct {
			uids  []uint32
			items string
		}{
			{known, "UID BODY.PEEK[TEXT]"},
			{other, fmt.Sprintf("UID BODY.PEEK[HEADER.FIELDS (%s)] BODY.PEEK[TEXT]", changesFields)},
		} {
			for _, set := range batches(setOf(part.uids)) {
				err := c.fetchBodies(ctx, set, part.items, &w, out, &s.headers, uidValidity)
				if _, no := refusal(err); no {
					// Cyrus answers NOOP fine but FETCH with NO once the
					// selected folder is deleted: is it still there?
					if _, serr := c.selectFolder(ctx, s.mailbox, nil); isNoFolder(serr) {
						return nil // gone, and its messages with it
					}
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// wanted maps the UIDs asked for to their indexes in Fetch's answer.
type wanted struct {
	pos      []uidPos // sorted by uid; an id asked for twice is there twice
	answered []bool   // by index
}

type uidPos struct {
	uid uint32
	i   int
}

// indexes returns the indexes that asked for uid.
func (w *wanted) indexes(uid uint32) []uidPos {
	lo, _ := slices.BinarySearchFunc(w.pos, uid, func(p uidPos, uid uint32) int { return cmp.Compare(p.uid, uid) })
	hi := lo
	for hi < len(w.pos) && w.pos[hi].uid == uid {
		hi++
	}
	return w.pos[lo:hi]
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

// fetchBodies runs UID FETCH set (items) and decodes each answer (§10.4)
// with the header fields in the answer, or else those hc holds.
func (c *conn) fetchBodies(ctx context.Context, set uidSet, items string, w *wanted, out []hub.Body, hc *headerCache, uidValidity uint32) error {
	line := fmt.Sprintf("UID FETCH %s (%s)", set, items)
	var memo headerMemo
	return c.cmd(ctx, "fetch", line, func(r *response) error {
		if r.name != "FETCH" {
			return nil
		}
		f, err := parseFetch(r)
		if err != nil {
			return &hub.ProtocolError{Op: "fetch", Msg: "malformed FETCH response", Err: err}
		}
		idx := w.indexes(f.uid)
		if len(idx) == 0 || !set.contains(f.uid) {
			return nil // unsolicited
		}
		if f.header == nil && !f.hasText && !f.tooLarge {
			return nil // a flag update, not our answer
		}
		hi, ok := hc.lookup(uidValidity, f.uid)
		if f.header != nil || !ok {
			hi, _ = memo.get(f.header)
		}
		b := decode(f, hi)
		for _, p := range idx {
			b.ID = out[p.i].ID
			out[p.i] = b
			w.answered[p.i] = true
		}
		return nil
	})
}
