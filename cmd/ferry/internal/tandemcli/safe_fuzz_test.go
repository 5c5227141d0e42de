package tandemcli

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// FuzzSafeWriter: whatever a member wrote, split anywhere between two
// writes, what reaches the terminal is valid UTF-8 without a character
// that could take it over (newlines and tabs aside), and disp of the same
// text is one line.
func FuzzSafeWriter(f *testing.F) {
	f.Add([]byte("\x1b[31mRed\x1b[0m\nFAKE\u202e\u2066x\u2069"), 3)
	f.Add([]byte("Caf\u00e9 \xff\xfe \u0085"), 4)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		if cut < 0 || cut > len(b) {
			cut = len(b) / 2
		}
		var out bytes.Buffer
		w := newSafeWriter(&out)
		w.Write(b[:cut])
		w.Write(b[cut:])
		w.Write([]byte("\n")) // ends any pending partial sequence
		got := out.String()
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 out: %q", got)
		}
		for _, r := range got {
			if unsafeRune(r) && r != '\n' && r != '\t' {
				t.Fatalf("%U reaches the terminal: %q", r, got)
			}
		}
		if d := disp(string(b)); !utf8.ValidString(d) || bytes.ContainsAny([]byte(d), "\n\r\t\x1b") {
			t.Fatalf("disp(%q) = %q", b, d)
		}
		if isPlain(string(b), true) && got != string(b)+"\n" {
			t.Fatalf("plain text changed: %q -> %q", b, got)
		}
	})
}
