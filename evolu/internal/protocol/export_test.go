package protocol

// Test-only views of the unexported decoder, for the vector tests of package
// protocol_test (which use evolu/internal/vectors and so cannot be package
// protocol: that package imports this one).

// DecodeNonNegativeInt decodes a NonNegativeInt from the front of b and
// returns it with the bytes after it.
func DecodeNonNegativeInt(b []byte) (uint64, []byte, error) {
	d := decoder{b: b}
	v, err := d.nonNegativeInt()
	return v, d.b, err
}

// DecodeTimestamps decodes an encoded TimestampsBuffer (count, then the
// timestamps) and returns them with the number of bytes left over.
func DecodeTimestamps(b []byte) ([]Timestamp, int, error) {
	d := decoder{b: b}
	n, err := d.nonNegativeInt()
	if err != nil {
		return nil, 0, err
	}
	ts, err := d.timestamps(n)
	return ts, d.remaining(), err
}

// WithRelayVersion makes a relay that speaks protocol version v, to test
// version mismatch.
func WithRelayVersion(o RelayOptions, v uint64) RelayOptions {
	o.version = v
	return o
}

// WithBufferVersion makes a buffer of protocol version v.
func WithBufferVersion(o BufferOptions, v uint64) BufferOptions {
	o.version = v
	return o
}
