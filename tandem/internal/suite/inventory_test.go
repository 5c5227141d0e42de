package suite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomInventory(r *rand.Rand) []InventoryEntry {
	es := make([]InventoryEntry, r.IntN(6))
	for i := range es {
		binary.BigEndian.PutUint64(es[i].Record[:], r.Uint64())
		binary.BigEndian.PutUint64(es[i].Record[8:], uint64(i)) // unique
		es[i].Writes = make([][32]byte, r.IntN(4))
		for j := range es[i].Writes {
			binary.BigEndian.PutUint64(es[i].Writes[j][:], r.Uint64())
			binary.BigEndian.PutUint64(es[i].Writes[j][24:], uint64(j))
		}
	}
	return es
}

func TestInventoryProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		es := randomInventory(r)
		b, err := EncodeInventory(es)
		if err != nil {
			t.Fatal(err)
		}
		// Canonical: any permutation encodes to the same bytes.
		shuffled := slices.Clone(es)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b2, _ := EncodeInventory(shuffled)
		if !bytes.Equal(b, b2) {
			t.Fatal("encoding depends on input order")
		}
		dec, err := DecodeInventory(b)
		if err != nil {
			t.Fatal(err)
		}
		b3, _ := EncodeInventory(dec)
		if !bytes.Equal(b, b3) {
			t.Fatal("decode/encode is not the identity")
		}
		// Every strict prefix and every extension is rejected.
		for n := range len(b) {
			if _, err := DecodeInventory(b[:n]); !errors.Is(err, ErrInventory) {
				t.Fatalf("prefix of %d/%d bytes accepted", n, len(b))
			}
		}
		if _, err := DecodeInventory(append(bytes.Clone(b), 0)); !errors.Is(err, ErrInventory) {
			t.Fatal("trailing byte accepted")
		}
	}
}

func TestInventoryRejects(t *testing.T) {
	rec := func(b byte) [16]byte { return [16]byte{b} }
	w := func(b byte) [32]byte { return [32]byte{b} }
	if _, err := EncodeInventory([]InventoryEntry{{Record: rec(1)}, {Record: rec(1)}}); !errors.Is(err, ErrInventory) {
		t.Fatal("duplicate record encoded")
	}
	if _, err := EncodeInventory([]InventoryEntry{{Record: rec(1), Writes: [][32]byte{w(2), w(2)}}}); !errors.Is(err, ErrInventory) {
		t.Fatal("duplicate write encoded")
	}
	raw := func(recs ...[]byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(recs)))
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	entry := func(r byte, ws ...byte) []byte {
		b := append([]byte(nil), make([]byte, 16)...)
		b[0] = r
		b = binary.BigEndian.AppendUint32(b, uint32(len(ws)))
		for _, x := range ws {
			wid := w(x)
			b = append(b, wid[:]...)
		}
		return b
	}
	for name, b := range map[string][]byte{
		"unsorted records":  raw(entry(2, 1), entry(1, 1)),
		"duplicate records": raw(entry(1, 1), entry(1, 2)),
		"unsorted writes":   raw(entry(1, 3, 2)),
		"duplicate writes":  raw(entry(1, 2, 2)),
		"huge record count": binary.BigEndian.AppendUint32(nil, 0xffffffff),
		"huge write count":  append(append(make([]byte, 4+16), 0xff, 0xff, 0xff, 0xff), make([]byte, 32)...),
		"empty input":       nil,
	} {
		if name == "huge write count" {
			b[3] = 1
		}
		if _, err := DecodeInventory(b); !errors.Is(err, ErrInventory) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got, err := DecodeInventory(raw(entry(1, 1, 2), entry(2))); err != nil || len(got) != 2 {
		t.Fatalf("valid inventory: %v", err)
	}
}

func FuzzDecodeInventory(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	b, _ := EncodeInventory(randomInventory(rand.New(rand.NewPCG(3, 4))))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeInventory(b)
		if err != nil {
			if !errors.Is(err, ErrInventory) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever decodes is canonical: it encodes back to the same bytes.
		re, err := EncodeInventory(es)
		if err != nil || !bytes.Equal(re, b) {
			t.Fatalf("accepted non-canonical bytes: %v", err)
		}
	})
}
