package bip39

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// The BIP-39 reference vector for 32 bytes of 0x7f (trezor/python-mnemonic
// vectors.json, English).
func TestReferenceVector(t *testing.T) {
	var s [32]byte
	b, _ := hex.DecodeString(strings.Repeat("7f", 32))
	copy(s[:], b)
	want := "legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth title"
	if got := ToMnemonic(s); got != want {
		t.Fatalf("ToMnemonic = %q", got)
	}
	back, err := FromMnemonic("  " + strings.ReplaceAll(want, " ", "  ") + "\n")
	if err != nil || back != s {
		t.Fatalf("FromMnemonic: %x %v", back, err)
	}
}

func TestInvalid(t *testing.T) {
	good := ToMnemonic([32]byte{1, 2, 3})
	for _, m := range []string{
		"",
		strings.Join(strings.Fields(good)[:23], " "),
		strings.Replace(good, strings.Fields(good)[0], "notaword", 1),
		strings.Join(append(strings.Fields(good)[1:], strings.Fields(good)[0]), " "),
	} {
		if _, err := FromMnemonic(m); !errors.Is(err, ErrInvalid) {
			t.Errorf("FromMnemonic(%q) = %v", m, err)
		}
	}
}

func FuzzFromMnemonic(f *testing.F) {
	f.Add(ToMnemonic([32]byte{9}))
	f.Fuzz(func(t *testing.T, m string) {
		s, err := FromMnemonic(m)
		if err == nil && FromMnemonicMust(t, ToMnemonic(s)) != s {
			t.Fatal("round trip")
		}
	})
}

func FromMnemonicMust(t *testing.T, m string) [32]byte {
	s, err := FromMnemonic(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
