package client

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// ErrBroken: a journal commit failed after Sync had changed the device's
// memory; the device refuses further use and must be reopened from its
// journal, which still holds everything committed before.
var ErrBroken = errors.New("tandem/client: device must be reopened after a failed commit")

// commit gives the pending delta to the journal. d.mu is held.
func (d *Device) commit() error {
	x := d.delta
	d.delta = Delta{}
	if d.journal == nil || x.empty() {
		return nil
	}
	x.HLC = d.clock.Last()
	return d.journal.Commit(&x)
}

// commitSynced commits what Sync merged into memory: the staged deltas and
// the current one, in one transaction; a failure breaks the device (see
// Journal). d.mu is held.
func (d *Device) commitSynced() error {
	x := append(d.staged, d.delta)
	d.staged, d.stagedItems, d.stagedBytes = nil, 0, 0
	d.delta = Delta{}
	if d.journal == nil {
		return nil
	}
	xs := make([]*Delta, 0, len(x))
	for i := range x {
		if !x[i].empty() {
			x[i].HLC = d.clock.Last()
			xs = append(xs, &x[i])
		}
	}
	if len(xs) == 0 {
		return nil
	}
	if err := d.journal.Commit(xs...); err != nil {
		d.broken = err
		return fmt.Errorf("%w: %w", ErrBroken, err)
	}
	return nil
}

// syncCommitItems is how many writes and message-index entries a pull
// merges before it commits them: several fetched batches per transaction,
// few enough that the workers keep verifying the read-ahead while it
// commits (docs/decisions/tandem-client-pipeline.md). syncCommitBytes bounds the
// message bytes (held envelopes, fragments, statements) staged meanwhile,
// so that a flood of large held messages is not kept twice in memory
// until the end of the pull (docs/decisions/tandem-client-bounds.md).
const (
	syncCommitItems = 1 << 12
	syncCommitBytes = 4 << 20
)

// stagedSize is what x adds to the staged bytes.
func stagedSize(x *Delta) int {
	n := 0
	for _, h := range x.HeldAdd {
		n += len(h.Envelope)
	}
	for _, f := range x.Fragments {
		n += len(f.Payload)
	}
	for _, st := range x.Statements {
		n += len(st.Payload)
	}
	return n
}

// stageSynced sets aside what Sync merged into memory for the next
// commitSynced, and commits once enough is staged. A local edit's commit
// meanwhile stores only its own delta. d.mu is held.
func (d *Device) stageSynced() error {
	if d.delta.empty() {
		return nil
	}
	d.stagedItems += len(d.delta.Writes) + len(d.delta.Msgs)
	d.stagedBytes += stagedSize(&d.delta)
	d.staged = append(d.staged, d.delta)
	d.delta = Delta{}
	if d.stagedItems < syncCommitItems && d.stagedBytes < syncCommitBytes {
		return nil
	}
	return d.commitSynced()
}

// usable reports ErrBroken once a commit failed. d.mu is held.
func (d *Device) usable() error {
	if d.broken != nil {
		return fmt.Errorf("%w: %w", ErrBroken, d.broken)
	}
	return nil
}

// keep adds w to s and records it for the journal if s kept it. d.mu is held.
func (d *Device) keep(s *record.State, w *record.Write) {
	if s.Add(w) {
		d.delta.Writes = append(d.delta.Writes, w)
	}
}

// mark sets a message's state and records it for the journal. d.mu is held.
func (d *Device) mark(id hub.ID, state MsgState) {
	info := d.msgs[id]
	if info == nil {
		return
	}
	info.done = state != MsgTodo
	info.state = state
	d.delta.Msgs = append(d.delta.Msgs, SavedMsg{ID: id, Channel: info.channel, State: state, Hash: info.hash, Kind: uint8(info.kind), Rec: info.rec, Writes: joinIDs(info.writes), Size: info.size, FirstSeen: info.firstSeen})
}

// Source is a device's persisted state, read back by Restore in the order
// the methods are listed. Each method calls fn once per item, in the order
// they were committed, and stops at fn's first error.
type Source interface {
	// Writes lists the kept writes of one scope (home, or a collection):
	// their stored bytes (record.AppendStored) and write IDs. A write
	// committed again (a smaller signature, a damaged copy fetched again)
	// may come more than once until the store prunes it, the later copy
	// last; the state keeps one.
	Writes(ctx context.Context, scope [16]byte, fn func(stored []byte, id [32]byte) error) error
	// OtherWrites lists, in one pass, the kept writes of every scope but
	// the one given, with their scope.
	OtherWrites(ctx context.Context, not [16]byte, fn func(scope [16]byte, stored []byte, id [32]byte) error) error
	Statements(ctx context.Context, fn func(SavedStatement) error) error
	Fragments(ctx context.Context, fn func(SavedFragment) error) error
	Msgs(ctx context.Context, fn func(SavedMsg) error) error
	Outbox(ctx context.Context, fn func(SavedOut) error) error
	Held(ctx context.Context, fn func(SavedHeld) error) error
	Rotations(ctx context.Context, fn func(SavedRotation) error) error
	Cursor(ctx context.Context) (hub.Cursor, error)
}

// Restore loads a device's persisted state into a device New just made
// with the same secret, device ID and HLC. Stored writes are not verified
// again (record.Validator.Reload); statements and held messages are, as
// they are few.
func (d *Device) Restore(ctx context.Context, src Source) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.restoreWrites(ctx, src, d.home, d.id.HomeScope); err != nil {
		return err
	}
	d.followMemberships()
	err := src.Statements(ctx, func(s SavedStatement) error {
		coll := d.colls[s.Collection]
		if coll == nil {
			return nil // a membership no longer active
		}
		p, err := DecodePayload(s.Payload, [16]byte(s.Collection))
		if err != nil || p.Record == nil || len(p.Record.Writes) != 1 {
			return fmt.Errorf("stored statement: %w", err)
		}
		st, err := roster.NewStatement(p.Record.Writes[0].Body, p.Record.Writes[0].Sig)
		if err != nil {
			return err
		}
		if err := coll.chain.Add(st, roster.Origin{Channel: s.Origin}); err != nil && !errors.Is(err, roster.ErrLimit) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tandem/client: restore statements: %w", err)
	}
	err = src.Fragments(ctx, func(s SavedFragment) error {
		if coll := d.colls[s.Collection]; coll != nil {
			if f, err := roster.DecodeFragment(s.Payload, 0); err == nil {
				coll.chain.AddFragment(f)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tandem/client: restore fragments: %w", err)
	}
	if err := d.restoreOtherWrites(ctx, src); err != nil {
		return err
	}
	if err := d.restoreIndex(ctx, src); err != nil {
		return err
	}
	if err := src.Rotations(ctx, d.restoreRotation); err != nil {
		return fmt.Errorf("tandem/client: restore rotations: %w", err)
	}
	cur, err := src.Cursor(ctx)
	if err != nil {
		return fmt.Errorf("tandem/client: restore cursor: %w", err)
	}
	d.cursor = cur
	d.delta = Delta{}
	if dm, ok := src.(interface{ DamagedWrites() [][32]byte }); ok {
		d.refetchDamaged(dm.DamagedWrites())
	}
	if dm, ok := src.(interface{ DamagedOutbox() []uint64 }); ok {
		d.dropDamagedOutbox(dm.DamagedOutbox())
	}
	for _, coll := range d.colls {
		d.settleState(coll, &SyncReport{}) // the rule, for what was loaded (refused.go); its marks are saved at the next commit
	}
	return nil
}

// refetchDamaged handles writes the store found damaged and left out: the
// hub messages that carry them are read again at the next Sync (their
// writes enter again, verified as any received write is); one no message
// carries is gone from this device. Either way it is reported
// (DamagedWrites) and logged. d.mu is held.
func (d *Device) refetchDamaged(ids [][32]byte) {
	if len(ids) == 0 {
		return
	}
	d.damaged += len(ids)
	want := make(map[[32]byte]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	again := 0
	for id, m := range d.msgs {
		if slices.ContainsFunc(m.writes, func(w [32]byte) bool { return want[w] }) {
			d.mark(id, MsgTodo)
			again++
		}
	}
	d.log.Warn("tandem/client: damaged writes in the device's database were dropped; their messages are read again from the hub", "writes", len(ids), "messages", again)
}

// dropDamagedOutbox handles unsent messages whose outbox rows the store
// found damaged and left out: they are never sent (a changed envelope
// would reach the others as junk, a changed channel in the wrong place),
// their rows are deleted at the next commit, and they are reported
// (DamagedWrites) and logged. d.mu is held.
func (d *Device) dropDamagedOutbox(seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	d.damaged += len(seqs)
	for _, seq := range seqs {
		d.outSeq = max(d.outSeq, seq) // a new entry must not take a seq whose row is still there
		d.delta.OutDel = append(d.delta.OutDel, seq)
	}
	d.log.Error("tandem/client: damaged unsent messages in the device's database were dropped and will not be sent", "messages", len(seqs))
}

// DamagedWrites returns how many stored writes and unsent messages failed
// their integrity check when the device was restored: a write was dropped,
// never shown, and the messages carrying it are read again from the hub;
// an unsent message was dropped without being sent.
func (d *Device) DamagedWrites() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.damaged
}

// storedRow is one stored write on its way into a state.
type storedRow struct {
	scope [16]byte
	b     []byte
	id    [32]byte
}

// restoreOtherWrites loads every collection's writes: the database is read
// on this goroutine while a second one, which ends before this returns,
// rebuilds the states, so reading and merging overlap. d.mu is held.
func (d *Device) restoreOtherWrites(ctx context.Context, src Source) error {
	batches := make(chan []storedRow, 8)
	done := make(chan error, 1)
	go func() {
		var err error
		for batch := range batches {
			for _, r := range batch {
				if err != nil {
					break
				}
				coll := d.colls[CollectionID(r.scope)]
				if coll == nil {
					continue // a collection no longer followed
				}
				var w *record.Write
				if w, err = coll.state.Validator().Reload(r.b, r.id); err == nil && !d.restoreRefused(coll, w) {
					coll.state.Add(w)
				}
			}
		}
		done <- err
	}()
	batch := make([]storedRow, 0, 1024)
	err := src.OtherWrites(ctx, d.id.HomeScope, func(scope [16]byte, b []byte, id [32]byte) error {
		batch = append(batch, storedRow{scope, b, id})
		if len(batch) == cap(batch) {
			batches <- batch
			batch = make([]storedRow, 0, 1024)
		}
		return nil
	})
	if len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	werr := <-done
	if err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("tandem/client: restore writes: %w", err)
	}
	return nil
}

func (d *Device) restoreWrites(ctx context.Context, src Source, s *record.State, scope [16]byte) error {
	v := s.Validator()
	err := src.Writes(ctx, scope, func(b []byte, id [32]byte) error {
		w, err := v.Reload(b, id)
		if err != nil {
			return err
		}
		s.Add(w)
		return nil
	})
	if err != nil {
		return fmt.Errorf("tandem/client: restore writes: %w", err)
	}
	return nil
}

// restoreIndex restores the message index, the outbox and the held
// messages. d.mu is held.
func (d *Device) restoreIndex(ctx context.Context, src Source) error {
	err := src.Msgs(ctx, func(m SavedMsg) error {
		if _, ok := d.msgs[m.ID]; !ok {
			d.order = append(d.order, m.ID)
		}
		if m.State == MsgPending {
			m.State = MsgTodo // judged again from the hub: what waited lived in memory
		}
		info := &msgInfo{channel: m.Channel, done: m.State != MsgTodo, state: m.State, hash: m.Hash, kind: msgKind(m.Kind), rec: m.Rec, size: m.Size, firstSeen: m.FirstSeen}
		info.writes = splitIDs(m.Writes)
		d.msgs[m.ID] = info
		if m.Hash != ([32]byte{}) {
			d.byHash[m.Hash] = m.ID
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tandem/client: restore messages: %w", err)
	}
	err = src.Outbox(ctx, func(o SavedOut) error {
		d.addOutbox(outMsg{seq: o.Seq, channel: o.Channel, envelope: o.Envelope, rec: o.Rec, dirty: o.Dirty, kind: msgKind(o.Kind), ids: splitIDs(o.Writes), auto: o.Auto})
		d.outSeq = max(d.outSeq, o.Seq)
		return nil
	})
	if err != nil {
		return fmt.Errorf("tandem/client: restore outbox: %w", err)
	}
	err = src.Held(ctx, func(h SavedHeld) error {
		o, err := d.open(hub.Body{ID: h.ID, Channel: h.Channel, Envelope: h.Envelope}, nil)
		if err != nil || o == nil || o.ch.coll == nil {
			return nil // judged again from the hub
		}
		ws, err := verifyData(o.ch.coll, o.p.Writes)
		if err != nil {
			return nil
		}
		d.held = append(d.held, &heldMsg{id: h.ID, ch: o.ch, hash: o.hash, env: h.Envelope, seen: h.FirstSeen, data: ws})
		return nil
	})
	if err != nil {
		return fmt.Errorf("tandem/client: restore held: %w", err)
	}
	for _, m := range d.msgs { // what refused them, as it stands now (bounds.go)
		if ch := d.chans[m.channel]; m.state == MsgRefused && ch != nil {
			m.level = d.refusalLevel(m, ch.coll)
		}
	}
	return nil
}

// View calls fn with collection c's merged state and followed roster (nil
// while not known), under the device's lock: fn must not keep either or
// call back into the device.
func (d *Device) View(c CollectionID, fn func(s *record.State, r *roster.Roster, st roster.Status)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	coll, ok := d.colls[c]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	r, _ := coll.chain.Roster()
	fn(coll.state, r, coll.chain.Status())
	return nil
}

// Kept calls fn with the write ID of every write held by home and by every
// collection's state (to prune a journal of superseded writes).
func (d *Device) Kept(fn func(id [32]byte)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for w := range d.home.All() {
		fn(w.ID())
	}
	for _, c := range d.colls {
		for w := range c.state.All() {
			fn(w.ID())
		}
		for id := range c.refused {
			fn(id)
		}
	}
}

// ResetHub forgets everything the device knows of its hub: the cursor, the
// message index and the folder's existence. It is how a device moves to
// another hub (§12.4 hub loss, or another account): the next Sync reads the
// new hub from nothing, and its healing publishes everything the device
// holds that the new hub lacks: home, every collection's records and
// roster. Writes, rosters and the outbox are kept.
func (d *Device) ResetHub() error {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	for id := range d.msgs {
		d.delta.Gone = append(d.delta.Gone, id)
	}
	d.delta.Cursor, d.delta.CursorSet = nil, true
	if err := d.commit(); err != nil {
		return err
	}
	d.msgs = map[hub.ID]*msgInfo{}
	d.order = nil
	d.byHash = map[[32]byte]hub.ID{}
	d.cursor = nil
	d.ensured = false
	return nil
}

// MessageCounts counts the messages the device knows in the folder for
// collection c, in the channel of its current epoch: record-state messages
// by record, and roster messages.
func (d *Device) MessageCounts(c CollectionID) (perRecord map[[16]byte]int, rosterMsgs int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	perRecord = map[[16]byte]int{}
	coll := d.colls[c]
	if coll == nil {
		return perRecord, 0
	}
	ch, err := d.currentChannel(coll)
	if err != nil {
		return perRecord, 0
	}
	for _, m := range d.msgs {
		if m.channel != ch.tag {
			continue
		}
		switch m.kind {
		case kindRecord:
			perRecord[m.rec]++
		case kindRoster:
			rosterMsgs++
		}
	}
	return perRecord, rosterMsgs
}
