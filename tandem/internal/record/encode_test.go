package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// signedState returns a small state with conflicts, a set, a tombstone and
// two epochs, all signed.
func signedState(t testing.TB) *State {
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	b.recv(a.do(assign(r1, "title", "milk")))
	a.recv(b.do(assign(r1, "title", "bread")))
	a.do(add(r1, "tags", "x"))
	a.do(remove(r1, "tags", "y"))
	a.do(assign(recID(2), "title", "gone"))
	a.do(del(recID(2)))
	a.enter(2)
	a.do(assign(recID(3), "n", "1"))
	a.recv(b.do(assign(r1, "title", "concurrent")))
	return a.s
}

func TestEncodeRoundTrip(t *testing.T) {
	s := signedState(t)
	b := encode(t, s)
	got, err := DecodeState(b, testValidator())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encode(t, got), b) {
		t.Fatal("round trip changed the bytes")
	}
	shown := 0 // the encoding holds what each record shows (Writes)
	for id := range s.Records() {
		shown += len(s.Writes(id))
	}
	if got.Len() != shown || s.Len() != shown+1 || got.NumRecords() != 3 || !got.Deleted(recID(2)) {
		t.Fatal("decoded state differs")
	}
	empty, err := DecodeState(encode(t, NewState(testValidator())), testValidator())
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty state: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	s := signedState(t)
	good := encode(t, s)
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 1; return b }
	// Find the first write's offset: magic, count, record ID, write count.
	first := 4 + 4 + 16 + 4
	cases := map[string][]byte{
		"empty":           nil,
		"bad magic":       flip(0),
		"truncated":       good[:len(good)-1],
		"trailing":        append(bytes.Clone(good), 0),
		"record count up": func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b[4:], 4); return b }(),
		"record count 0":  func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b[4:], 0); return b }(),
		"signature byte":  flip(len(good) - 1),
		"huge length":     func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b[first+8:], 0xffffffff); return b }(),
	}
	// A state listing a superseded write next to the write that replaced it.
	a, b := newPeer(t, 0, 1, 1), newPeer(t, 1, 2, 1)
	old := a.do(assign(r1, "t", "old"))
	b.recv(old)
	nw := b.do(assign(r1, "t", "new"))
	st := NewState(testValidator())
	st.Add(old)
	enc := encode(t, st)
	st2 := NewState(testValidator())
	st2.Add(nw)
	enc2 := encode(t, st2)
	both := append(bytes.Clone(enc[:24]), 0, 0, 0, 2)
	both = append(both, enc[28:]...)
	both = append(both, enc2[28:]...)
	cases["superseded write listed"] = both
	cases["write listed twice"] = append(append(append(bytes.Clone(enc[:24]), 0, 0, 0, 2), enc[28:]...), enc[28:]...)
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeState(in, testValidator()); err == nil {
				t.Fatal("accepted")
			} else if !errors.Is(err, ErrEncoding) && !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
				t.Logf("error: %v", err)
			}
		})
	}
}

// FuzzDecodeState: decoding arbitrary bytes never panics, and whatever it
// accepts encodes back to exactly the same bytes.
func FuzzDecodeState(f *testing.F) {
	f.Add(encode(f, signedState(f)))
	f.Add(encode(f, NewState(testValidator())))
	f.Add([]byte("TRS1\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b, testValidator())
		if err != nil {
			return
		}
		if !bytes.Equal(encode(t, s), b) {
			t.Fatal("accepted bytes are not canonical")
		}
	})
}
