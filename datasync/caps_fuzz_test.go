package datasync

import (
	"encoding/binary"
	"testing"
)

// FuzzParseCaps: any first message from a peer gives a capability list
// (bounded, without repeats, that re-encodes to an equivalent list) or an
// error, never a panic.
func FuzzParseCaps(f *testing.F) {
	f.Add([]byte{tagCaps, 1, 3})
	f.Add([]byte{tagCaps})
	f.Add([]byte{tagCaps, 0xff})
	f.Add([]byte("F{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		caps, err := parseCaps(b)
		if err != nil {
			return
		}
		if len(caps) > maxCaps {
			t.Fatalf("%d entries accepted", len(caps))
		}
		seen := map[uint64]bool{}
		msg := []byte{tagCaps}
		for _, e := range caps {
			if seen[e] {
				t.Fatalf("entry %d twice", e)
			}
			seen[e] = true
			msg = binary.AppendUvarint(msg, e)
		}
		again, err := parseCaps(msg)
		if err != nil || len(again) != len(caps) {
			t.Fatalf("re-encoded %v: %v, %v", caps, again, err)
		}
	})
}
