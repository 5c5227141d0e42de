package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Key rotation (§11.6) as one journalled change. Begin (steps 1–2) signs
// the statement and fixes the inventory and key, writes the note to home
// and the change to the journal before anything is exported; the steps
// that talk to the hub (3–6) run in every Sync until the change is done,
// resuming from the journal after a crash with the same signed bytes.
// See docs/decisions/tandem-rotation.md.

// Rotation steps, as the journal records them.
const (
	rotPrepared  = 2 // statement, key, inventory fixed and saved
	rotUploaded  = 3 // fragments, snapshot and roster in the new channel
	rotAnnounced = 4 // statement in the old channel; key in home, note gone
	rotGranted   = 5 // grants queued to every remaining member
)

// ErrInFlight: another device of the owner has a sharing change in flight
// for this collection (§11.7); Flight in the error says which.
var ErrInFlight = errors.New("tandem/client: another device's sharing change is in flight")

// rotation is a key change in progress.
type rotation struct {
	coll     CollectionID
	step     int
	st       *roster.Statement
	key      [32]byte
	inv      []byte
	oldEpoch [32]byte
	oldKey   [32]byte
}

// SavedRotation is a rotation in the journal.
type SavedRotation struct {
	Collection CollectionID
	Step       int
	Payload    []byte // the statement as a _roster payload
	Key        [32]byte
	Inventory  []byte
	OldEpoch   [32]byte
	OldKey     [32]byte
}

func (r *rotation) saved() SavedRotation {
	p, _ := EncodeRecordPayload(&RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: r.st.Body(), Sig: r.st.Sig()}}})
	return SavedRotation{Collection: r.coll, Step: r.step, Payload: p, Key: r.key, Inventory: append([]byte{}, r.inv...), OldEpoch: r.oldEpoch, OldKey: r.oldKey}
}

// flightNote is the note in home (§6.2 flight, §11.7): the change in
// flight, with its key and the statement it leads to.
type flightNote struct {
	St   tjson.Bytes `json:"st"`
	K    tjson.Bytes `json:"k"`
	What string      `json:"what"`
	Dev  tjson.Bytes `json:"dev"`
}

const fFlight = "flight"

// RotationKind is what a rotation does.
type RotationKind int

// Rotation kinds.
const (
	RotateRemove  RotationKind = iota // remove a member (§7.2)
	RotateDemote                      // make a writer a reader
	RotateNewKey                      // a new key, same members
	RotatePrivate                     // remove every member but the owner (§7.4)
)

// BeginRotation starts a key change of collection c (§11.6 steps 1–2): the
// caller has just synced (step 1). kind says what; uid names the member.
// Nothing is exported here: the next Sync uploads, announces and grants.
func (d *Device) BeginRotation(c CollectionID, kind RotationKind, uid [32]byte, what string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	coll := d.colls[c]
	r, ok := coll.chainRoster()
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	case r.Owner() != d.id.UID:
		return ErrNotOwner
	case d.rotations[c] != nil:
		return fmt.Errorf("%w: this device's own change is still running", ErrInFlight)
	}
	if note, theirs := d.flightOf(c); theirs {
		return fmt.Errorf("%w: %s", ErrInFlight, note.What)
	}
	oldCh, err := d.currentChannel(coll)
	if err != nil {
		return err
	}
	hlc, err := d.clock.Next()
	if err != nil {
		return err
	}
	signer := roster.Signer{Key: d.id.SignKey, Dot: suite.Dot{Device: d.dev, HLC: hlc}, Rand: d.rand}
	view := roster.RecordState{State: coll.state}
	var chg *roster.Change
	switch kind {
	case RotateRemove:
		chg, err = roster.RemoveMember(r, signer, uid, view)
	case RotateDemote:
		chg, err = roster.ChangeRole(r, signer, uid, roster.RoleReader, view)
	case RotatePrivate:
		var others [][32]byte
		for _, m := range r.State().Members {
			if m.Role != roster.RoleOwner {
				others = append(others, m.UID)
			}
		}
		chg, err = roster.RemoveMembers(r, signer, others, view)
	default:
		chg, err = roster.Rotate(r, signer, view)
	}
	if err != nil {
		return err
	}
	rot := &rotation{coll: c, step: rotPrepared, st: chg.Statement, key: chg.Key, inv: chg.Inventory.Bytes(), oldEpoch: oldCh.epoch, oldKey: oldCh.key}
	stID := rot.st.ID()
	note, _ := json.Marshal(flightNote{St: tjson.Bytes(stID[:]), K: tjson.Bytes(rot.key[:]), What: what, Dev: tjson.Bytes(d.dev[:])})
	rec := suite.NamedRecordID(membershipName(c))
	if err := d.homeChanges([]record.Change{{Record: rec, Field: fFlight, Op: suite.OpAssign, Value: note}}); err != nil {
		return err
	}
	d.delta.Rotations = append(d.delta.Rotations, rot.saved())
	if err := d.commit(); err != nil {
		return err
	}
	d.rotations[c] = rot
	return nil
}

// flightOf reads the note in home for c: ok when another device's note is
// there. d.mu is held.
func (d *Device) flightOf(c CollectionID) (flightNote, bool) {
	rec := suite.NamedRecordID(membershipName(c))
	var n flightNote
	raw := d.regString(d.home, rec, fFlight)
	if raw == "" || tjson.Unmarshal([]byte(raw), &n) != nil {
		return n, false
	}
	return n, string(n.Dev) != string(d.dev[:])
}

// SetStepHook sets a function called at each boundary of a rotation's
// steps and after each upload ("prepared", "upload", "uploaded",
// "announce", "announced", "granted", "retired"); the crash tests kill the
// process there.
func (d *Device) SetStepHook(fn func(point string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hook = fn
}

// at calls the step hook. d.mu is not held.
func (d *Device) at(point string) {
	d.mu.Lock()
	h := d.hook
	d.mu.Unlock()
	if h != nil {
		h(point)
	}
}

// Rotating reports whether this device has a key change of c in progress.
func (d *Device) Rotating(c CollectionID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rotations[c] != nil
}

// runRotations advances every rotation in progress (§11.6 steps 3–6).
// d.mu is not held.
func (d *Device) runRotations(ctx context.Context, s hub.Store, rep *SyncReport) error {
	d.mu.Lock()
	var rots []*rotation
	for _, r := range d.rotations {
		rots = append(rots, r)
	}
	d.mu.Unlock()
	for _, rot := range rots {
		if err := d.runRotation(ctx, s, rot, rep); err != nil {
			return fmt.Errorf("tandem/client: rotation: %w", err)
		}
	}
	return nil
}

func (d *Device) runRotation(ctx context.Context, s hub.Store, rot *rotation, rep *SyncReport) error {
	if rot.step < rotAnnounced {
		switch d.fate(rot) {
		case fateFinished: // announced, by this device or the one that finished it (§11.7)
			if err := d.keepInventory(rot); err != nil {
				return err
			}
			if err := d.rotStep(rot, rotAnnounced); err != nil {
				return err
			}
		case fateDiscarded: // the note naming it is gone and it was never announced
			d.mu.Lock()
			delete(d.rotations, rot.coll)
			d.delta.RotationsDone = append(d.delta.RotationsDone, rot.coll)
			err := d.commitSynced()
			d.mu.Unlock()
			d.log.Info("tandem/client: a sharing change was discarded on another device; dropping it", "collection", rot.coll)
			return err
		}
	}
	d.at("prepared")
	if rot.step == rotPrepared {
		if err := d.uploadEpoch(ctx, s, rot, rep); err != nil {
			return err
		}
		if err := d.rotStep(rot, rotUploaded); err != nil {
			return err
		}
		d.at("uploaded")
	}
	if rot.step == rotUploaded {
		if err := d.announce(ctx, s, rot, rep); err != nil {
			return err
		}
		if !d.Rotating(rot.coll) {
			return nil // abandoned: the collection died
		}
		d.at("announced")
	}
	if rot.step == rotAnnounced {
		if err := d.grantAll(rot); err != nil {
			return err
		}
		if err := d.rotStep(rot, rotGranted); err != nil {
			return err
		}
		if err := d.push(ctx, s, rep); err != nil {
			return err
		}
		d.at("granted")
	}
	if rot.step == rotGranted {
		if err := d.retireOldEpoch(ctx, s, rot, rep); err != nil {
			return err
		}
		d.at("retired")
	}
	return nil
}

// Fates of a rotation not yet announced by this device (§11.7).
const (
	fateOpen = iota
	fateFinished
	fateDiscarded
)

// fate reads what happened to rot while the device was away: announced
// (the chain follows its statement), discarded (no note names it), or
// still open.
func (d *Device) fate(rot *rotation) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll := d.colls[rot.coll]
	if r, ok := coll.chainRoster(); ok && r.Contains(rot.st.ID()) {
		return fateFinished
	}
	note, ok := d.noteOf(rot.coll)
	id := rot.st.ID()
	if !ok || string(note.St) != string(id[:]) {
		return fateDiscarded
	}
	return fateOpen
}

// noteOf reads the flight note in home for c, whichever device wrote it.
// d.mu is held.
func (d *Device) noteOf(c CollectionID) (flightNote, bool) {
	var n flightNote
	raw := d.regString(d.home, suite.NamedRecordID(membershipName(c)), fFlight)
	if raw == "" || tjson.Unmarshal([]byte(raw), &n) != nil || len(n.St) != 32 || len(n.K) != 32 {
		return n, false
	}
	return n, true
}

// Flight returns the change another device of the owner has in flight
// for c (§11.7): what it is, from its note in home.
func (d *Device) Flight(c CollectionID) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, theirs := d.flightOf(c)
	return n.What, theirs
}

// FinishFlight takes over the change another device of the owner left in
// flight (§11.7 "Finishing a change started on …"): the device reads the
// change's own channel, whose key is in the note; if the statement is
// there, the next Sync announces it and carries on as if this device had
// made it. FinishReady tells whether it was found.
func (d *Device) FinishFlight(c CollectionID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, theirs := d.flightOf(c)
	coll := d.colls[c]
	if !theirs || coll == nil {
		return fmt.Errorf("%w: no change of another device in flight", ErrNoRequest)
	}
	epoch, key := [32]byte(n.St), [32]byte(n.K)
	tag := suite.CollectionTag(key, epoch)
	if d.chans[tag] == nil {
		d.chans[tag] = &channel{tag: tag, key: key, coll: coll, epoch: epoch}
		coll.epochs[epoch] = key
	}
	d.finishing[c] = n
	return nil
}

// takeOverFlights turns each change being finished into this device's
// rotation once its statement has been read from its channel. d.mu is
// held.
func (d *Device) takeOverFlights() {
	for c, n := range d.finishing {
		coll := d.colls[c]
		if coll == nil {
			delete(d.finishing, c)
			continue
		}
		var st *roster.Statement
		for _, x := range coll.chain.Statements() {
			if id := x.ID(); string(id[:]) == string(n.St) {
				st = x
			}
		}
		old, err := d.currentChannel(coll)
		if st == nil || err != nil {
			continue // not read yet, or never uploaded: FinishReady says so
		}
		rot := &rotation{coll: c, step: rotUploaded, st: st, key: [32]byte(n.K), oldEpoch: old.epoch, oldKey: old.key}
		d.rotations[c] = rot
		d.delta.Rotations = append(d.delta.Rotations, rot.saved())
		delete(d.finishing, c)
	}
}

// FinishReady reports whether a change being finished was found and taken
// over (then the next Sync completes it).
func (d *Device) FinishReady(c CollectionID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, waiting := d.finishing[c]
	return !waiting && d.rotations[c] != nil
}

// DiscardFlight discards the change another device of the owner left in
// flight, with the user's consent (§11.7): its note leaves home, so that
// device, when it returns and finds no announcement, drops its journal.
func (d *Device) DiscardFlight(c CollectionID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, theirs := d.flightOf(c); !theirs {
		return fmt.Errorf("%w: no change of another device in flight", ErrNoRequest)
	}
	delete(d.finishing, c)
	rec := suite.NamedRecordID(membershipName(c))
	if err := d.homeChanges([]record.Change{{Record: rec, Field: fFlight, Op: suite.OpAssign, Value: nil}}); err != nil {
		return err
	}
	return d.commit()
}

// keepInventory gives the chain the new epoch's inventory from the
// journal, and journals it as fragments, when the chain lacks it (another
// device announced the change). d.mu is not held.
func (d *Device) keepInventory(rot *rotation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll := d.colls[rot.coll]
	epoch := rot.st.ID()
	r, ok := coll.chainRoster()
	if !ok || len(rot.inv) == 0 {
		return nil
	}
	if _, have := r.Inventory(epoch); have {
		return nil
	}
	if err := coll.chain.SetInventory(epoch, rot.inv); err != nil {
		return err
	}
	return d.journalInventory(coll, epoch, rot.inv)
}

// journalInventory saves an epoch's inventory as its fragments, which
// restore re-assembles. d.mu is held.
func (d *Device) journalInventory(coll *collection, epoch [32]byte, inv []byte) error {
	frags, err := roster.Split(epoch, inv, SoftMessage)
	if err != nil {
		return err
	}
	for _, f := range frags {
		b, err := f.Encode()
		if err != nil {
			return err
		}
		d.delta.Fragments = append(d.delta.Fragments, SavedFragment{Collection: coll.id, Payload: b})
	}
	return nil
}

// rotStep records progress in the journal.
func (d *Device) rotStep(rot *rotation, step int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	rot.step = step
	d.delta.Rotations = append(d.delta.Rotations, rot.saved())
	return d.commitSynced()
}

// appendIn seals and appends one kind-1 payload in channel ch, recording
// the message. d.mu is not held.
func (d *Device) appendIn(ctx context.Context, s hub.Store, ch *channel, pt []byte, kind msgKind, rec [16]byte, ids [][32]byte, rep *SyncReport) error {
	env, err := suite.SealEnvelope(suite.KindRecord, ch.key, ch.tag, pt, d.rand)
	if err != nil {
		return err
	}
	id, err := s.Append(ctx, ch.tag, env)
	if err != nil {
		return err
	}
	rep.Published++
	d.at("upload")
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordAppended(id, ch.tag, env, kind, rec, ids)
	return d.commitSynced()
}

// uploadEpoch is step 3: the inventory fragments, the snapshot data and
// the full roster ending in the new statement, in the new channel.
func (d *Device) uploadEpoch(ctx context.Context, s hub.Store, rot *rotation, rep *SyncReport) error {
	d.mu.Lock()
	coll := d.colls[rot.coll]
	epoch := rot.st.ID()
	ch := &channel{tag: suite.CollectionTag(rot.key, epoch), key: rot.key, coll: coll, epoch: epoch}
	d.chans[ch.tag] = ch // the owner reads its own draft channel
	frags, err := roster.Split(epoch, rot.inv, SoftMessage)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	inv, err := roster.DecodeInventory(epoch, rot.inv)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	var parts []part
	var recs [][16]byte
	for rec := range coll.state.Records() {
		var listed []*record.Write
		for _, w := range coll.state.Writes(rec) {
			if inv.Lists(rec, w.ID()) {
				listed = append(listed, w)
			}
		}
		ps, err := d.sealParts(ch, rec, listed)
		if err != nil {
			d.mu.Unlock()
			return err
		}
		for range ps {
			recs = append(recs, rec)
		}
		parts = append(parts, ps...)
	}
	r, _ := coll.chain.Roster()
	sts := append(r.Statements(), rot.st)
	d.mu.Unlock()
	for _, f := range frags {
		b, err := f.Encode()
		if err != nil {
			return err
		}
		if err := d.appendIn(ctx, s, ch, b, kindFragment, [16]byte{}, nil, rep); err != nil {
			return err
		}
	}
	for i, p := range parts {
		id, err := s.Append(ctx, ch.tag, p.env)
		if err != nil {
			return err
		}
		rep.Published++
		d.at("upload")
		d.mu.Lock()
		d.recordAppended(id, ch.tag, p.env, kindRecord, recs[i], p.ids)
		err = d.commitSynced()
		d.mu.Unlock()
		if err != nil {
			return err
		}
	}
	for _, st := range sts {
		pt, err := EncodeRecordPayload(&RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: st.Body(), Sig: st.Sig()}}})
		if err != nil {
			return err
		}
		if err := d.appendIn(ctx, s, ch, pt, kindRoster, rosterRecordID, [][32]byte{st.ID()}, rep); err != nil {
			return err
		}
	}
	return nil
}

// announce is step 4: the statement in the old channel's _roster — the
// moment the change happens — then the key into home and the note out.
func (d *Device) announce(ctx context.Context, s hub.Store, rot *rotation, rep *SyncReport) error {
	old := &channel{tag: suite.CollectionTag(rot.oldKey, rot.oldEpoch), key: rot.oldKey, epoch: rot.oldEpoch}
	pt, err := EncodeRecordPayload(&RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: rot.st.Body(), Sig: rot.st.Sig()}}})
	if err != nil {
		return err
	}
	d.mu.Lock()
	old.coll = d.colls[rot.coll]
	d.mu.Unlock()
	if err := d.appendIn(ctx, s, old, pt, kindRoster, rosterRecordID, [][32]byte{rot.st.ID()}, rep); err != nil {
		return err
	}
	d.at("announce")
	d.mu.Lock()
	defer d.mu.Unlock()
	coll := d.colls[rot.coll]
	epoch := rot.st.ID()
	if err := coll.chain.Add(rot.st, roster.Origin{Channel: rot.oldEpoch}); err != nil {
		return err
	}
	d.delta.Statements = append(d.delta.Statements, savedStatement(coll.id, rot.oldEpoch, rot.st.Body(), rot.st.Sig()))
	if r, ok := coll.chain.Roster(); !ok || !r.Contains(epoch) || coll.chain.Status() != roster.StatusFollowing {
		// Another successor of the same statement was announced first: the
		// collection is dead (§9.4, §11.7). Nothing more to do here.
		d.log.Warn("tandem/client: the collection died: another device changed its sharing at the same moment", "collection", coll.id)
		delete(d.rotations, rot.coll)
		d.delta.RotationsDone = append(d.delta.RotationsDone, rot.coll)
		return d.commitSynced()
	}
	if len(rot.inv) == 0 { // finishing another device's change: the inventory came from its channel
		r, _ := coll.chain.Roster()
		inv, ok := r.Inventory(epoch)
		if !ok {
			return fmt.Errorf("%w: the change's inventory is not in its channel yet", ErrNotWritable)
		}
		rot.inv = inv.Bytes()
	}
	if err := coll.chain.SetInventory(epoch, rot.inv); err != nil {
		return err
	}
	if err := d.journalInventory(coll, epoch, rot.inv); err != nil {
		return err
	}
	coll.checked[epoch] = true
	coll.epochs[epoch] = rot.key
	d.follow(coll, epoch, rot.key)
	rec := suite.NamedRecordID(membershipName(rot.coll))
	elem, err := keyEntry{Epoch: epoch, K: rot.key}.encode()
	if err != nil {
		return err
	}
	if err := d.homeChanges([]record.Change{
		{Record: rec, Field: fieldKeys, Op: suite.OpAdd, Element: elem},
		{Record: rec, Field: fFlight, Op: suite.OpAssign, Value: nil},
	}); err != nil {
		return err
	}
	rot.step = rotAnnounced
	d.delta.Rotations = append(d.delta.Rotations, rot.saved())
	return d.commitSynced()
}

// grantAll is step 5: a grant of the new key to every remaining member,
// the owner included. d.mu is not held.
func (d *Device) grantAll(rot *rotation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll := d.colls[rot.coll]
	r, ok := coll.chain.Roster()
	if !ok {
		return fmt.Errorf("%w: roster", ErrNotWritable)
	}
	for _, m := range r.State().Members {
		if err := d.sendGrant(coll, r, m.UID, m.UKA, ""); err != nil {
			return err
		}
	}
	return nil
}

// retireOldEpoch is step 6: once the inventory is in the new channel,
// destroy the old epoch's data messages whose every write the new channel
// carries (listed and uploaded) or that are no longer kept; the old roster
// stays, and home keeps the old key.
func (d *Device) retireOldEpoch(ctx context.Context, s hub.Store, rot *rotation, rep *SyncReport) error {
	d.mu.Lock()
	oldTag := suite.CollectionTag(rot.oldKey, rot.oldEpoch)
	inv, err := roster.DecodeInventory(rot.st.ID(), rot.inv)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	var gone []hub.ID
	for id, m := range d.msgs {
		if m.channel != oldTag || m.kind != kindRecord || (m.state != MsgDone && m.state != MsgOwn) {
			continue
		}
		kept := d.keptIDs(d.currentTag(rot.coll), m.rec)
		ok := true
		for _, w := range m.writes {
			if kept[w] && !inv.Lists(m.rec, w) {
				ok = false // a late write not carried: its author signs it again first
				break
			}
		}
		if ok {
			gone = append(gone, id)
		}
	}
	d.mu.Unlock()
	if len(gone) > 0 {
		if err := s.Destroy(ctx, gone); err != nil {
			return err
		}
		rep.Destroyed += len(gone)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range gone {
		d.forget(id)
	}
	delete(d.rotations, rot.coll)
	d.delta.RotationsDone = append(d.delta.RotationsDone, rot.coll)
	return d.commitSynced()
}

// currentTag is the channel tag of c's current epoch, or "". d.mu is held.
func (d *Device) currentTag(c CollectionID) string {
	coll := d.colls[c]
	if coll == nil {
		return ""
	}
	ch, err := d.currentChannel(coll)
	if err != nil {
		return ""
	}
	return ch.tag
}

// restoreRotation rebuilds a journalled rotation. d.mu is held.
func (d *Device) restoreRotation(s SavedRotation) error {
	p, err := DecodePayload(s.Payload, [16]byte(s.Collection))
	if err != nil || p.Record == nil || len(p.Record.Writes) != 1 {
		return fmt.Errorf("stored rotation: %w", err)
	}
	st, err := roster.NewStatement(p.Record.Writes[0].Body, p.Record.Writes[0].Sig)
	if err != nil {
		return err
	}
	d.rotations[s.Collection] = &rotation{coll: s.Collection, step: s.Step, st: st, key: s.Key, inv: s.Inventory, oldEpoch: s.OldEpoch, oldKey: s.OldKey}
	return nil
}

// OwnerChange signs a same-epoch statement of collection c (§8.2): a
// reader made a writer (promote set), or the collection deleted (§11.9).
// It is published at the next push.
func (d *Device) OwnerChange(c CollectionID, promote *[32]byte, del bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll := d.colls[c]
	r, ok := coll.chainRoster()
	switch {
	case !ok:
		return fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	case r.Owner() != d.id.UID:
		return ErrNotOwner
	}
	if note, theirs := d.flightOf(c); theirs {
		return fmt.Errorf("%w: %s", ErrInFlight, note.What)
	}
	hlc, err := d.clock.Next()
	if err != nil {
		return err
	}
	signer := roster.Signer{Key: d.id.SignKey, Dot: suite.Dot{Device: d.dev, HLC: hlc}, Rand: d.rand}
	var chg *roster.Change
	if del {
		chg, err = roster.Delete(r, signer)
	} else {
		chg, err = roster.ChangeRole(r, signer, *promote, roster.RoleWriter, roster.RecordState{State: coll.state})
	}
	if err != nil {
		return err
	}
	if err := d.queueStatement(coll, chg.Statement); err != nil {
		return err
	}
	return d.commit()
}

// CurrentTag returns the channel tag of c's current epoch ("" if none).
func (d *Device) CurrentTag(c CollectionID) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.currentTag(c)
}

// EpochChannel returns the tag and key of epoch e of collection c, if the
// device holds its key (the tests' hostile writers use it).
func (d *Device) EpochChannel(c CollectionID, e [32]byte) (tag string, key [32]byte, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll := d.colls[c]
	if coll == nil {
		return "", key, false
	}
	key, ok = coll.epochs[e]
	return suite.CollectionTag(key, e), key, ok
}

// CountIn counts the record-state and roster messages the device's index
// holds in channel tag (after a pull, what the hub holds there).
func (d *Device) CountIn(tag string) (records, rosterMsgs int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.msgs {
		if m.channel != tag {
			continue
		}
		switch m.kind {
		case kindRecord:
			records++
		case kindRoster:
			rosterMsgs++
		}
	}
	return records, rosterMsgs
}
