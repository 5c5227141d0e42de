package jsonstr

import "testing"

func TestLenIsAppendLen(t *testing.T) {
	for _, s := range []string{"", "plain", `"\`, "\x00\x01\x1f\b\f\n\r\t", "é<>&\u2028", "a\"b\\c\x7f"} {
		if Len(s) != len(Append(nil, s)) {
			t.Fatalf("%q: Len %d, Append %d", s, Len(s), len(Append(nil, s)))
		}
	}
}

func FuzzLen(f *testing.F) {
	f.Add("x\"\n")
	f.Fuzz(func(t *testing.T, s string) {
		if Len(s) != len(Append(nil, s)) {
			t.Fatalf("%q", s)
		}
	})
}
