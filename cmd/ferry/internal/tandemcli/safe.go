package tandemcli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Text other members wrote (titles, values, tags, names, list names) is
// shown made safe for a terminal (docs/decisions/cli-safe-output.md):
// control characters and the characters that reorder text (bidi
// overrides, embeddings, isolates and marks) are shown as \uXXXX, invalid
// UTF-8 as U+FFFD. --json output keeps the exact values.

// unsafeRune reports whether r can move the cursor, change colours,
// break a line or reorder the text around it on a terminal.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1 (ESC, CSI, ...)
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // Arabic letter mark, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // embeddings, overrides, isolates
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// disp is s as one line, safe to show on a terminal: every unsafe rune
// (newlines and tabs too) as \uXXXX.
func disp(s string) string {
	if isPlain(s, false) {
		return s
	}
	return escape(s, false)
}

// isPlain reports whether s needs no escaping; keepNL allows \n and \t.
func isPlain(s string, keepNL bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) && !(keepNL && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}

func escape(s string, keepNL bool) string {
	var sb strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		switch {
		case r == utf8.RuneError && n == 1:
			sb.WriteRune(utf8.RuneError)
		case keepNL && (r == '\n' || r == '\t'):
			sb.WriteRune(r)
		case unsafeRune(r):
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// safeWriter is a terminal's writer for ferry's text output: whatever a
// format string missed (an escape sequence, a bidi override in a name)
// is escaped as disp does; newlines and tabs pass. In JSON output the
// same escapes are valid string escapes, so a decoder reads the exact
// value back. An incomplete UTF-8 sequence at the end of a Write waits
// for the next one.
type safeWriter struct {
	w       io.Writer
	pending []byte
}

func newSafeWriter(w io.Writer) io.Writer {
	if _, ok := w.(*safeWriter); ok {
		return w
	}
	return &safeWriter{w: w}
}

func (s *safeWriter) Write(p []byte) (int, error) {
	b := append(s.pending, p...)
	s.pending = nil
	if cut := incompleteTail(b); cut > 0 {
		s.pending = append([]byte(nil), b[len(b)-cut:]...)
		b = b[:len(b)-cut]
	}
	str := string(b)
	if !isPlain(str, true) {
		str = escape(str, true)
	}
	if _, err := io.WriteString(s.w, str); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fd lets isTerminal see the terminal behind the writer.
func (s *safeWriter) Fd() uintptr {
	if f, ok := s.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// incompleteTail is how many bytes at b's end start a UTF-8 sequence
// that is not complete yet (0 if none).
func incompleteTail(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// nameKey is the form two names are compared in: Unicode compatibility
// normalization (NFKC) and lower case, so that "Café" typed two ways, or
// "ﬁsh" and "fish", are the same name, and a reference to it is
// ambiguous unless given by ID.
func nameKey(s string) string {
	return strings.ToLower(norm.NFKC.String(s))
}

// shown is l with its names made safe to show (disp).
func (l listInfo) shown() listInfo {
	l.Name = disp(l.Name)
	l.Names = dispAll(l.Names)
	return l
}

// shown is it with everything members wrote made safe to show (disp).
func (it itemOut) shown() itemOut {
	it.Title = disp(it.Title)
	it.Tags = dispAll(it.Tags)
	fields := make(map[string]fieldOut, len(it.Fields))
	for n, f := range it.Fields {
		vs := make([]valueOut, len(f.Values))
		for i, v := range f.Values {
			vs[i] = valueOut{Value: disp(v.Value), Author: disp(v.Author), User: v.User, device: v.device}
		}
		f.Values, f.Elements = vs, dispAll(f.Elements)
		fields[disp(n)] = f
	}
	it.Fields = fields
	return it
}

func dispAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = disp(s)
	}
	return out
}
