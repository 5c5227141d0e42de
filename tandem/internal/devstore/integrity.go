package devstore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// Stored writes and outbox entries carry a checksum, checked whenever a row is read back:
// a row whose bytes changed on disk (a flipped bit, a torn page the file
// system did not catch) is dropped and reported, never shown as someone's
// value or published again; the client fetches it again from the hub
// (docs/decisions/tandem-device-integrity.md).
//
// The checksum column holds a version byte (1) and the CRC-32C of
// wid || scope || stored, big-endian. Rows written before schema 2 have
// none (NULL) and are not checked.
const sumLen = 5

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rowSum is the checksum column of a writes row.
func rowSum(id [32]byte, scope [16]byte, stored []byte) []byte {
	return binary.BigEndian.AppendUint32([]byte{1}, rowCRC(id, scope, stored))
}

// rowCRC is the CRC-32C in a writes row's checksum.
func rowCRC(id [32]byte, scope [16]byte, stored []byte) uint32 {
	c := crc32.Update(0, castagnoli, id[:])
	c = crc32.Update(c, castagnoli, scope[:])
	return crc32.Update(c, castagnoli, stored)
}

// intact reports whether a writes row matches its checksum, and records
// it as damaged if not. A row without a checksum (NULL, or all zero as
// the one-column read gives it) is taken as it is.
func (r *source) intact(id [32]byte, scope [16]byte, stored, sum []byte) bool {
	if len(sum) == 0 || (len(sum) == sumLen && sum[0] == 0) {
		return true
	}
	// rowSum's bytes, compared without building them: reopening checks
	// every stored write.
	if len(sum) == sumLen && sum[0] == 1 && binary.BigEndian.Uint32(sum[1:]) == rowCRC(id, scope, stored) {
		return true
	}
	r.damaged = append(r.damaged, id)
	return false
}

// outSum is the checksum column of an outbox row: a version byte (1) and
// the CRC-32C of every other column, each variable-length one preceded by
// its length, so that no change of one column can be offset by another.
func outSum(o *client.SavedOut) []byte {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], o.Seq)
	c := crc32.Update(0, castagnoli, n[:])
	for _, f := range [][]byte{[]byte(o.Channel), o.Envelope, o.Rec[:], o.Writes} {
		binary.BigEndian.PutUint32(n[:4], uint32(len(f)))
		c = crc32.Update(c, castagnoli, n[:4])
		c = crc32.Update(c, castagnoli, f)
	}
	c = crc32.Update(c, castagnoli, []byte{flag(o.Dirty), o.Kind, flag(o.Auto)})
	return binary.BigEndian.AppendUint32([]byte{1}, c)
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// outIntact reports whether an outbox row matches its checksum (recLen is
// the stored rec's length, which must be 16 for a checked row), and
// records it as damaged if not. A row written before schema 3 has none
// and is taken as it is.
func (r *source) outIntact(o *client.SavedOut, recLen int, sum []byte) bool {
	if len(sum) == 0 {
		return true
	}
	if recLen == len(o.Rec) && bytes.Equal(sum, outSum(o)) {
		return true
	}
	r.damagedOut = append(r.damagedOut, o.Seq)
	return false
}

// DamagedOutbox lists the outbox entries whose rows failed their checksum
// in the reads so far: unsent messages that must not be sent.
func (r *source) DamagedOutbox() []uint64 { return r.damagedOut }

// DamagedWrites lists the writes whose rows failed their checksum in the
// reads so far (client.Device.Restore asks).
func (r *source) DamagedWrites() [][32]byte { return r.damaged }
