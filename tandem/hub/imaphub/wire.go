package imaphub

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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

// readResponse reads one whole response.
func (rd *reader) readResponse() (*response, error) {
	rd.n = 0
	rd.arena = rd.arena[:0]
	tag, err := rd.word()
	if err != nil {
		return nil, err
	}
	resp := &response{tag: tag}
	if tag == "+" {
		resp.text, err = rd.restOfLine()
		return resp, err
	}
	if tag == "" {
		return nil, errors.New("response without a tag")
	}
	name, err := rd.word()
	if err != nil {
		return nil, err
	}
	if n, perr := strconv.ParseUint(name, 10, 32); perr == nil && tag == "*" {
		resp.num, resp.hasNum = uint32(n), true
		if name, err = rd.word(); err != nil {
			return nil, err
		}
	}
	up := strings.ToUpper(name)
	switch up {
	case "OK", "NO", "BAD", "BYE", "PREAUTH":
		if resp.hasNum {
			return nil, fmt.Errorf("status %s after a number", up)
		}
		resp.status = up
		return resp, rd.statusText(resp)
	}
	if tag != "*" {
		return nil, fmt.Errorf("tagged response %q without a status", tag)
	}
	resp.name = up
	resp.args, err = rd.values(0, false)
	return resp, err
}

// word reads up to the next space (consumed) or line end (not consumed).
func (rd *reader) word() (string, error) {
	var b []byte
	for {
		c, err := rd.peek()
		if err != nil {
			return "", err
		}
		if c == '\r' || c == '\n' {
			return string(b), nil
		}
		rd.byte()
		if c == ' ' {
			return string(b), nil
		}
		b = append(b, c)
	}
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
		c, err := rd.peek()
		if err != nil {
			return nil, err
		}
		switch {
		case c == ' ':
			rd.byte()
		case c == '\r' || c == '\n':
			if inList {
				return nil, errors.New("line ends inside a list")
			}
			if _, err := rd.restOfLine(); err != nil {
				return nil, err
			}
			return out, nil
		case c == ')':
			rd.byte()
			if !inList {
				return nil, errors.New("unbalanced )")
			}
			return out, nil
		case c == '(':
			rd.byte()
			l, err := rd.values(depth+1, true)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		case c == '"':
			s, err := rd.quoted()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		case c == '{' || c == '~':
			v, err := rd.literal()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			a, err := rd.atom()
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
}

func (rd *reader) quoted() ([]byte, error) {
	rd.byte() // "
	var b []byte
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

func (rd *reader) atom() (atom, error) {
	if err := rd.fill(); err != nil {
		return "", err
	}
	// An atom never spans segments: it ends at the latest at the line end.
	depth := 0
	for i, c := range rd.seg {
		if c == '\r' || c == '\n' || depth == 0 && (c == ' ' || c == '(' || c == ')') {
			if depth != 0 {
				return "", errors.New("unterminated [ in atom")
			}
			a := atom(rd.seg[:i])
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
				return "", fmt.Errorf("unexpected %q in atom", c)
			}
		}
	}
	return "", errTruncated // a segment without its line end: the stream ended
}

// literal reads {n} CRLF and n bytes (or literal8, ~{n}). A literal over
// maxLiteral is read past and returned as tooLarge.
func (rd *reader) literal() (any, error) {
	if c, _ := rd.byte(); c == '~' {
		if c, _ = rd.byte(); c != '{' {
			return nil, errors.New("malformed literal8")
		}
	}
	var digits []byte
	for {
		c, err := rd.byte()
		if err != nil {
			return nil, err
		}
		if c == '}' {
			break
		}
		if c < '0' || c > '9' || len(digits) > 10 {
			return nil, fmt.Errorf("malformed literal size %q", append(digits, c))
		}
		digits = append(digits, c)
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("malformed literal size %q", digits)
	}
	if c, err := rd.byte(); err != nil || c != '\r' {
		return nil, errors.New("literal size not followed by CRLF")
	}
	if c, err := rd.byte(); err != nil || c != '\n' {
		return nil, errors.New("literal size not followed by CRLF")
	}
	if len(rd.seg) != 0 {
		return nil, errors.New("literal size not followed by CRLF")
	}
	if n > maxLiteral {
		if _, err := io.CopyN(io.Discard, rd.r, n); err != nil {
			return nil, fmt.Errorf("literal of %d bytes: %w", n, errTruncated)
		}
		return tooLarge(n), nil
	}
	b := rd.literalBuf(int(n))
	if _, err := io.ReadFull(rd.r, b); err != nil {
		return nil, fmt.Errorf("literal of %d bytes: %w", n, errTruncated)
	}
	return b, nil
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
