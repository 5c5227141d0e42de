package purestore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
)

// The tables, as devstore's schema names them.
const (
	tMeta byte = iota
	tWrites
	tStatements
	tFragments
	tMsgs
	tOutbox
	tHeld
	tRotations
	nTables
)

// row is one row: its encoded columns and its place in insertion order
// (SQLite's rowid order, which the message index and held list keep).
type row struct {
	val []byte
	pos uint64
}

// table is one table keyed by its primary key.
type table struct {
	rows map[string]row
	next uint64
}

func newTables() [nTables]*table {
	var ts [nTables]*table
	for i := range ts {
		ts[i] = &table{rows: map[string]row{}}
	}
	return ts
}

// put sets key to val; an existing row keeps its place unless move.
func (t *table) put(key string, val []byte, move bool) {
	if r, ok := t.rows[key]; ok && !move {
		t.rows[key] = row{val: val, pos: r.pos}
		return
	}
	t.rows[key] = row{val: val, pos: t.next}
	t.next++
}

// ordered returns the keys in insertion order (byKey: in key order, for
// the tables keyed by a big-endian sequence number).
func (t *table) ordered(byKey bool) []string {
	keys := make([]string, 0, len(t.rows))
	for k := range t.rows {
		keys = append(keys, k)
	}
	if byKey {
		slices.Sort(keys)
	} else {
		slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(t.rows[a].pos, t.rows[b].pos) })
	}
	return keys
}

// lastSeq is the greatest big-endian sequence key, 0 for none.
func (t *table) lastSeq() uint64 {
	var m uint64
	for k := range t.rows {
		if len(k) == 8 {
			m = max(m, binary.BigEndian.Uint64([]byte(k)))
		}
	}
	return m
}

func seqKey(n uint64) string { return string(binary.BigEndian.AppendUint64(nil, n)) }

// Columns are encoded one after another, each as uvarint(len+1) then the
// bytes; a length of 0 is nil (SQL NULL), kept apart from empty.
func appendCol(b, c []byte) []byte {
	if c == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(c))+1)
	return append(b, c...)
}

func appendUint(b []byte, n uint64) []byte { return appendCol(b, binary.AppendUvarint(nil, n)) }

var errMalformed = errors.New("purestore: malformed row")

// cols reads a row's columns back; a short or overlong row is an error.
type cols struct {
	b   []byte
	err error
}

func (c *cols) next() []byte {
	if c.err != nil {
		return nil
	}
	n, k := binary.Uvarint(c.b)
	if k <= 0 || n > uint64(len(c.b)-k)+1 {
		c.err = errMalformed
		return nil
	}
	c.b = c.b[k:]
	if n <= 1 {
		return nil // an empty column reads as nil, as devstore's do
	}
	v := bytes.Clone(c.b[:n-1])
	c.b = c.b[n-1:]
	return v
}

func (c *cols) uint() uint64 {
	v := c.next()
	n, k := binary.Uvarint(v)
	if c.err == nil && (k <= 0 || k != len(v)) {
		c.err = errMalformed
	}
	return n
}

// fixed reads a column of exactly n bytes into dst.
func (c *cols) fixed(dst []byte) {
	v := c.next()
	if c.err == nil && len(v) != len(dst) {
		c.err = errMalformed
	}
	copy(dst, v)
}

func (c *cols) done() error {
	if c.err == nil && len(c.b) != 0 {
		return errMalformed
	}
	return c.err
}
