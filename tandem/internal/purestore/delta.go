package purestore

import (
	"encoding/binary"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/client"
	"github.com/ferry-sync/ferry/tandem/internal/devstore"
	"github.com/ferry-sync/ferry/tandem/internal/record"
)

// deltaOps turns d into ops with devstore's semantics (journal.go there):
// writes are inserted once, statements and fragments appended, the
// message index upserted in place, held messages replaced (moving to the
// end), rotations upserted (only the step changes).
func deltaOps(s *DB, tx *txn, d *client.Delta) {
	for _, w := range d.Writes {
		id, scope := w.ID(), w.Body().Scope
		if _, ok := s.ts[tWrites].rows[string(id[:])]; ok {
			continue
		}
		tx.put(s, tWrites, string(id[:]), record.AppendStored(append([]byte{}, scope[:]...), w), false)
	}
	for _, st := range d.Statements {
		v := appendCol(appendCol(appendCol(nil, st.Collection[:]), st.Origin[:]), st.Payload)
		tx.put(s, tStatements, seqKey(s.ts[tStatements].lastSeq()+1), v, false)
	}
	for _, f := range d.Fragments {
		v := appendCol(appendCol(nil, f.Collection[:]), f.Payload)
		tx.put(s, tFragments, seqKey(s.ts[tFragments].lastSeq()+1), v, false)
	}
	for _, m := range d.Msgs {
		ch := m.Channel
		if r, ok := s.ts[tMsgs].rows[string(m.ID)]; ok {
			old, _ := decodeMsg(string(m.ID), r.val)
			ch = old.Channel // the upsert leaves the channel as it was
		}
		tx.put(s, tMsgs, string(m.ID), encodeMsg(m, ch), false)
	}
	for _, id := range d.Gone {
		tx.del(s, tMsgs, string(id))
		tx.del(s, tHeld, string(id))
	}
	for _, o := range d.OutAdd {
		tx.put(s, tOutbox, seqKey(o.Seq), encodeOut(o), false)
	}
	for _, seq := range d.OutDel {
		tx.del(s, tOutbox, seqKey(seq))
	}
	for _, h := range d.HeldAdd {
		v := appendUint(appendCol(appendCol(nil, []byte(h.Channel)), h.Envelope), uint64(h.FirstSeen.UnixMilli()))
		tx.put(s, tHeld, string(h.ID), v, true)
	}
	for _, id := range d.HeldDel {
		tx.del(s, tHeld, string(id))
	}
	for _, r := range d.Rotations {
		if old, ok := s.ts[tRotations].rows[string(r.Collection[:])]; ok {
			if prev, err := decodeRotation(r.Collection[:], old.val); err == nil {
				prev.Step = r.Step
				r = prev
			}
		}
		tx.put(s, tRotations, string(r.Collection[:]), encodeRotation(r), false)
	}
	for _, c := range d.RotationsDone {
		tx.del(s, tRotations, string(c[:]))
	}
	switch {
	case d.CursorSet && d.Cursor == nil:
		tx.del(s, tMeta, devstore.KeyCursor)
	case d.CursorSet:
		tx.put(s, tMeta, devstore.KeyCursor, append([]byte{}, d.Cursor...), false)
	}
	tx.put(s, tMeta, devstore.KeyHLC, devstore.EncodeHLC(d.HLC), false)
}

func encodeMsg(m client.SavedMsg, channel string) []byte {
	b := appendCol(nil, []byte(channel))
	b = appendUint(b, uint64(m.State))
	b = appendCol(b, m.Hash[:])
	b = appendUint(b, uint64(m.Kind))
	b = appendCol(b, m.Rec[:])
	b = appendCol(b, m.Writes)
	// A message refused for a holding bound: its size and first-seen time
	// (0: never refused).
	b = appendUint(b, uint64(max(m.Size, 0)))
	var seen uint64
	if !m.FirstSeen.IsZero() {
		seen = uint64(m.FirstSeen.UnixNano())
	}
	return appendUint(b, seen)
}

func decodeMsg(id string, v []byte) (client.SavedMsg, error) {
	c := cols{b: v}
	m := client.SavedMsg{ID: hub.ID(id), Channel: string(c.next()), State: client.MsgState(c.uint())}
	c.fixed(m.Hash[:])
	m.Kind = uint8(c.uint())
	c.fixed(m.Rec[:])
	m.Writes = c.next()
	m.Size = int64(c.uint())
	if seen := c.uint(); seen != 0 {
		m.FirstSeen = time.Unix(0, int64(seen))
	}
	return m, c.done()
}

func encodeOut(o client.SavedOut) []byte {
	dirty := uint64(0)
	if o.Dirty {
		dirty = 1
	}
	b := appendCol(nil, []byte(o.Channel))
	b = appendCol(b, o.Envelope)
	b = appendCol(b, o.Rec[:])
	b = appendUint(b, dirty)
	b = appendUint(b, uint64(o.Kind))
	b = appendCol(b, o.Writes)
	auto := uint64(0)
	if o.Auto {
		auto = 1
	}
	return appendUint(b, auto)
}

func decodeOut(seq uint64, v []byte) (client.SavedOut, error) {
	c := cols{b: v}
	o := client.SavedOut{Seq: seq, Channel: string(c.next()), Envelope: c.next()}
	c.fixed(o.Rec[:])
	o.Dirty = c.uint() != 0
	o.Kind = uint8(c.uint())
	o.Writes = c.next()
	o.Auto = c.uint() != 0
	return o, c.done()
}

func encodeRotation(r client.SavedRotation) []byte {
	b := appendCol(nil, binary.AppendVarint(nil, int64(r.Step)))
	b = appendCol(b, r.Payload)
	b = appendCol(b, r.Key[:])
	b = appendCol(b, r.Inventory)
	b = appendCol(b, r.OldEpoch[:])
	return appendCol(b, r.OldKey[:])
}

func decodeRotation(coll []byte, v []byte) (client.SavedRotation, error) {
	var r client.SavedRotation
	if len(coll) != 16 {
		return r, errMalformed
	}
	r.Collection = client.CollectionID(coll)
	c := cols{b: v}
	step, k := binary.Varint(c.next())
	if k <= 0 {
		return r, errMalformed
	}
	r.Step = int(step)
	r.Payload = c.next()
	c.fixed(r.Key[:])
	r.Inventory = c.next()
	c.fixed(r.OldEpoch[:])
	c.fixed(r.OldKey[:])
	return r, c.done()
}
