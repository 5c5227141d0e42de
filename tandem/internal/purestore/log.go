package purestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The file is a log of batches, one per committed change: a 12-byte
// header (u32 payload length, u32 CRC-32C of the payload, u32 CRC-32C of
// those 8 bytes), then the payload, a run of ops. A batch is whole or
// absent: a torn last batch (a crash during the append: a short header, a
// header of zeros, a short payload, a bad payload running to the end) is
// cut off on open; anything else that does not check is damage, refused,
// never read as a torn tail (which would drop the commits after it).
const (
	opPut  byte = iota // upsert keeping the row's place
	opMove             // upsert moving the row to the end (INSERT OR REPLACE)
	opDel
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged means the store's file is damaged before its end.
var ErrDamaged = errors.New("purestore: the store's file is damaged")

type op struct {
	kind, table byte
	key         string
	val         []byte
}

func appendOp(b []byte, o op) []byte {
	b = append(b, o.kind, o.table)
	b = appendCol(b, []byte(o.key))
	return appendCol(b, o.val)
}

const headerLen = 12

func appendBatch(b []byte, ops []op) []byte {
	start := len(b)
	b = append(b, make([]byte, headerLen)...)
	for _, o := range ops {
		b = appendOp(b, o)
	}
	h, p := b[start:start+headerLen], b[start+headerLen:]
	binary.BigEndian.PutUint32(h, uint32(len(p)))
	binary.BigEndian.PutUint32(h[4:], crc32.Checksum(p, castagnoli))
	binary.BigEndian.PutUint32(h[8:], crc32.Checksum(h[:8], castagnoli))
	return b
}

// apply applies one op to the tables.
func apply(ts *[nTables]*table, o op) error {
	if o.table >= nTables {
		return errMalformed
	}
	t := ts[o.table]
	switch o.kind {
	case opPut, opMove:
		t.put(o.key, o.val, o.kind == opMove)
	case opDel:
		delete(t.rows, o.key)
	default:
		return errMalformed
	}
	return nil
}

// replay reads the log into ts; it answers the length of the whole
// batches (where a torn tail starts).
func replay(f *os.File, ts *[nTables]*table) (int64, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	var off int64
	for len(data) > 0 {
		if len(data) < headerLen || allZero(data) {
			return off, nil // torn header
		}
		h := data[:headerLen]
		if crc32.Checksum(h[:8], castagnoli) != binary.BigEndian.Uint32(h[8:]) {
			return 0, fmt.Errorf("%w: batch header at %d", ErrDamaged, off)
		}
		n := binary.BigEndian.Uint32(h)
		if uint64(len(data)-headerLen) < uint64(n) {
			return off, nil // torn payload
		}
		p := data[headerLen : headerLen+n]
		if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(h[4:]) {
			if int(headerLen+n) == len(data) {
				return off, nil // the last append, torn inside
			}
			return 0, fmt.Errorf("%w: checksum at %d", ErrDamaged, off)
		}
		if err := replayBatch(p, ts); err != nil {
			return 0, fmt.Errorf("%w: batch at %d: %w", ErrDamaged, off, err)
		}
		data = data[headerLen+n:]
		off += int64(headerLen + n)
	}
	return off, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func replayBatch(p []byte, ts *[nTables]*table) error {
	for len(p) > 0 {
		if len(p) < 2 {
			return errMalformed
		}
		o := op{kind: p[0], table: p[1]}
		c := cols{b: p[2:]}
		o.key = string(c.next())
		o.val = c.next()
		if c.err != nil {
			return c.err
		}
		p = c.b
		if err := apply(ts, o); err != nil {
			return err
		}
	}
	return nil
}
