package imaphub

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
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
		gen := reader{r: bufio.NewReader(bytes.NewReader(b)), generic: true}
		for range 20 {
			r, err := rd.readResponse()
			g, gerr := gen.readResponse()
			if (err == nil) != (gerr == nil) {
				t.Fatalf("FETCH reader: %v; generic reader: %v", err, gerr)
			}
			if err != nil {
				return
			}
			switch r.name {
			case "FETCH":
				f, ferr := parseFetch(r)
				want, werr := parseFetchGeneric(g)
				if (ferr == nil) != (werr == nil) {
					t.Fatalf("FETCH items: %v; generic: %v", ferr, werr)
				}
				if ferr == nil && (f.uid != want.uid || f.tooLarge != want.tooLarge ||
					!bytes.Equal(f.header, want.header) || !bytes.Equal(f.text, want.text) ||
					(f.header == nil) != (want.header == nil) || (f.text == nil) != (want.text == nil)) {
					t.Fatalf("FETCH items %+v; generic %+v", f, want)
				}
			case "VANISHED":
				parseVanished(r)
			}
		}
	})
}

// parseFetchGeneric reads the FETCH items from the generic value tree
// (the reader's first way of reading them): the reference for the
// FETCH reader.
func parseFetchGeneric(r *response) (fetched, error) {
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
		// IMAP names are case-insensitive in ASCII only (RFC 9051 §9).
		key := strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, string(name))
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
			continue
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

// FuzzDecodeCursor: a cursor is accepted only if it encodes back to the
// same bytes (a cursor of the first layout, "imap1", to the same fields
// with no identity); anything else is ErrBadCursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Add([]byte(cursor{uidValidity: 3, modSeq: 9, lastUID: 20, known: setOf([]uint32{1, 2, 3, 7, 20})}.encode()))
	f.Add([]byte(cursor{uidValidity: 1}.encode()))
	f.Add([]byte(cursor{identity: folderIdentity("h:1", "u", "Tandem"), mailboxID: "F1a2b", uidValidity: 5, lastUID: 2, known: setOf([]uint32{2})}.encode()))
	v1 := append([]byte(cursorMagicV1), 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3)
	f.Add(v1)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCursor(b)
		if err != nil {
			if !errors.Is(err, hub.ErrBadCursor) {
				t.Fatalf("error %v is not ErrBadCursor", err)
			}
			return
		}
		if bytes.HasPrefix(b, []byte(cursorMagicV1)) {
			if c.identity != ([16]byte{}) || c.mailboxID != "" {
				t.Fatalf("a first-layout cursor %x has an identity", b)
			}
			if !bytes.Equal(b[len(cursorMagicV1):], c.encode()[len(cursorMagic)+17:]) {
				t.Fatalf("first-layout cursor %x re-encodes as %x", b, c.encode())
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

func TestEqualFold(t *testing.T) {
	for _, a := range []string{"", "uid", "UID", "Uid", "body[text]", "BODY[TEXT]", "BODY{TEXT}", "bODY[tEXT]", "@", "`", "[", "{", "nil", "NIL", "NI", "ni\x00"} {
		for _, b := range []string{"UID", "BODY[TEXT]", "NIL", "@", "[", ""} {
			if got, want := equalFold([]byte(a), b), strings.EqualFold(a, b); got != want {
				t.Errorf("equalFold(%q, %q) = %v, want %v", a, b, got, want)
			}
		}
	}
}
