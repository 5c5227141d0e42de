package imaphub

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/hub"
)

// FuzzReadResponse: any bytes a server sends are read as responses or give
// an error, never a panic, and parseFetch/parseVanished accept or reject
// what the reader produced without panicking.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"* OK [UIDVALIDITY 7] ok\r\n",
		"* 3 FETCH (UID 9 BODY[HEADER.FIELDS (TANDEM-CHANNEL)] {5}\r\nabcde BODY[TEXT] \"x\\\"y\")\r\n",
		"* VANISHED (EARLIER) 1:3,5\r\n",
		"* NAMESPACE ((\"INBOX.\" \".\")) NIL NIL\r\n",
		"t1 OK [APPENDUID 1 2] done\r\n",
		"+ idling\r\n",
		"* SEARCH 1 2 3\r\n",
		"* 1 FETCH (UID 1 BODY[TEXT] ~{3}\r\nabc)\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := reader{r: bufio.NewReader(bytes.NewReader(b))}
		for range 20 {
			r, err := rd.readResponse()
			if err != nil {
				return
			}
			switch r.name {
			case "FETCH":
				parseFetch(r)
			case "VANISHED":
				parseVanished(r)
			}
		}
	})
}

// FuzzDecodeCursor: a cursor is accepted only if it encodes back to the
// same bytes; anything else is ErrBadCursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Add([]byte(cursor{uidValidity: 3, modSeq: 9, lastUID: 20, known: setOf([]uint32{1, 2, 3, 7, 20})}.encode()))
	f.Add([]byte(cursor{uidValidity: 1}.encode()))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCursor(b)
		if err != nil {
			if !errors.Is(err, hub.ErrBadCursor) {
				t.Fatalf("error %v is not ErrBadCursor", err)
			}
			return
		}
		if !bytes.Equal(c.encode(), b) {
			t.Fatalf("cursor %x re-encodes as %x", b, c.encode())
		}
	})
}

func TestUIDSet(t *testing.T) {
	s := setOf([]uint32{5, 1, 2, 3, 9, 10, 3, 4294967295})
	if got := s.String(); got != "1:3,5,9:10,4294967295" {
		t.Fatalf("String = %q", got)
	}
	p, err := parseSet("10:9,1:3,5,4294967295,2")
	if err != nil || p.String() != s.String() {
		t.Fatalf("parseSet = %v, %v", p, err)
	}
	for _, bad := range []string{"", "0", "1:", "a", "1,,2", "4294967296", "*"} {
		if _, err := parseSet(bad); err == nil {
			t.Errorf("parseSet(%q) accepted", bad)
		}
	}
	if !s.contains(10) || s.contains(4) || s.count() != 7 {
		t.Fatalf("contains/count wrong for %v", s)
	}
}

func TestBatches(t *testing.T) {
	var uids []uint32
	for i := range 2500 {
		uids = append(uids, uint32(2*i+1)) // 2,500 one-UID ranges
	}
	bs := batches(setOf(uids))
	total := 0
	for _, b := range bs {
		if len(b) > batchRanges {
			t.Fatalf("batch of %d ranges", len(b))
		}
		total += b.count()
	}
	if len(bs) != 3 || total != 2500 {
		t.Fatalf("%d batches with %d UIDs", len(bs), total)
	}
	if got := batches(setOf([]uint32{1, 2, 3})); len(got) != 1 || got[0].String() != "1:3" {
		t.Fatalf("contiguous: %v", got)
	}
}
