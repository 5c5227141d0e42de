package imaphub

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// The response reader: just enough of RFC 9051 §7 and §9 (formal syntax)
// for the commands this package sends. A response is one line that may
// carry literals ({n} CRLF then n bytes) in the middle.
//
//	response  = "+" SP text CRLF                         ; continuation
//	          / ("*" / tag) SP status [SP "[" code "]"] SP text CRLF
//	          / "*" SP [number SP] name *(SP value) CRLF
//	value     = atom / quoted / literal / "(" [value *(SP value)] ")"
//
// An atom runs to a space, parenthesis or line end, except that a "[" in it
// runs to its matching "]", so BODY[HEADER.FIELDS (X)] is one atom.

// Limits on what a server may send. A line longer than maxLine, or a
// literal longer than maxLiteral, is a protocol error; a message literal
// over hub.MaxMessage is read past and reported per message (fetch.go).
const (
	maxLine    = 1 << 20
	maxLiteral = 4 << 20 // a 1 MiB message may grow in UTF-16 and base64
	maxDepth   = 16
)

// response is one server response.
type response struct {
	tag    string // "*", "+", or a command tag
	status string // OK, NO, BAD, BYE, PREAUTH; "" for data
	code   string // the response code inside [ ], if any
	text   string // human-readable text of a status or continuation
	num    uint32 // the number before name (EXISTS, EXPUNGE, FETCH)
	hasNum bool
	name   string // upper-cased data name: FETCH, SEARCH, VANISHED, …
	args   []any  // values after name: atom, []byte (quoted, literal), []any (list)
	// A FETCH response's items are in fetch instead of args; fetchErr says
	// why they do not make a FETCH answer (fetch.go).
	fetch    fetched
	fetchErr error
}

// atom is an unquoted token; nil is NIL.
type atom string

// errTruncated marks a response cut off by the end of the stream.
var errTruncated = errors.New("response truncated")

type reader struct {
	r *bufio.Reader
	// seg is the unread rest of the current line segment: the bytes up to
	// and including the next LF. Literals are read from r only when seg is
	// empty, which it is right after a literal's "{n}" CRLF.
	seg  []byte
	long []byte // holds a segment longer than r's buffer
	n    int    // bytes of the current response outside literals
	// generic makes FETCH responses be read like any other, into args (for
	// tests that compare the two readings).
	generic bool
	// arena holds the current response's small literals. A literal is
	// valid until the next readResponse: handlers copy what they keep.
	arena []byte
}

const (
	arenaLiteral = 256 << 10 // larger literals get their own allocation
	arenaSize    = 1 << 20
)

// literalBuf returns n bytes for a literal of the current response.
func (rd *reader) literalBuf(n int) []byte {
	if n > arenaLiteral {
		return make([]byte, n)
	}
	if cap(rd.arena)-len(rd.arena) < n {
		rd.arena = make([]byte, 0, arenaSize) // earlier slices stay valid
	}
	start := len(rd.arena)
	rd.arena = rd.arena[:start+n]
	return rd.arena[start : start+n : start+n]
}

// tooLarge stands for a literal over maxLiteral that was read past.
type tooLarge int64

// fill reads the next line segment when seg is used up.
func (rd *reader) fill() error {
	if len(rd.seg) > 0 {
		return nil
	}
	s, err := rd.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		rd.long = append(rd.long[:0], s...)
		for err == bufio.ErrBufferFull && len(rd.long) <= maxLine {
			s, err = rd.r.ReadSlice('\n')
			rd.long = append(rd.long, s...)
		}
		s = rd.long
	}
	rd.n += len(s)
	if rd.n > maxLine {
		return fmt.Errorf("response line longer than %d bytes", maxLine)
	}
	if len(s) == 0 {
		if err == io.EOF || err == nil {
			return errTruncated
		}
		return err
	}
	rd.seg = s // a partial segment at EOF ends in errTruncated later
	return nil
}

func (rd *reader) byte() (byte, error) {
	if err := rd.fill(); err != nil {
		return 0, err
	}
	c := rd.seg[0]
	rd.seg = rd.seg[1:]
	return c, nil
}

func (rd *reader) peek() (byte, error) {
	if err := rd.fill(); err != nil {
		return 0, err
	}
	return rd.seg[0], nil
}

// readResponse reads one whole response. A FETCH response's items are
// read straight into resp.fetch (fetchItems), without the generic value
// tree, since a sync reads thousands of them.
func (rd *reader) readResponse() (*response, error) {
	rd.n = 0
	rd.arena = rd.arena[:0]
	tagb, err := rd.word()
	if err != nil {
		return nil, err
	}
	resp := &response{tag: knownTag(tagb)}
	if resp.tag == "+" {
		resp.text, err = rd.restOfLine()
		return resp, err
	}
	if resp.tag == "" {
		return nil, errors.New("response without a tag")
	}
	name, err := rd.word()
	if err != nil {
		return nil, err
	}
	if n, ok := parseUint32(name); ok && resp.tag == "*" {
		resp.num, resp.hasNum = n, true
		if name, err = rd.word(); err != nil {
			return nil, err
		}
	}
	up := upperName(name)
	switch up {
	case "OK", "NO", "BAD", "BYE", "PREAUTH":
		if resp.hasNum {
			return nil, fmt.Errorf("status %s after a number", up)
		}
		resp.status = up
		return resp, rd.statusText(resp)
	}
	if resp.tag != "*" {
		return nil, fmt.Errorf("tagged response %q without a status", resp.tag)
	}
	resp.name = up
	if up == "FETCH" && !rd.generic {
		return resp, rd.fetchResponse(resp)
	}
	resp.args, err = rd.values(0, false)
	return resp, err
}

// word reads up to the next space (consumed) or line end (not consumed).
// The bytes are valid until the next read.
func (rd *reader) word() ([]byte, error) {
	if err := rd.fill(); err != nil {
		return nil, err
	}
	// A word never spans segments: a segment ends at a line end (or where
	// the stream ended).
	for i, c := range rd.seg {
		switch c {
		case ' ':
			w := rd.seg[:i]
			rd.seg = rd.seg[i+1:]
			return w, nil
		case '\r', '\n':
			w := rd.seg[:i]
			rd.seg = rd.seg[i:]
			return w, nil
		}
	}
	return nil, errTruncated
}

// knownTag returns a tag as a string, without allocating for "*" and "+".
func knownTag(b []byte) string {
	switch string(b) {
	case "*":
		return "*"
	case "+":
		return "+"
	}
	return string(b)
}

// upperName returns a response name in upper case, without allocating for
// the names this package reads.
func upperName(b []byte) string {
	for _, known := range [...]string{"FETCH", "OK", "NO", "BAD", "BYE", "PREAUTH", "EXISTS", "EXPUNGE",
		"RECENT", "FLAGS", "VANISHED", "SEARCH", "CAPABILITY", "ENABLED", "LIST", "NAMESPACE"} {
		if equalFold(b, known) {
			return known
		}
	}
	return strings.ToUpper(string(b))
}

// equalFold is strings.EqualFold for ASCII, without converting b.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if c|0x20 != s[i]|0x20 || (c|0x20 < 'a' || c|0x20 > 'z') && c != s[i] {
			return false
		}
	}
	return true
}

// parseUint32 is strconv.ParseUint(string(b), 10, 32) without the string.
func parseUint32(b []byte) (uint32, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > math.MaxUint32 {
			return 0, false
		}
	}
	return uint32(n), true
}

// restOfLine reads the rest of the line and its CRLF (a bare LF is accepted).
func (rd *reader) restOfLine() (string, error) {
	var b []byte
	for {
		c, err := rd.byte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return strings.TrimSuffix(string(b), "\r"), nil
		}
		b = append(b, c)
	}
}

func (rd *reader) statusText(resp *response) error {
	line, err := rd.restOfLine()
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "[") {
		end := strings.IndexByte(line, ']')
		if end < 0 {
			return fmt.Errorf("unterminated response code in %q", line)
		}
		resp.code = line[1:end]
		line = strings.TrimPrefix(line[end+1:], " ")
	}
	resp.text = line
	return nil
}

// values reads values up to the line end (top level) or a ")" (in a list).
func (rd *reader) values(depth int, inList bool) ([]any, error) {
	if depth > maxDepth {
		return nil, errors.New("lists nested too deeply")
	}
	var out []any
	for {
		end, err := rd.skipSpaces(inList)
		if err != nil || end {
			return out, err
		}
		v, err := rd.value(depth)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// skipSpaces skips spaces and reports whether the list (inList) or the
// line ends next; the ")" or the line end is consumed.
func (rd *reader) skipSpaces(inList bool) (end bool, err error) {
	for {
		c, err := rd.peek()
		if err != nil {
			return false, err
		}
		switch {
		case c == ' ':
			rd.byte()
		case c == '\r' || c == '\n':
			if inList {
				return false, errors.New("line ends inside a list")
			}
			_, err := rd.restOfLine()
			return true, err
		case c == ')':
			rd.byte()
			if !inList {
				return false, errors.New("unbalanced )")
			}
			return true, nil
		default:
			return false, nil
		}
	}
}

// value reads one value at a non-space byte inside a list of the given
// depth (0: the top level).
func (rd *reader) value(depth int) (any, error) {
	c, err := rd.peek()
	if err != nil {
		return nil, err
	}
	switch c {
	case '(':
		rd.byte()
		return rd.values(depth+1, true)
	case '"':
		return rd.quoted()
	case '{', '~':
		return rd.literal()
	}
	b, err := rd.atomBytes()
	return atom(b), err
}

func (rd *reader) quoted() ([]byte, error) {
	rd.byte()     // "
	b := []byte{} // "" is an empty string, not NIL
	for {
		c, err := rd.byte()
		if err != nil {
			return nil, err
		}
		switch c {
		case '"':
			return b, nil
		case '\\':
			if c, err = rd.byte(); err != nil {
				return nil, err
			}
		case '\r', '\n':
			return nil, errors.New("line ends inside a quoted string")
		}
		b = append(b, c)
	}
}

// atomBytes reads an atom; the bytes are valid until the next read.
func (rd *reader) atomBytes() ([]byte, error) {
	if err := rd.fill(); err != nil {
		return nil, err
	}
	// An atom never spans segments: it ends at the latest at the line end.
	depth := 0
	for i, c := range rd.seg {
		if c == '\r' || c == '\n' || depth == 0 && (c == ' ' || c == '(' || c == ')') {
			if depth != 0 {
				return nil, errors.New("unterminated [ in atom")
			}
			a := rd.seg[:i]
			rd.seg = rd.seg[i:]
			return a, nil
		}
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case '"', '{':
			if depth == 0 {
				return nil, fmt.Errorf("unexpected %q in atom", c)
			}
		}
	}
	return nil, errTruncated // a segment without its line end: the stream ended
}

// literal reads {n} CRLF and n bytes (or literal8, ~{n}). A literal over
// maxLiteral is read past and returned as tooLarge.
func (rd *reader) literal() (any, error) {
	b, large, err := rd.literalBytes()
	switch {
	case err != nil:
		return nil, err
	case large > 0:
		return large, nil
	}
	return b, nil
}

// literalBytes is literal without the interface: the bytes (in the
// response's arena), or the size of a literal over maxLiteral read past.
func (rd *reader) literalBytes() ([]byte, tooLarge, error) {
	if c, _ := rd.byte(); c == '~' {
		if c, _ = rd.byte(); c != '{' {
			return nil, 0, errors.New("malformed literal8")
		}
	}
	var n int64
	digits := 0
	for {
		c, err := rd.byte()
		if err != nil {
			return nil, 0, err
		}
		if c == '}' && digits > 0 {
			break
		}
		if c < '0' || c > '9' {
			return nil, 0, fmt.Errorf("malformed literal size: %q where a digit belongs", c)
		}
		if digits > 10 {
			return nil, 0, errors.New("malformed literal size: more than 11 digits")
		}
		n = n*10 + int64(c-'0')
		digits++
	}
	if c, err := rd.byte(); err != nil || c != '\r' {
		return nil, 0, errors.New("literal size not followed by CRLF")
	}
	if c, err := rd.byte(); err != nil || c != '\n' {
		return nil, 0, errors.New("literal size not followed by CRLF")
	}
	if len(rd.seg) != 0 {
		return nil, 0, errors.New("literal size not followed by CRLF")
	}
	if n > maxLiteral {
		if _, err := io.CopyN(io.Discard, rd.r, n); err != nil {
			return nil, 0, fmt.Errorf("literal of %d bytes: %w", n, errTruncated)
		}
		return nil, tooLarge(n), nil
	}
	b := rd.literalBuf(int(n))
	if _, err := io.ReadFull(rd.r, b); err != nil {
		return nil, 0, fmt.Errorf("literal of %d bytes: %w", n, errTruncated)
	}
	return b, 0, nil
}

// str returns v as a string when it is an atom or a string.
func str(v any) (string, bool) {
	switch v := v.(type) {
	case atom:
		return string(v), true
	case []byte:
		return string(v), true
	}
	return "", false
}

// number returns v as a uint32 when it is an atom of digits.
func number(v any) (uint32, bool) {
	a, ok := v.(atom)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(a), 10, 32)
	return uint32(n), err == nil
}

// quote returns s as an IMAP quoted string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
