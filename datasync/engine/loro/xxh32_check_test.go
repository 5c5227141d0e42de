package loro

import (
	"bytes"
	"testing"
)

// TestChecksumHelper: withChecksum reproduces the checksum of blobs Loro
// wrote, so the fuzz target's fixed-up blobs really pass the check.
func TestChecksumHelper(t *testing.T) {
	_, change, snap := filled(t)
	for _, b := range [][]byte{change, snap} {
		if got := withChecksum(b); !bytes.Equal(got, b) {
			t.Fatalf("checksum %x, Loro wrote %x", got[16:20], b[16:20])
		}
	}
}
