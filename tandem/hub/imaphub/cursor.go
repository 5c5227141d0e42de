package imaphub

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// cursor is the binding's position in the folder. Its serialized layout:
//
//	"imap1" (5) || u32 UIDVALIDITY || u64 HIGHESTMODSEQ (0: none)
//	|| u32 last UID seen || u32 n || n × (u32 first, u32 last)
//
// The ranges are the UIDs reported as added and not yet removed (the
// "local UID set" of §10.3), sorted, disjoint and at most the last UID. At
// Tandem's scale they are few: UIDs grow with appends, and gaps come only
// from destroyed messages.
type cursor struct {
	uidValidity uint32
	modSeq      uint64
	lastUID     uint32
	known       uidSet
}

const cursorMagic = "imap1"

func (c cursor) encode() hub.Cursor {
	b := make([]byte, 0, len(cursorMagic)+20+8*len(c.known))
	b = append(b, cursorMagic...)
	b = binary.BigEndian.AppendUint32(b, c.uidValidity)
	b = binary.BigEndian.AppendUint64(b, c.modSeq)
	b = binary.BigEndian.AppendUint32(b, c.lastUID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.known)))
	for _, r := range c.known {
		b = binary.BigEndian.AppendUint32(b, r.lo)
		b = binary.BigEndian.AppendUint32(b, r.hi)
	}
	return b
}

func decodeCursor(b hub.Cursor) (cursor, error) {
	bad := func(why string) (cursor, error) {
		return cursor{}, fmt.Errorf("imaphub: %w: %s", hub.ErrBadCursor, why)
	}
	const fixed = len(cursorMagic) + 20
	if len(b) < fixed || string(b[:len(cursorMagic)]) != cursorMagic {
		return bad("not an IMAP cursor")
	}
	c := cursor{
		uidValidity: binary.BigEndian.Uint32(b[5:]),
		modSeq:      binary.BigEndian.Uint64(b[9:]),
		lastUID:     binary.BigEndian.Uint32(b[17:]),
	}
	n := binary.BigEndian.Uint32(b[21:])
	if uint64(len(b)-fixed) != 8*uint64(n) {
		return bad("length does not match its range count")
	}
	if c.uidValidity == 0 {
		return bad("UIDVALIDITY 0")
	}
	prev := uint32(0)
	for i := 0; i < int(n); i++ {
		lo := binary.BigEndian.Uint32(b[fixed+8*i:])
		hi := binary.BigEndian.Uint32(b[fixed+8*i+4:])
		if lo == 0 || lo > hi || hi > c.lastUID || (i > 0 && uint64(lo) <= uint64(prev)+1) {
			return bad("ranges not sorted, disjoint and below the last UID")
		}
		c.known = append(c.known, uidRange{lo, hi})
		prev = hi
	}
	return c, nil
}

// makeID is a message id: "<UIDVALIDITY>.<UID>", so that ids of an earlier
// UIDVALIDITY never name a message of a later one.
func makeID(uidValidity, uid uint32) hub.ID {
	return hub.ID(strconv.FormatUint(uint64(uidValidity), 10) + "." + strconv.FormatUint(uint64(uid), 10))
}

func parseID(id hub.ID) (uidValidity, uid uint32, ok bool) {
	a, b, found := strings.Cut(string(id), ".")
	if !found {
		return 0, 0, false
	}
	v, err1 := strconv.ParseUint(a, 10, 32)
	u, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil || v == 0 || u == 0 {
		return 0, 0, false
	}
	return uint32(v), uint32(u), true
}
