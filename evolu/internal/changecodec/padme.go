package changecodec

import "math/bits"

// padmeLength is the PADMÉ padded length of n (Crypto.ts
// createPadmePaddedLength): at most 12% overhead, leaking O(log log n) bits.
func padmeLength(n int) int {
	if n <= 0 {
		return 0
	}
	e := 31 - bits.LeadingZeros32(uint32(n))
	s := 32 - bits.LeadingZeros32(uint32(e))
	z := max(0, e-s)
	mask := 1<<z - 1
	return (n + mask) &^ mask
}
