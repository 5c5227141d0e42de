package suite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// InventoryEntry is one record of a snapshot inventory and the IDs of the
// writes carried over for it (§8.3).
type InventoryEntry struct {
	Record [16]byte
	Writes [][32]byte
}

// EncodeInventory returns the canonical inventory bytes (§8.3):
//
//	u32(recordCount) || recordCount × ( recordID (16) || u32(writeCount) || writeCount × writeID (32) )
//
// with entries sorted by record ID and each entry's write IDs sorted.
// EncodeInventory sorts copies of its input (the caller's slices are not
// modified) and fails with ErrInventory if a record ID or, within one
// record, a write ID occurs twice. See docs/decisions/tandem-suite-inventory.md.
func EncodeInventory(entries []InventoryEntry) ([]byte, error) {
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b InventoryEntry) int { return bytes.Compare(a.Record[:], b.Record[:]) })
	n := 4
	for i := range es {
		if i > 0 && es[i-1].Record == es[i].Record {
			return nil, fmt.Errorf("%w: record %x twice", ErrInventory, es[i].Record)
		}
		n += 16 + 4 + 32*len(es[i].Writes)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(es)))
	for _, e := range es {
		ws := slices.Clone(e.Writes)
		slices.SortFunc(ws, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		b = append(b, e.Record[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(ws)))
		for j, w := range ws {
			if j > 0 && ws[j-1] == w {
				return nil, fmt.Errorf("%w: write %x twice in record %x", ErrInventory, w, e.Record)
			}
			b = append(b, w[:]...)
		}
	}
	return b, nil
}

// InventoryHash is snapshot = H(inventoryBytes) (§8.3).
func InventoryHash(inventoryBytes []byte) [32]byte { return H(inventoryBytes) }

// DecodeInventory parses canonical inventory bytes (§8.3). It fails with
// ErrInventory on truncated input, trailing bytes, record IDs not strictly
// ascending, or write IDs within a record not strictly ascending. Counts are
// checked against the remaining length before anything is allocated.
func DecodeInventory(b []byte) ([]InventoryEntry, error) {
	rest := b
	n, rest, ok := readU32(rest)
	if !ok {
		return nil, fmt.Errorf("%w: truncated record count", ErrInventory)
	}
	if uint64(n) > uint64(len(rest))/(16+4) {
		return nil, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrInventory, n, len(rest))
	}
	entries := make([]InventoryEntry, 0, n)
	for i := range n {
		var e InventoryEntry
		if len(rest) < 16 {
			return nil, fmt.Errorf("%w: truncated record %d", ErrInventory, i)
		}
		e.Record = [16]byte(rest[:16])
		rest = rest[16:]
		if i > 0 && bytes.Compare(entries[i-1].Record[:], e.Record[:]) >= 0 {
			return nil, fmt.Errorf("%w: record %d out of order or repeated", ErrInventory, i)
		}
		var wc uint32
		if wc, rest, ok = readU32(rest); !ok {
			return nil, fmt.Errorf("%w: truncated write count of record %d", ErrInventory, i)
		}
		if uint64(wc) > uint64(len(rest))/32 {
			return nil, fmt.Errorf("%w: record %d: %d writes cannot fit in %d bytes", ErrInventory, i, wc, len(rest))
		}
		e.Writes = make([][32]byte, wc)
		for j := range e.Writes {
			e.Writes[j] = [32]byte(rest[:32])
			rest = rest[32:]
			if j > 0 && bytes.Compare(e.Writes[j-1][:], e.Writes[j][:]) >= 0 {
				return nil, fmt.Errorf("%w: record %d: write %d out of order or repeated", ErrInventory, i, j)
			}
		}
		entries = append(entries, e)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrInventory, len(rest))
	}
	return entries, nil
}

func readU32(b []byte) (uint32, []byte, bool) {
	if len(b) < 4 {
		return 0, b, false
	}
	return binary.BigEndian.Uint32(b), b[4:], true
}
