package purestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The file is a log of batches, one per committed change: u32 length,
// u32 CRC-32C of the payload, then the payload, a run of ops. A batch is
// whole or absent: a torn last batch (a crash during the append) is cut
// off on open; a damaged one before the end is refused.
const (
	opPut  byte = iota // upsert keeping the row's place
	opMove             // upsert moving the row to the end (INSERT OR REPLACE)
	opDel
)

// maxBatch bounds one batch read back (a device's change is far smaller).
const maxBatch = 1 << 30

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

func appendBatch(b []byte, ops []op) []byte {
	start := len(b)
	b = append(b, make([]byte, 8)...)
	for _, o := range ops {
		b = appendOp(b, o)
	}
	p := b[start+8:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(p)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(p, castagnoli))
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
		if len(data) < 8 {
			return off, nil // torn header
		}
		n := binary.BigEndian.Uint32(data)
		if n > maxBatch {
			return 0, fmt.Errorf("%w: batch of %d bytes at %d", ErrDamaged, n, off)
		}
		if uint64(len(data)-8) < uint64(n) {
			return off, nil // torn payload
		}
		p := data[8 : 8+n]
		if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(data[4:]) {
			if int(8+n) == len(data) {
				return off, nil // the last append, torn inside
			}
			return 0, fmt.Errorf("%w: checksum at %d", ErrDamaged, off)
		}
		if err := replayBatch(p, ts); err != nil {
			return 0, fmt.Errorf("%w: batch at %d: %w", ErrDamaged, off, err)
		}
		data = data[8+n:]
		off += int64(8 + n)
	}
	return off, nil
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
