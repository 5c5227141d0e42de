package client

import (
	"fmt"
	"io"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// CreateCollection creates a collection owned by the user (§7.1): a genesis
// roster statement naming the user as owner with a commitment to a random
// epoch key K(c,0), the membership record in home holding that key (§6.2),
// and the collection's name in its _meta record (§7.3). It works offline:
// everything is published by the next Sync, the genesis in the epoch
// channel (§9.4, §10.5) and the membership in home.
func (d *Device) CreateCollection(name string) (CollectionID, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return CollectionID{}, err
	}
	hlc, err := d.clock.Next()
	if err != nil {
		return CollectionID{}, err
	}
	chg, err := roster.Genesis(roster.Signer{Key: d.id.SignKey, Dot: suite.Dot{Device: d.dev, HLC: hlc}, Rand: d.rand}, d.id.UKa, d.name)
	if err != nil {
		return CollectionID{}, err
	}
	st := chg.Statement
	cid := CollectionID(roster.CollectionID(st.ID()))
	coll := newCollection(cid, d.bounds.chainOptions())
	if err := coll.chain.Add(st, roster.Origin{}); err != nil {
		return CollectionID{}, err
	}
	coll.checked[st.ID()] = true // its commitment is that of the key we hold
	ch := &channel{tag: suite.CollectionTag(chg.Key, st.ID()), key: chg.Key, coll: coll, epoch: st.ID()}

	// Build everything before changing any state, so a failure leaves none.
	genesisMsg, err := d.seal(ch, &RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: st.Body(), Sig: st.Sig()}}})
	if err != nil {
		return CollectionID{}, err
	}
	genesisMsg.kind, genesisMsg.ids = kindRoster, [][32]byte{st.ID()}
	homeChanges, err := membershipChanges(cid, st.ID(), chg.Key)
	if err != nil {
		return CollectionID{}, err
	}
	homeWrites, homeMsg, err := d.buildRecord(d.home, &record.Writer{Key: d.id.SignKey, Device: d.dev, Clock: d.clock}, d.chans[d.id.HomeTag], homeChanges)
	if err != nil {
		return CollectionID{}, err
	}
	meta := roster.MetaRecordID()
	w, err := d.writerFor(coll, ch)
	if err != nil {
		return CollectionID{}, err
	}
	metaWrites, metaMsg, err := d.buildRecord(coll.state, w, ch, []record.Change{
		{Record: meta, Field: fieldName, Op: suite.OpAssign, Value: []byte(roster.MetaRecordName)},
		{Record: meta, Field: MetaNameField, Op: suite.OpAssign, Value: []byte(name)},
	})
	if err != nil {
		return CollectionID{}, err
	}

	d.delta.Statements = append(d.delta.Statements, savedStatement(cid, [32]byte{}, st.Body(), st.Sig()))
	var ws []stateWrite
	for _, w := range homeWrites {
		ws = append(ws, stateWrite{d.home, w})
	}
	for _, w := range metaWrites {
		ws = append(ws, stateWrite{coll.state, w})
	}
	err = d.applyLocal(ws, []outMsg{genesisMsg, homeMsg, metaMsg}, func() {
		d.colls[cid] = coll
		coll.epochs[st.ID()] = chg.Key
		d.chans[ch.tag] = ch
	})
	if err != nil {
		return CollectionID{}, err
	}
	return cid, nil
}

// buildRecord signs one write per change, all of one record, on top of s
// (§9.2 "Building a write"), and returns them with the outbox entry that
// marks the record dirty in ch: the next push publishes the record's state
// (§10.7). It does not add them to s. A write that would not fit one
// message alone gives ErrTooLarge (§10.6).
func (d *Device) buildRecord(s *record.State, w *record.Writer, ch *channel, changes []record.Change) ([]*record.Write, outMsg, error) {
	ws := make([]*record.Write, 0, len(changes))
	for _, c := range changes {
		x, _, err := s.Build(w, c)
		if err != nil {
			return nil, outMsg{}, err
		}
		pt, err := EncodeRecordPayload(&RecordPayload{Record: c.Record, Writes: signedWrites(x)})
		if err != nil {
			return nil, outMsg{}, err
		}
		if roster.MessageSize(len(pt)) >= hub.MaxMessage {
			return nil, outMsg{}, fmt.Errorf("%w: %d-byte write", ErrTooLarge, len(pt))
		}
		ws = append(ws, x)
	}
	return ws, outMsg{channel: ch.tag, rec: changes[0].Record, dirty: true}, nil
}

// writerFor returns the Writer for data writes in coll's current epoch,
// whose channel is ch: ref is the head of the followed roster (§8.3).
// d.mu is held.
func (d *Device) writerFor(coll *collection, ch *channel) (*record.Writer, error) {
	r, ok := coll.chain.Roster()
	if !ok || coll.chain.Status() != roster.StatusFollowing {
		return nil, fmt.Errorf("%w: roster %v", ErrNotWritable, coll.chain.Status())
	}
	st := r.State()
	m, ok := st.Member(d.id.UID)
	switch {
	case st.Deleted:
		return nil, fmt.Errorf("%w: deleted (§11.9)", ErrNotWritable)
	case !ok || (m.Role != roster.RoleOwner && m.Role != roster.RoleWriter):
		return nil, fmt.Errorf("%w: the user is not the owner or a writer (§8.3)", ErrNotWritable)
	}
	n, _ := r.Counter(r.Head().ID())
	return &record.Writer{Key: d.id.SignKey, Device: d.dev, Clock: d.clock, Ref: r.Head().ID(), Epoch: n}, nil
}

// currentChannel returns the channel of coll's current epoch, if the device
// holds its key and the key matches the epoch's commitment. d.mu is held.
func (d *Device) currentChannel(coll *collection) (*channel, error) {
	r, ok := coll.chain.Roster()
	if !ok {
		return nil, fmt.Errorf("%w: roster not known yet", ErrNotWritable)
	}
	key, ok := coll.epochs[r.Epoch()]
	if !ok {
		return nil, fmt.Errorf("%w: no key for the current epoch", ErrNotWritable)
	}
	ch := d.chans[suite.CollectionTag(key, r.Epoch())]
	if err := checkKey(coll, ch); err != nil {
		return nil, err
	}
	return ch, nil
}

// checkKey checks, once per epoch, that the key the device holds for ch is
// the one the epoch's starting statement commits to (§5.7).
func checkKey(coll *collection, ch *channel) error {
	if coll.checked[ch.epoch] {
		return nil
	}
	r, ok := coll.chain.Roster()
	if !ok {
		return fmt.Errorf("%w: roster not known yet", ErrNotWritable)
	}
	st, ok := r.Statement(ch.epoch)
	if !ok || st.State() == nil {
		return fmt.Errorf("%w: epoch statement not followed", ErrNotWritable)
	}
	if st.State().Key.Commit != suite.Commit(ch.key) {
		return fmt.Errorf("%w: epoch %x", ErrKeyCommit, ch.epoch[:8])
	}
	coll.checked[ch.epoch] = true
	return nil
}

// Write makes one local edit of collection c (§9.5): it signs a write with
// full context and base for the change's register (built by tandem/record),
// merges it into the local state at once, and queues it for the next Sync
// as a kind-1 message of its own in the current epoch channel (§10.5,
// §10.7). It fails with ErrUnknownCollection, ErrNotWritable, ErrTooLarge,
// or record's errors (record.ErrDeleted for an edit of a deleted record);
// a failed Write changes nothing.
func (d *Device) Write(c CollectionID, change record.Change) (*record.Write, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	ch, err := d.currentChannel(coll)
	if err != nil {
		return nil, err
	}
	w, err := d.writerFor(coll, ch)
	if err != nil {
		return nil, err
	}
	if r, _ := coll.chain.Roster(); change.Record == roster.MetaRecordID() && r.Owner() != d.id.UID {
		// Refused up front: the group accepts _meta only from the owner (§8.3).
		return nil, fmt.Errorf("%w: %w", ErrNotWritable, roster.ErrMetaNotOwner)
	}
	ws, m, err := d.buildRecord(coll.state, w, ch, []record.Change{change})
	if err != nil {
		return nil, err
	}
	if err := d.applyLocal([]stateWrite{{coll.state, ws[0]}}, []outMsg{m}, nil); err != nil {
		return nil, err
	}
	return ws[0], nil
}

// NewRecordID returns a new random record ID (§7.3, §9.5).
func (d *Device) NewRecordID() ([16]byte, error) {
	var id [16]byte
	_, err := io.ReadFull(d.rand, id[:])
	return id, err
}

// Assign writes value to a register field (§9.2).
func (d *Device) Assign(c CollectionID, rec [16]byte, field string, value []byte) error {
	_, err := d.Write(c, record.Change{Record: rec, Field: field, Op: suite.OpAssign, Value: value})
	return err
}

// Add adds element to a set field (§9.2).
func (d *Device) Add(c CollectionID, rec [16]byte, field string, element []byte) error {
	_, err := d.Write(c, record.Change{Record: rec, Field: field, Op: suite.OpAdd, Element: element})
	return err
}

// Remove removes element from a set field (§9.2): it takes out every add
// the device has seen; a concurrent add wins.
func (d *Device) Remove(c CollectionID, rec [16]byte, field string, element []byte) error {
	_, err := d.Write(c, record.Change{Record: rec, Field: field, Op: suite.OpRemove, Element: element})
	return err
}

// Delete deletes a record with a sticky tombstone (§9.2, §12.3).
func (d *Device) Delete(c CollectionID, rec [16]byte) error {
	_, err := d.Write(c, record.Change{Record: rec, Op: suite.OpDelete})
	return err
}

// Name returns the collection's name from its _meta record: one value, or
// several if concurrent renames left siblings (§9.2).
func (d *Device) Name(c CollectionID) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	var out []string
	for _, s := range coll.state.Values(roster.MetaRecordID(), MetaNameField) {
		out = append(out, string(s.Value))
	}
	return out, nil
}

// stateWrite is a write to add to a state.
type stateWrite struct {
	s *record.State
	w *record.Write
}

// applyLocal commits a local edit to the journal, then applies it: each
// write to its state and each message to the outbox, then extra. A failed
// commit changes nothing (§13.3: a local write is durable before the call
// returns, or it did not happen). d.mu is held.
func (d *Device) applyLocal(ws []stateWrite, msgs []outMsg, extra func()) error {
	if err := d.usable(); err != nil {
		d.delta = Delta{}
		return err
	}
	seq := d.outSeq
	var queued []outMsg
	for _, m := range msgs {
		if m.dirty && d.isDirty(m.channel, m.rec) {
			continue // already queued: the push publishes its state then
		}
		seq++
		m.seq = seq
		queued = append(queued, m)
		d.delta.OutAdd = append(d.delta.OutAdd, savedOut(m))
	}
	msgs = queued
	for _, x := range ws {
		d.delta.Writes = append(d.delta.Writes, x.w)
	}
	if err := d.commit(); err != nil {
		return fmt.Errorf("tandem/client: saving the edit: %w", err)
	}
	d.outSeq = seq
	for _, x := range ws {
		x.s.Add(x.w)
	}
	d.addOutbox(msgs...)
	if extra != nil {
		extra()
	}
	return nil
}

// queuedRec names a record of a channel whose state is queued to publish.
type queuedRec struct {
	channel string
	rec     [16]byte
}

// isDirty reports whether record rec of channel is queued. d.mu is held.
// It is asked for each local edit and, by healing, for every record: the
// outbox keeps a count by record (addOutbox, dropPublished) so that it
// costs no scan of the outbox.
func (d *Device) isDirty(channel string, rec [16]byte) bool {
	return d.queuedRecs[queuedRec{channel, rec}] > 0
}

// addOutbox appends ms to the outbox. d.mu is held.
func (d *Device) addOutbox(ms ...outMsg) {
	for _, m := range ms {
		if m.dirty {
			if d.queuedRecs == nil {
				d.queuedRecs = map[queuedRec]int{}
			}
			d.queuedRecs[queuedRec{m.channel, m.rec}]++
		}
	}
	d.outbox = append(d.outbox, ms...)
}
