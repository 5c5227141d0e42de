package protocol

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestNonNegativeIntEncoding(t *testing.T) {
	cases := []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0}},
		{1, []byte{1}},
		{127, []byte{127}},
		{128, []byte{128, 1}},
		{16383, []byte{255, 127}},
		{16384, []byte{128, 128, 1}},
		{MaxNonNegativeInt, []byte{255, 255, 255, 255, 255, 255, 255, 15}},
	}
	for _, c := range cases {
		got := AppendNonNegativeInt(nil, c.v)
		if !bytes.Equal(got, c.want) {
			t.Errorf("encode %d = %v, want %v", c.v, got, c.want)
		}
		d := decoder{b: got}
		v, err := d.nonNegativeInt()
		if err != nil || v != c.v || d.remaining() != 0 {
			t.Errorf("decode %v = %d, %v", got, v, err)
		}
	}
	for _, bad := range [][]byte{
		{},
		{128},
		{255, 255, 255, 255, 255, 255, 255, 255, 1}, // 9 bytes
		{255, 255, 255, 255, 255, 255, 255, 127},    // 2^56-1: not safe
	} {
		d := decoder{b: bad}
		if _, err := d.nonNegativeInt(); err == nil {
			t.Errorf("decode %v: no error", bad)
		}
	}
}

func TestTimestampBytes(t *testing.T) {
	ts := Timestamp{Millis: 0x0102030405, Counter: 0x0607, NodeID: NodeID{8, 9, 10, 11, 12, 13, 14, 15}}
	b := ts.Bytes()
	want := TimestampBytes{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if b != want {
		t.Fatalf("Bytes = %v", b)
	}
	if b.Timestamp() != ts {
		t.Fatalf("round trip = %v", b.Timestamp())
	}
	if ts.NodeID.String() != "08090a0b0c0d0e0f" {
		t.Fatalf("NodeID = %s", ts.NodeID)
	}
}

func TestOwnerIDText(t *testing.T) {
	var o OwnerID
	for i := range o {
		o[i] = byte(i * 17)
	}
	s := o.String()
	if len(s) != 22 {
		t.Fatalf("len %d", len(s))
	}
	p, err := ParseOwnerID(s)
	if err != nil || p != o {
		t.Fatalf("parse %q: %v %v", s, p, err)
	}
	for _, bad := range []string{"", "abc", s + "A", s[:21] + "B"} {
		if _, err := ParseOwnerID(bad); err == nil && bad != s {
			// s[:21]+"B" is non-canonical when the last char's low bits are set.
			if bad == s[:21]+"B" && s[21] == 'B' {
				continue
			}
			t.Errorf("ParseOwnerID(%q) accepted", bad)
		}
	}
}

func testTimestamp(r *rand.Rand) Timestamp {
	var n NodeID
	n[0] = byte(r.IntN(3))
	return Timestamp{Millis: uint64(1_700_000_000_000 + r.IntN(1000)), Counter: uint16(r.IntN(3)), NodeID: n}
}

func testChange(r *rand.Rand, n int) []byte {
	c := make([]byte, n)
	for i := range c {
		c[i] = byte(r.Uint32())
	}
	return c
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	owner := OwnerID{1, 2, 3}
	key := WriteKey{9, 9}
	m := &Message{
		Header:       Header{Version: Version, OwnerID: owner, Type: Request},
		HasWriteKey:  true,
		WriteKey:     key,
		Subscription: SubscriptionSubscribe,
	}
	var ts []TimestampBytes
	for range 50 {
		ts = append(ts, testTimestamp(r).Bytes())
	}
	sortTS(ts)
	for _, x := range ts {
		m.Messages = append(m.Messages, EncryptedMessage{Timestamp: x.Timestamp(), Change: testChange(r, 41+r.IntN(100))})
	}
	m.Ranges = []Range{
		{Type: RangeSkip, UpperBound: BoundAt(ts[3])},
		{Type: RangeFingerprint, UpperBound: BoundAt(ts[10]), Fingerprint: Fingerprint{1, 2, 3}},
		{Type: RangeTimestamps, UpperBound: BoundAt(ts[10]), Timestamps: ts[4:10]},
		{Type: RangeTimestamps, UpperBound: InfiniteUpperBound, Timestamps: []TimestampBytes{}},
	}
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, m)
	}
}

func sortTS(ts []TimestampBytes) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Compare(ts[j-1]) < 0; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	owner := OwnerID{7}
	hdr := func(typ byte, rest ...byte) []byte {
		b := append([]byte{1}, owner[:]...)
		return append(append(b, typ), rest...)
	}
	change := make([]byte, 41)
	okReq := func(changeLen int) []byte {
		b := hdr(0, 1)
		b = append(b, make([]byte, 16)...)
		b = append(b, 0)
		b = append(b, 1, 5, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 1) // one timestamp
		b = AppendNonNegativeInt(b, uint64(changeLen))
		return append(b, change[:changeLen]...)
	}
	if _, err := Decode(okReq(41)); err != nil {
		t.Fatalf("valid request rejected: %v", err)
	}
	// Two ranges whose first bound (millis 10, counter 5) is after the second
	// (millis 10, counter 1) are decreasing.
	decreasing := hdr(2, 0, 3, 10, 0, 5, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 0, 0)
	cases := map[string][]byte{
		"empty":               {},
		"truncated owner":     {1, 2, 3},
		"bad message type":    hdr(3, 0),
		"bad hasWriteKey":     hdr(0, 2, 0, 0),
		"bad subscription":    hdr(0, 0, 3, 0),
		"bad error code":      hdr(1, 5, 0),
		"short change":        okReq(40),
		"missing messages":    hdr(2),
		"trailing bytes":      append(hdr(2, 0), 0, 9),
		"zero run length":     hdr(2, 1, 5, 0, 0),
		"long run length":     hdr(2, 1, 5, 0, 2),
		"counter too large":   hdr(2, 1, 5, 0x80, 0x80, 0x04, 1),
		"bad range type":      hdr(2, 0, 1, 3),
		"decreasing bounds":   decreasing,
		"huge count":          hdr(2, 0xff, 0xff, 0x7f),
		"truncated fp":        hdr(2, 0, 1, 1, 1, 2, 3),
		"unterminated varint": hdr(2, 0x80),
	}
	for name, b := range cases {
		_, err := Decode(b)
		if !errors.Is(err, ErrInvalidData) {
			t.Errorf("%s: err = %v, want ErrInvalidData", name, err)
		}
	}
	// A broadcast may carry a short change: client storage skips it.
	b := hdr(2, 1, 5, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 0xaa)
	if _, err := Decode(b); err != nil {
		t.Errorf("broadcast with short change: %v", err)
	}
}

func TestVersionMismatch(t *testing.T) {
	owner := OwnerID{3}
	req := append([]byte{2}, owner[:]...)
	req = append(req, 0xff, 0xff) // unknown layout after the prefix
	st := NewMemoryStorage()
	out, err := ApplyAsRelay(context.Background(), st, req, RelayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, VersionMismatchReply(owner)) {
		t.Fatalf("reply %v", out)
	}
	var ve *VersionError
	_, err = ApplyAsClient(context.Background(), st, req[:17], ClientOptions{})
	if !errors.As(err, &ve) || ve.Version != 2 || !ve.IsInitiator || ve.OwnerID != owner {
		t.Fatalf("client: %v", err)
	}
	h, err := ParseHeader(req[:17])
	if err != nil || h.Version != 2 || h.OwnerID != owner {
		t.Fatalf("ParseHeader: %+v %v", h, err)
	}
}

func TestBalancedBuckets(t *testing.T) {
	if _, ok := balancedBuckets(31); ok {
		t.Fatal("31 items split")
	}
	b, ok := balancedBuckets(35)
	if !ok || len(b) != 16 || b[0] != 3 || b[1] != 6 || b[2] != 9 || b[3] != 11 || b[15] != 35 {
		t.Fatalf("buckets(35) = %v", b)
	}
}
