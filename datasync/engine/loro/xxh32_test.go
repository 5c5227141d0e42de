package loro

import (
	"encoding/binary"
	"math/bits"
)

// xxh32 is xxHash32, which Loro uses for a blob's checksum (over the bytes
// after the 20-byte header, seed "LORO"); the fuzz target uses it to give
// mutated blobs a valid checksum so they reach Loro's decoder.
func xxh32(b []byte, seed uint32) uint32 {
	const p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	round := func(acc, in uint32) uint32 { return bits.RotateLeft32(acc+in*p2, 13) * p1 }
	n := uint32(len(b))
	var h uint32
	if len(b) >= 16 {
		v1, v2, v3, v4 := seed+p1+p2, seed+p2, seed, seed-p1
		for len(b) >= 16 {
			v1 = round(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = seed + p5
	}
	h += n
	for ; len(b) >= 4; b = b[4:] {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for ; len(b) > 0; b = b[1:] {
		h = bits.RotateLeft32(h+uint32(b[0])*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

// withChecksum returns a copy of a "loro" blob with its checksum fixed.
func withChecksum(b []byte) []byte {
	if len(b) < 20 || string(b[:4]) != "loro" {
		return b
	}
	out := append([]byte{}, b...)
	binary.LittleEndian.PutUint32(out[16:20], xxh32(out[20:], binary.LittleEndian.Uint32([]byte("LORO"))))
	return out
}
