package imaphub

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// cursor is the binding's position in the folder. Its serialized layout:
//
//	"imap2" (5) || identity (16) || u8 m || MAILBOXID (m bytes)
//	|| u32 UIDVALIDITY || u64 HIGHESTMODSEQ (0: none)
//	|| u32 last UID seen || u32 n || n × (u32 first, u32 last)
//
// identity names what the cursor counts: the server address, the user and
// the folder name (see folderIdentity); MAILBOXID is the folder's object id
// where the server offers OBJECTID (RFC 8474), "" elsewhere. Together with
// UIDVALIDITY they make a cursor saved on one account, server or folder
// useless on another: Changes then resyncs from nothing (hub.Changes.Reset).
// The ranges are the UIDs reported as added and not yet removed (the "local
// UID set" of §10.3), sorted, disjoint and at most the last UID. At Tandem's
// scale they are few: UIDs grow with appends, and gaps come only from
// destroyed messages. A cursor of the first layout ("imap1", no identity)
// is read as counting nothing known: a full resync.
// Decision: docs/decisions/tandem-hub-cursor-identity.md.
type cursor struct {
	identity    [16]byte
	mailboxID   string
	uidValidity uint32
	modSeq      uint64
	lastUID     uint32
	known       uidSet
}

const (
	cursorMagic   = "imap2"
	cursorMagicV1 = "imap1"
)

// folderIdentity is the identity a cursor carries: a hash of the server
// address (lower case), the user and the folder name.
func folderIdentity(addr, user, mailbox string) [16]byte {
	h := sha256.Sum256([]byte("imaphub cursor\x00" + strings.ToLower(addr) + "\x00" + user + "\x00" + mailbox))
	var id [16]byte
	copy(id[:], h[:])
	return id
}

func (c cursor) encode() hub.Cursor {
	b := make([]byte, 0, len(cursorMagic)+16+1+len(c.mailboxID)+20+8*len(c.known))
	b = append(b, cursorMagic...)
	b = append(b, c.identity[:]...)
	b = append(b, byte(len(c.mailboxID)))
	b = append(b, c.mailboxID...)
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
	var c cursor
	switch {
	case len(b) >= 5 && string(b[:5]) == cursorMagicV1:
		b = b[5:] // no identity: matches no folder
	case len(b) >= 5+16+1 && string(b[:5]) == cursorMagic:
		copy(c.identity[:], b[5:21])
		m := int(b[21])
		if len(b) < 22+m {
			return bad("truncated MAILBOXID")
		}
		c.mailboxID = string(b[22 : 22+m])
		b = b[22+m:]
	default:
		return bad("not an IMAP cursor")
	}
	const fixed = 20
	if len(b) < fixed {
		return bad("truncated")
	}
	c.uidValidity = binary.BigEndian.Uint32(b[0:])
	c.modSeq = binary.BigEndian.Uint64(b[4:])
	c.lastUID = binary.BigEndian.Uint32(b[12:])
	n := binary.BigEndian.Uint32(b[16:])
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
