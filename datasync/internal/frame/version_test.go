package frame

import (
	"errors"
	"strings"
	"testing"
)

// Issue 17 point 8: a v that is not a JSON integer is an unknown version
// (consumed silently, never acted on), not version 1 read from a string.
func TestNonIntegerVersionIsUnknown(t *testing.T) {
	for _, v := range []string{`"1"`, `1.0`, `1e0`, `-1`, `true`, `null`, `[1]`, `{"n":1}`, `18446744073709551616`} {
		w := Prefix + `{"v":` + v + `,"k":"need_snap","doc":"x"}`
		if _, err := Parse([]byte(w)); !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("v=%s: %v, want ErrUnknownVersion", v, err)
		}
	}
	if f, err := Parse([]byte(Prefix + `{"v":1,"k":"need_snap","doc":"x"}`)); err != nil || f.V != 1 {
		t.Fatalf("v=1: %v", err)
	}
}

// Marshal never writes a frame over the length bound: a need_snap whose
// name alone is longer is refused, with text naming the frame bound.
func TestMarshalRefusesOverLongFrame(t *testing.T) {
	_, err := Marshal(Frame{V: 1, Kind: KindNeedSnap, Doc: strings.Repeat("n", MaxFrameBytes)})
	var ob *OverBudgetError
	if !errors.As(err, &ob) || !ob.Frame || !strings.Contains(err.Error(), "frame bound") {
		t.Fatalf("over-long frame: %v", err)
	}
}
