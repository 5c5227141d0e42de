package hub

import (
	"errors"
	"testing"
)

func TestCheckEnvelope(t *testing.T) {
	env := append([]byte("TNDM\x01\x01"), make([]byte, MinEnvelope-6)...)
	if err := checkEnvelope(env); err != nil {
		t.Fatal(err)
	}
	v2 := append([]byte(nil), env...)
	v2[4] = 2
	if err := checkEnvelope(v2); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("version 2: %v", err)
	}
	if err := checkEnvelope([]byte("TNDX\x01\x01")); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("bad magic: %v", err)
	}
	if err := checkEnvelope(env[:MinEnvelope-1]); !errors.Is(err, ErrNotEnvelope) {
		t.Errorf("short: %v", err)
	}
}
