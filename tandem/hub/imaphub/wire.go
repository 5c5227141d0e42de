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
	n int // bytes of the current response outside literals
}

// tooLarge stands for a literal over maxLiteral that was read past.
type tooLarge int64

func (rd *reader) byte() (byte, error) {
	c, err := rd.r.ReadByte()
	if err == io.EOF {
		return 0, errTruncated
	}
	if err != nil {
		return 0, err
	}
	if rd.n++; rd.n > maxLine {
		return 0, fmt.Errorf("response line longer than %d bytes", maxLine)
	}
	return c, nil
}

func (rd *reader) peek() (byte, error) {
	b, err := rd.r.Peek(1)
	if err == io.EOF {
		return 0, errTruncated
	}
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// readResponse reads one whole response.
func (rd *reader) readResponse() (*response, error) {
	rd.n = 0
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
	var b []byte
	depth := 0
	for {
		c, err := rd.peek()
		if err != nil {
			return "", err
		}
		if c == '\r' || c == '\n' || depth == 0 && (c == ' ' || c == '(' || c == ')') {
			if depth != 0 {
				return "", errors.New("unterminated [ in atom")
			}
			return atom(b), nil
		}
		rd.byte()
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
		b = append(b, c)
	}
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
	if n > maxLiteral {
		if _, err := io.CopyN(io.Discard, rd.r, n); err != nil {
			return nil, fmt.Errorf("literal of %d bytes: %w", n, errTruncated)
		}
		return tooLarge(n), nil
	}
	b := make([]byte, n)
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
