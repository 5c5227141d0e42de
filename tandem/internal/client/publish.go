package client

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Publishing by record state, garbage collection and healing:
// docs/decisions/tandem-publishing.md.

// SoftMessage is the size a published message aims to stay under (§10.6:
// SHOULD stay under 64 KiB). A record whose state is larger is published in
// several messages.
const SoftMessage = 64 << 10

// pushRecord publishes a dirty record as one message holding its current
// kept writes (§10.5, §10.7), or several when they do not fit SoftMessage
// (§10.6), and then destroys the record's messages the new one dominates
// (§10.7; see domination). d.mu is not held.
func (d *Device) pushRecord(ctx context.Context, s hub.Store, m outMsg, rep *SyncReport) error {
	d.mu.Lock()
	// A record is published in its collection's current epoch, whichever
	// epoch it was edited in (§11.6: a device that learned of the change
	// stops publishing to the old epoch); a removed user publishes nothing.
	if ch := d.chans[m.channel]; ch != nil && ch.coll != nil {
		cur, err := d.currentChannel(ch.coll)
		if _, werr := d.writerFor(ch.coll, cur); err != nil || werr != nil {
			d.dropPublished(m.seq)
			err := d.commitSynced()
			d.mu.Unlock()
			return err
		}
		m.channel = cur.tag
	}
	parts, err := d.recordParts(m.channel, m.rec)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	var newest hub.ID
	for _, p := range parts {
		id, err := s.Append(ctx, m.channel, p.env)
		if err != nil {
			return fmt.Errorf("tandem/client: publish: %w", err)
		}
		rep.Published++
		newest = id
		d.mu.Lock()
		d.recordAppended(id, m.channel, p.env, kindRecord, m.rec, p.ids)
		err = d.commitSynced()
		d.mu.Unlock()
		if err != nil {
			return err
		}
	}
	d.mu.Lock()
	var gone []hub.ID
	if len(parts) == 1 {
		gone = d.dominated(m.channel, m.rec, newest)
	}
	d.dropPublished(m.seq)
	err = d.commitSynced()
	d.mu.Unlock()
	if err != nil || len(gone) == 0 {
		return err
	}
	if err := s.Destroy(ctx, gone); err != nil {
		d.log.Warn("tandem/client: destroying dominated messages", "n", len(gone), "err", err)
		return nil // they stay; a later publish of the record tries again
	}
	rep.Destroyed += len(gone)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range gone {
		d.forget(id)
	}
	return d.commitSynced()
}

// recordAppended indexes a message this device just appended: it is not
// fetched back, and the next pull checks it is still there (MsgOwn).
// d.mu is held.
func (d *Device) recordAppended(id hub.ID, channel string, env []byte, kind msgKind, rec [16]byte, ids [][32]byte) {
	h := hub.Hash(env)
	d.msgs[id] = &msgInfo{channel: channel, hash: h, kind: kind, rec: rec, writes: ids}
	d.order = append(d.order, id)
	d.byHash[h] = id
	d.mark(id, MsgOwn)
}

// forget removes a destroyed message from the index. d.mu is held.
func (d *Device) forget(id hub.ID) {
	if m, ok := d.msgs[id]; ok {
		if d.byHash[m.hash] == id {
			delete(d.byHash, m.hash)
		}
		delete(d.msgs, id)
		d.delta.Gone = append(d.delta.Gone, id)
	}
}

// part is one sealed message of a record's state, with its write IDs.
type part struct {
	env []byte
	ids [][32]byte
}

// recordParts seals the kept writes of record rec in channel's state,
// split into messages under SoftMessage. d.mu is held.
func (d *Device) recordParts(channel string, rec [16]byte) ([]part, error) {
	ch := d.chans[channel]
	if ch == nil {
		return nil, nil // no longer followed
	}
	st := d.home
	if ch.coll != nil {
		st = ch.coll.state
	}
	return d.sealParts(ch, rec, d.publishable(ch, rec, st.Writes(rec)))
}

// publishable keeps the writes other devices accept in ch (§8.3): those of
// the channel's epoch, and earlier ones its inventory lists. An earlier
// write it doesn't list is left out: its author signs it again (resign.go).
// d.mu is held.
func (d *Device) publishable(ch *channel, rec [16]byte, ws []*record.Write) []*record.Write {
	if ch.coll == nil {
		return ws
	}
	r, ok := ch.coll.chain.Roster()
	if !ok {
		return ws
	}
	n, _ := r.Counter(r.Head().ID())
	inv, _ := r.Inventory(r.Epoch())
	out := ws[:0:0]
	for _, w := range ws {
		if w.Epoch() == n || (inv != nil && inv.Lists(rec, w.ID())) {
			out = append(out, w)
		}
	}
	return out
}

// sealParts seals ws, all of record rec, as messages for ch under
// SoftMessage. d.mu is held.
func (d *Device) sealParts(ch *channel, rec [16]byte, ws []*record.Write) ([]part, error) {
	var out []part
	for start := 0; start < len(ws); {
		n := len(ws) - start
		for {
			pt, err := EncodeRecordPayload(&RecordPayload{Record: rec, Writes: signedWrites(ws[start : start+n]...)})
			if err != nil {
				return nil, err
			}
			if roster.MessageSize(len(pt)) < SoftMessage || n == 1 {
				env, err := suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, d.rand)
				if err != nil {
					return nil, err
				}
				p := part{env: env}
				for _, w := range ws[start : start+n] {
					p.ids = append(p.ids, w.ID())
				}
				out = append(out, p)
				break
			}
			n = (n + 1) / 2
		}
		start += n
	}
	return out, nil
}

// dominated lists the record-state messages of rec in channel that the
// message newest, which holds every write the device keeps for rec, now
// dominates (§10.7): every write in them is in newest, or is no longer kept
// and so superseded by a kept one (State.Superseded: a tombstone counts).
// Only messages the device applied count: one holding a held write (§8.3,
// "held writes count as writes") or a rejected one is never destroyed.
// d.mu is held.
func (d *Device) dominated(channel string, rec [16]byte, newest hub.ID) []hub.ID {
	n := d.msgs[newest]
	if n == nil {
		return nil
	}
	inNew := make(map[[32]byte]bool, len(n.writes))
	for _, id := range n.writes {
		inNew[id] = true
	}
	kept := d.keptIDs(channel, rec)
	var out []hub.ID
	for id, m := range d.msgs {
		if id == newest || m.channel != channel || m.kind != kindRecord || m.rec != rec || (m.state != MsgDone && m.state != MsgOwn) {
			continue
		}
		ok := true
		for _, w := range m.writes {
			if !inNew[w] && kept[w] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, id)
		}
	}
	return out
}

// keptIDs returns the IDs of the writes kept for rec in channel's state.
// d.mu is held.
func (d *Device) keptIDs(channel string, rec [16]byte) map[[32]byte]bool {
	out := map[[32]byte]bool{}
	ch := d.chans[channel]
	if ch == nil {
		return out
	}
	st := d.home
	if ch.coll != nil {
		st = ch.coll.state
	}
	for _, id := range st.KeptIDs(rec) {
		out[id] = true
	}
	return out
}

// Heal compares the replica with what the hub holds, after a full sync
// (§12.2), and queues what the hub lacks: every record (home and the
// current epoch of each collection) whose kept writes are not all in live
// messages is marked dirty, so the next push publishes its state; every
// followed roster statement not in a live message is queued again. It
// never brings back a write a tombstone or a newer write replaced: only
// kept writes are published. It returns what it queued. d.mu is held.
func (d *Device) heal(dry bool) (records, statements int) {
	onHub := make(liveWrites, len(d.msgs))
	type placed struct {
		channel string
		st      [32]byte
	}
	rosterOnHub := map[placed]bool{}
	fragsOnHub := map[string]int{} // live inventory fragments, by channel
	for _, m := range d.msgs {
		if m.state == MsgTodo || m.state == MsgRejected || m.state == MsgRefused {
			continue
		}
		switch m.kind {
		case kindRecord:
			onHub.add(m.channel, m.rec, m.writes)
		case kindRoster:
			for _, w := range m.writes {
				rosterOnHub[placed{m.channel, w}] = true
			}
		case kindFragment:
			fragsOnHub[m.channel]++
		}
	}
	for _, m := range d.outbox {
		switch m.kind {
		case kindFragment:
			fragsOnHub[m.channel]++
		case kindRoster:
			for _, id := range m.ids {
				rosterOnHub[placed{m.channel, id}] = true
			}
		}
	}
	var queue []outMsg
	missing := func(channel string, st *record.State) {
		from := len(queue)
		for rec := range st.EachRecord() {
			if d.isDirty(channel, rec) {
				continue // queued: the push publishes it anyway
			}
			if !onHub.holds(channel, rec, st.KeptIDs(rec)) {
				queue = append(queue, outMsg{channel: channel, rec: rec, dirty: true})
				records++
			}
		}
		// A channel's missing records are published in record order.
		slices.SortFunc(queue[from:], func(a, b outMsg) int { return bytes.Compare(a.rec[:], b.rec[:]) })
	}
	missing(d.id.HomeTag, d.home)
	for _, coll := range d.colls {
		ch, err := d.currentChannel(coll)
		if err != nil {
			continue
		}
		missing(ch.tag, coll.state)
		r, ok := coll.chain.Roster()
		if !ok {
			continue
		}
		// The current epoch's inventory stays on the hub while the epoch is
		// current (§10.7): without it nothing old can be judged there.
		if inv, ok := r.Inventory(r.Epoch()); ok {
			frags, err := roster.Split(r.Epoch(), inv.Bytes(), SoftMessage)
			if err == nil && fragsOnHub[ch.tag] < len(frags) {
				for _, f := range frags {
					pt, err := f.Encode()
					if err != nil {
						continue
					}
					env, err := suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, d.rand)
					if err != nil {
						continue
					}
					queue = append(queue, outMsg{channel: ch.tag, envelope: env, kind: kindFragment})
					statements++
				}
			}
		}
		// Every statement in the channel of its epoch, and a statement that
		// starts an epoch also in the previous epoch's channel too: that
		// copy is its announcement (§11.6), without which it is a draft.
		sts := r.Statements()
		epochOf := func(i int) [32]byte {
			for j := i; j >= 0; j-- {
				if r.IsEpochStart(sts[j].ID()) {
					return sts[j].ID()
				}
			}
			return sts[0].ID()
		}
		for i, st := range sts {
			homes := [][32]byte{epochOf(i)}
			if i > 0 && r.IsEpochStart(st.ID()) {
				homes = append(homes, epochOf(i-1))
			}
			for _, e := range homes {
				key, ok := coll.epochs[e]
				if !ok {
					continue
				}
				ech := &channel{tag: suite.CollectionTag(key, e), key: key, coll: coll, epoch: e}
				if rosterOnHub[placed{ech.tag, st.ID()}] {
					continue
				}
				m, err := d.seal(ech, &RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: st.Body(), Sig: st.Sig()}}})
				if err != nil {
					continue
				}
				m.kind, m.ids = kindRoster, [][32]byte{st.ID()}
				queue = append(queue, m)
				statements++
			}
		}
	}
	if dry {
		return records, statements
	}
	for _, m := range queue {
		if m.dirty && d.isDirty(m.channel, m.rec) {
			continue
		}
		d.outSeq++
		m.seq = d.outSeq
		d.addOutbox(m)
		d.delta.OutAdd = append(d.delta.OutAdd, savedOut(m))
	}
	return records, statements
}
