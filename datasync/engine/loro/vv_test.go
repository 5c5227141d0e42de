package loro

import (
	"reflect"
	"testing"
)

// TestDecodeVV: Loro's encoded version vectors (postcard: count, then peer
// varint and zigzag counter) decode strictly.
func TestDecodeVV(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want vv
	}{
		{nil, vv{}},
		{[]byte{0}, vv{}},
		{[]byte{1, 1, 2}, vv{1: 1}},
		{[]byte{2, 7, 6, 0x80, 0x01, 200, 1}, vv{7: 3, 128: 100}},
	} {
		got, err := decodeVV(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%x: %v %v, want %v", c.in, got, err, c.want)
		}
	}
	for name, in := range map[string][]byte{
		"truncated":      {1, 1},
		"trailing bytes": {1, 1, 2, 0},
		"duplicate peer": {2, 1, 2, 1, 4},
		"negative":       {1, 1, 1},
		"count too big":  {200, 1, 2},
		"counter > i32":  {1, 1, 0xff, 0xff, 0xff, 0xff, 0x7f},
	} {
		if _, err := decodeVV(in); err == nil {
			t.Errorf("%s (%x) decoded", name, in)
		}
	}
}
