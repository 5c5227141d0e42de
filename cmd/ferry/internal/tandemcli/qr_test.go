package tandemcli

import (
	"bytes"
	"strings"
	"testing"

	"rsc.io/qr"
)

// TestQRMatchesEncoder: the terminal QR code, read back from its half
// blocks (top and bottom module of each character), is the encoder's
// matrix with a quiet zone: dark modules as spaces, light ones as blocks.
func TestQRMatchesEncoder(t *testing.T) {
	for _, text := range []string{`{"kind":"imap","host":"127.0.0.1","port":1143,"user":"trent","password":"pw","security":"none"}`, "https://ferry-sync.github.io/join#" + strings.Repeat("eyJi", 150)} {
		var buf bytes.Buffer
		printQR(&buf, text)
		code, err := qr.Encode(text, qr.L)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
		light := map[rune][2]bool{' ': {false, false}, '█': {true, true}, '▀': {true, false}, '▄': {false, true}}
		const quiet = 2
		size := code.Size + 2*quiet
		if len(lines) != (size+1)/2 {
			t.Fatalf("%d lines, want %d", len(lines), (size+1)/2)
		}
		for row, line := range lines {
			cells := []rune(line)
			if len(cells) != size {
				t.Fatalf("line %d has %d modules, want %d", row, len(cells), size)
			}
			for x, r := range cells {
				lt, ok := light[r]
				if !ok {
					t.Fatalf("unexpected character %q", r)
				}
				for half, y := range []int{2 * row, 2*row + 1} {
					if y >= size {
						continue
					}
					mx, my := x-quiet, y-quiet
					dark := mx >= 0 && my >= 0 && mx < code.Size && my < code.Size && code.Black(mx, my)
					if dark == lt[half] {
						t.Fatalf("module (%d,%d): terminal light=%v, encoder dark=%v", mx, my, lt[half], dark)
					}
				}
			}
		}
	}
}
