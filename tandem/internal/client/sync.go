package client

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// SyncReport says what one Sync did.
type SyncReport struct {
	Published int // messages appended (or found already on the hub)
	Fetched   int // message bodies downloaded
	Applied   int // messages whose writes or statements were merged
	Ignored   int // messages left alone without error (§10.4, §15): not an envelope, unknown version, a kind this client does not handle
	Skipped   int // new messages in channels this device does not follow (never downloaded)
	Held      int // messages held, after this Sync, for a missing roster statement (§8.3)
	Destroyed int // dominated messages destroyed (§10.7)
	Healed    int // records and statements published again because the hub lacked them (§12.2)
	Declined  int // join requests on an invite that no longer admits, answered with a decline (§11.3)
	OverBound int // messages refused for a holding bound: remembered, not downloaded again until it frees
	Refused   int // the user's own writes newly refused by the group's rules and kept aside (refused.go)
	Excluded  int // other users' writes that left the state: the current epoch does not accept them (§11.6)
	Rejected  []*RejectError
}

// Sync publishes the device's queued writes and merges what the hub holds
// for the channels it follows (§10.1): Changes from its saved cursor, Fetch
// of the new messages of known channels, then for each message: open the
// envelope (§5.4), read the payload strictly (§10.5), verify every
// signature (§5.5), judge roster statements by the chain (§9.4) and data
// writes by roster eligibility (§8.3), and merge (§9.3). Home is read first;
// a membership found there makes the collection's channel followed at once
// (§6.3 step 5), including its messages already on the hub.
//
// Messages in other channels are not downloaded. A message that is not an
// envelope, or of an unknown version, is ignored silently (§10.4, §15). A
// message that fails to open or carries anything invalid is rejected as a
// whole: it is listed in the report's Rejected and changes no state. Sync
// returns an error only when the hub fails; the cursor then stays where it
// was, so the next Sync reads the same changes again (merging is
// idempotent). See docs/decisions/tandem-client-sync.md.
func (d *Device) Sync(ctx context.Context) (*SyncReport, error) {
	if d.store == nil {
		return &SyncReport{}, fmt.Errorf("tandem/client: no hub: use SyncWith")
	}
	return d.SyncWith(ctx, d.store)
}

// SyncWith is Sync through store s: the hub the device syncs with, which
// its owner opens when the network is there (the device itself never needs
// it to start). Every Sync of one device must use the same hub, or one
// whose cursor the device's was reset for.
func (d *Device) SyncWith(ctx context.Context, s hub.Store) (*SyncReport, error) {
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	rep := &SyncReport{}
	d.mu.Lock()
	err := d.usable()
	d.mu.Unlock()
	if err != nil {
		return rep, err
	}
	if err := d.ensure(ctx, s); err != nil {
		return rep, err
	}
	if err := d.pull(ctx, s, rep); err != nil {
		return rep, err
	}
	for range 3 { // a grant may follow a channel whose messages the next pull reads
		d.mu.Lock()
		more := d.judgeShares(rep)
		err := d.commitSynced()
		d.mu.Unlock()
		if err != nil {
			return rep, err
		}
		if !more {
			break
		}
		if err := d.pull(ctx, s, rep); err != nil {
			return rep, err
		}
	}
	d.mu.Lock()
	reread := d.settleAll(rep)
	d.takeOverFlights()
	err = d.commitSynced()
	d.mu.Unlock()
	if err == nil && reread > 0 { // what the writes taken out had superseded (refused.go)
		err = d.pull(ctx, s, rep)
	}
	if err != nil {
		return rep, err
	}
	if err := d.healAfterPull(ctx, s, rep); err != nil {
		return rep, err
	}
	err = d.push(ctx, s, rep)
	if err == nil {
		err = d.runRotations(ctx, s, rep)
	}
	if err == nil {
		err = d.destroyAnswered(ctx, s)
	}
	if err == nil {
		err = d.retireEnded(ctx, s)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.evictHeld() > 0 && err == nil {
		err = d.commitSynced()
	}
	rep.Held = len(d.held)
	return rep, err
}

func (d *Device) ensure(ctx context.Context, s hub.Store) error {
	d.mu.Lock()
	ensured := d.ensured
	d.mu.Unlock()
	if ensured {
		return nil
	}
	if err := s.EnsureFolder(ctx); err != nil {
		return fmt.Errorf("tandem/client: ensure folder: %w", err)
	}
	d.mu.Lock()
	d.ensured = true
	d.mu.Unlock()
	return nil
}

// push publishes the outbox after pull, the device's own messages in order
// first, then automatic answers in order (answers.go): an envelope the folder
// already holds (by H(envelope), §10.2, §10.4: appended by an earlier run
// whose answer was lost, or by another device) is not appended again.
// Each append is committed to the journal with the message it made.
func (d *Device) push(ctx context.Context, s hub.Store, rep *SyncReport) error {
	d.mu.Lock()
	out := make([]outMsg, 0, len(d.outbox))
	for _, auto := range []bool{false, true} {
		for _, m := range d.outbox {
			if m.auto == auto {
				out = append(out, m)
			}
		}
	}
	d.mu.Unlock()
	for _, m := range out {
		if m.dirty {
			if err := d.pushRecord(ctx, s, m, rep); err != nil {
				return err
			}
			continue
		}
		h := hub.Hash(m.envelope)
		d.mu.Lock()
		_, there := d.byHash[h]
		d.mu.Unlock()
		var id hub.ID
		if !there {
			var err error
			if id, err = s.Append(ctx, m.channel, m.envelope); err != nil {
				return fmt.Errorf("tandem/client: publish: %w", err)
			}
		}
		rep.Published++
		d.mu.Lock()
		if !there {
			d.recordAppended(id, m.channel, m.envelope, m.kind, [16]byte{}, m.ids)
		}
		d.dropPublished(m.seq)
		err := d.commitSynced()
		d.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// dropPublished removes outbox message seq, which was published. d.mu is
// held.
func (d *Device) dropPublished(seq uint64) {
	d.outbox = slices.DeleteFunc(d.outbox, func(m outMsg) bool {
		if m.seq != seq {
			return false
		}
		if k := (queuedRec{m.channel, m.rec}); m.dirty {
			if d.queuedRecs[k]--; d.queuedRecs[k] <= 0 {
				delete(d.queuedRecs, k)
			}
		}
		return true
	})
	d.delta.OutDel = append(d.delta.OutDel, seq)
}

func (d *Device) pull(ctx context.Context, s hub.Store, rep *SyncReport) error {
	ch, err := s.Changes(ctx, d.cursor)
	if err != nil {
		return fmt.Errorf("tandem/client: changes: %w", err)
	}
	d.mu.Lock()
	d.index(ch)
	err = d.stageSynced()
	d.mu.Unlock()
	if err != nil {
		return err
	}
	deferred := map[hub.ID]bool{} // refused during this pull: not downloaded again in it
	defer d.fetching.Store(0)
	defer d.fetched.Store(0)
	for {
		todo := d.todo(deferred, rep)
		if len(todo) == 0 {
			break
		}
		d.fetching.Add(int64(len(todo)))
		if err := d.readAll(ctx, s, todo, rep, deferred); err != nil {
			d.mu.Lock()
			if cerr := d.commitSynced(); cerr != nil { // what was merged before the failure
				err = cerr
			}
			d.mu.Unlock()
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range ch.Added {
		if d.chans[a.Channel] == nil {
			rep.Skipped++
		}
	}
	d.cursor = ch.Cursor
	d.delta.Cursor, d.delta.CursorSet = ch.Cursor, true
	d.compact()
	return d.commitSynced()
}

// evictHeld drops held messages older than the holding limit (§9.4): they
// are remembered as refused with the time they were first seen, so a later
// Sync downloads one again only once its collection gained a roster
// statement (bounds.go), not on every Sync. Nothing is destroyed on the
// hub. It reports how many it evicted. d.mu is held.
func (d *Device) evictHeld() int {
	cutoff := d.now().Add(-d.holdFor)
	kept := d.held[:0]
	n := 0
	for _, h := range d.held {
		if h.seen.Before(cutoff) {
			d.delta.HeldDel = append(d.delta.HeldDel, h.id)
			d.refuse(h.id, h.ch.coll, kindRecord, len(h.env), h.seen)
			n++
			continue
		}
		kept = append(kept, h)
	}
	d.held = kept
	if n > 0 {
		d.log.Info("tandem/client: evicted held messages past the holding limit", "n", n, "limit", d.holdFor)
	}
	return n
}

// healAfterPull runs healing (§12.2) after a full pull: if the hub lacks
// anything the device holds, it looks again (another device may have
// restored it meanwhile: look before appending, §10.2) and queues only what
// is still missing. d.mu is not held.
func (d *Device) healAfterPull(ctx context.Context, s hub.Store, rep *SyncReport) error {
	d.mu.Lock()
	recs, sts := d.heal(true)
	d.mu.Unlock()
	if recs+sts == 0 {
		return nil
	}
	if err := d.pull(ctx, s, rep); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	recs, sts = d.heal(false)
	if recs+sts > 0 {
		rep.Healed += recs + sts
		d.log.Info("tandem/client: healing: the hub lacks data this device holds; publishing it again", "records", recs, "statements", sts)
	}
	return d.commitSynced()
}

// index records every message the changes report, with its channel, so
// that a channel followed later can still be read from the hub. d.mu is
// held.
func (d *Device) index(ch hub.Changes) {
	if ch.Reset {
		// The cursor did not count this folder (another server, account or
		// folder, or a new validity): every id known before is void. Read
		// the folder from nothing; merging what is read again is idempotent.
		for id := range d.msgs {
			d.forget(id)
		}
		d.order = nil
		ch.Removed = nil
	}
	listed := make(map[hub.ID]bool, len(ch.Added))
	for _, a := range ch.Added {
		listed[a.ID] = true
	}
	// This device's own appends since the cursor: the changes list each one
	// still in the folder as added; one they don't list was destroyed.
	for id, m := range d.msgs {
		if m.state == MsgOwn {
			if listed[id] {
				d.mark(id, MsgDone)
			} else {
				d.forget(id)
			}
		}
	}
	for _, a := range ch.Added {
		if _, ok := d.msgs[a.ID]; !ok {
			d.msgs[a.ID] = &msgInfo{channel: a.Channel, size: a.Size}
			d.order = append(d.order, a.ID)
			d.mark(a.ID, MsgTodo)
		}
	}
	for _, id := range ch.Removed {
		if m, ok := d.msgs[id]; ok {
			if d.byHash[m.hash] == id {
				delete(d.byHash, m.hash)
			}
			delete(d.msgs, id)
			d.delta.Gone = append(d.delta.Gone, id)
		}
		delete(d.share.pending, id)
		delete(d.share.leaves, id)
		delete(d.share.grants, id)
	}
}

// compact drops removed ids from the order. d.mu is held.
func (d *Device) compact() {
	out := d.order[:0]
	for _, id := range d.order {
		if _, ok := d.msgs[id]; ok {
			out = append(out, id)
		}
	}
	d.order = out
}

// todo lists the unprocessed messages of followed channels, in the order
// the hub reported them, with the messages refused for a holding bound that
// now fit it (bounds.go) and were not refused during this pull. A message
// the hub says is over the message limit is ignored without being
// downloaded (§10.6).
func (d *Device) todo(deferred map[hub.ID]bool, rep *SyncReport) []fetchItem {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []fetchItem
	for _, id := range d.order {
		m, ok := d.msgs[id]
		if !ok || deferred[id] || d.chans[m.channel] == nil {
			continue
		}
		switch {
		case m.state == MsgRefused && !d.mayRetry(m):
			continue
		case m.state != MsgRefused && m.done:
			continue
		case tooLarge(m.size):
			rep.Ignored++
			d.mark(id, MsgDone)
			d.log.Info("tandem/client: message over the size limit ignored without downloading it", "id", id, "size", m.size)
			continue
		}
		out = append(out, fetchItem{id: id, size: m.size})
	}
	return out
}

// opened is a message whose envelope opened and whose payload parsed.
type opened struct {
	id       hub.ID
	ch       *channel
	hash     [32]byte
	env      []byte
	verified []*record.Verified // verifyAll's result
	verr     error
	p        *RecordPayload
	checked  bool               // verified and verr are verifyData's result
	data     []*record.Verified // a data message's writes, once verifyData passed
}

// process judges and merges fetched messages: home first, then roster
// statements, then data, then anything held that may now be judged.
// pre[i], when its channel is still the one bodies[i] is read in, is the
// workers' part of opening bodies[i] (pipeline.go). d.mu is held.
func (d *Device) process(bodies []hub.Body, pre []preOpened, rep *SyncReport, deferred map[hub.ID]bool) {
	var homeMsgs, rosterMsgs, dataMsgs []*opened
	for i, b := range bodies {
		o, err := d.open(b, &pre[i])
		if info := d.msgs[b.ID]; info != nil && b.Err == nil {
			info.hash = hub.Hash(b.Envelope)
			d.byHash[info.hash] = b.ID
		}
		switch {
		case errors.Is(err, errLater):
			deferred[b.ID] = true
			rep.OverBound++
			d.refuse(b.ID, d.chans[b.Channel].coll, kindFragment, len(b.Envelope), d.now())
			d.log.Info("tandem/client: holding limit reached; the message is read again once it frees", "id", b.ID, "err", err)
		case errors.Is(err, errStashed):
			// a sharing message, judged after the pull (share.go)
		case errors.Is(err, errIgnore):
			rep.Ignored++
			d.mark(b.ID, MsgDone)
		case err != nil:
			d.reject(rep, b.ID, b.Channel, hub.Hash(b.Envelope), err)
		case o == nil: // an inventory fragment, taken by the chain
			rep.Applied++
			d.describe(b.ID, kindFragment, [16]byte{}, nil)
			d.mark(b.ID, MsgDone)
		case o.ch.coll == nil:
			homeMsgs = append(homeMsgs, o)
		case o.p.Record == rosterRecordID:
			rosterMsgs = append(rosterMsgs, o)
		default:
			dataMsgs = append(dataMsgs, o)
		}
	}
	verifyAll(dataMsgs)
	for _, o := range homeMsgs {
		d.settle(o, d.applyHome(o), rep, deferred)
	}
	d.followMemberships()
	for _, o := range rosterMsgs {
		d.settle(o, d.applyRoster(o), rep, deferred)
	}
	for _, o := range dataMsgs {
		d.settle(o, d.applyData(o), rep, deferred)
	}
	d.retryHeld(rep)
}

// errIgnore marks a message left alone without error (§10.4, §15).
var errIgnore = errors.New("ignored")

// errLater marks a message a holding limit keeps out for now: it is read
// from the hub again at a later Sync, not rejected.
var errLater = errors.New("read again later")

// errHeld marks a message held for a missing dependency.
var errHeld = errors.New("held")

// open opens a fetched message's envelope and reads its payload, or takes
// pre's result of doing so for the same channel. It returns nil, nil for an
// inventory fragment it handed to the collection's chain.
func (d *Device) open(b hub.Body, pre *preOpened) (*opened, error) {
	if b.Err != nil { // gone, not an envelope, unknown version, too large
		return nil, errIgnore
	}
	ch := d.chans[b.Channel]
	if ch == nil {
		return nil, errIgnore
	}
	switch ch.role {
	case roleInbox:
		return nil, d.stashInbox(b, ch)
	case roleInvite:
		return nil, d.stashJoin(b, ch)
	}
	if pre == nil || pre.ch != ch {
		r := preOpen(ch, d.id.HomeScope, b.Envelope, false)
		pre = &r
	}
	kind, pt, err := pre.kind, pre.pt, pre.err
	switch {
	case errors.Is(err, suite.ErrEnvelopeVersion):
		return nil, errIgnore // §15
	case err == nil && kind == suite.KindRequest && ch.coll != nil:
		return nil, d.stashNotice(b, ch, pt)
	case err != nil:
		return nil, err
	case kind != suite.KindRecord:
		return nil, errIgnore // kind 3 (requests, notices): sharing is out of scope
	}
	p, err := pre.p, pre.perr
	if err != nil {
		return nil, err
	}
	if p.Inventory != nil {
		if ch.coll == nil {
			return nil, fmt.Errorf("%w: inventory fragment in home", ErrPayload)
		}
		f, err := roster.DecodeFragment(p.Inventory, 0)
		if err != nil {
			return nil, err
		}
		if err := d.fragmentRoom(ch.coll, len(f.Bytes)); err != nil {
			return nil, err
		}
		err = ch.coll.chain.AddFragmentIn(f, ch.epoch)
		if errors.Is(err, roster.ErrLimit) {
			return nil, fmt.Errorf("%w: %w", errLater, err) // not final: read again later (§9.4)
		}
		if err != nil {
			return nil, err
		}
		d.delta.Fragments = append(d.delta.Fragments, SavedFragment{Collection: ch.coll.id, Payload: p.Inventory})
		return nil, nil
	}
	return &opened{id: b.ID, ch: ch, hash: hub.Hash(b.Envelope), env: b.Envelope, p: p.Record,
		checked: pre.checked, verified: pre.verified, verr: pre.verr}, nil
}

// settle accounts for one message's verdict. d.mu is held.
func (d *Device) settle(o *opened, err error, rep *SyncReport, deferred map[hub.ID]bool) {
	switch {
	case err == nil:
		rep.Applied++
		d.mark(o.id, MsgDone)
	case errors.Is(err, errHeld):
		seen := d.now()
		if m := d.msgs[o.id]; m != nil && !m.firstSeen.IsZero() {
			seen = m.firstSeen // refused before: §9.4 counts from the first sighting
		}
		if !d.heldRoom(o.ch.coll, len(o.env)) {
			// Not kept, and not downloaded again until the bound frees.
			deferred[o.id] = true
			rep.OverBound++
			d.refuse(o.id, o.ch.coll, kindRecord, len(o.env), seen)
			d.log.Warn("tandem/client: held-message limit reached", "id", o.id, "err", ErrHeldFull)
			return
		}
		h := &heldMsg{id: o.id, ch: o.ch, hash: o.hash, env: o.env, seen: seen, data: o.data}
		d.held = append(d.held, h)
		d.mark(o.id, MsgHeld)
		d.delta.HeldAdd = append(d.delta.HeldAdd, SavedHeld{ID: h.id, Channel: h.ch.tag, Envelope: h.env, FirstSeen: h.seen})
	default:
		d.reject(rep, o.id, o.ch.tag, o.hash, err)
	}
}

func (d *Device) reject(rep *SyncReport, id hub.ID, channel string, hash [32]byte, err error) {
	re := &RejectError{ID: id, Channel: channel, Hash: hash, Err: err}
	rep.Rejected = append(rep.Rejected, re)
	d.mark(id, MsgRejected)
	d.log.Warn("tandem/client: rejected message", "id", id, "channel", channel, "err", err)
}

// retryHeld judges held messages again until none makes progress. d.mu is
// held.
func (d *Device) retryHeld(rep *SyncReport) {
	for progress := true; progress && len(d.held) > 0; {
		progress = false
		held := d.held
		d.held = nil
		for _, h := range held {
			o := &opened{id: h.id, ch: h.ch, hash: h.hash, data: h.data}
			err := d.admitData(o)
			switch {
			case errors.Is(err, errHeld):
				d.held = append(d.held, h)
				continue
			case err == nil:
				rep.Applied++
				d.mark(o.id, MsgDone)
			default:
				d.reject(rep, o.id, o.ch.tag, o.hash, err)
			}
			progress = true
			d.delta.HeldDel = append(d.delta.HeldDel, h.id)
		}
	}
}

// applyHome merges a home message: every write must be the user's own and
// valid, or none is merged (§6.2). d.mu is held.
func (d *Device) applyHome(o *opened) error {
	ws := make([]*record.Write, 0, len(o.p.Writes))
	for i := range o.p.Writes {
		w, err := d.validateHome(&o.p.Writes[i])
		if err != nil {
			return err
		}
		ws = append(ws, w)
	}
	ids := make([][32]byte, len(ws))
	for i, w := range ws {
		ids[i] = w.ID()
	}
	d.describe(o.id, kindRecord, o.p.Record, ids)
	for _, w := range ws {
		d.keep(d.home, w)
	}
	return nil
}

// describe records what a fetched message holds, for garbage collection
// (§10.7) and healing (§12.2). d.mu is held.
func (d *Device) describe(id hub.ID, kind msgKind, rec [16]byte, ids [][32]byte) {
	if m := d.msgs[id]; m != nil {
		m.kind, m.rec, m.writes = kind, rec, ids
	}
}

// applyRoster gives a message's statements to the collection's chain
// (§9.4), read in the epoch channel o.ch. Every statement must verify, or
// none is given. d.mu is held.
func (d *Device) applyRoster(o *opened) error {
	coll := o.ch.coll
	sts := make([]*roster.Statement, 0, len(o.p.Writes))
	ids := make([][32]byte, 0, len(o.p.Writes))
	owner, known := [32]byte{}, false
	if r, ok := coll.chain.Roster(); ok {
		owner, known = r.Owner(), true
	}
	for _, sw := range o.p.Writes {
		st, err := roster.NewStatement(sw.Body, sw.Sig)
		if err != nil {
			return err
		}
		// Judged whole (§9.4, like a data message): a statement the chain
		// would refuse (not the owner's, §8.2) refuses the whole message.
		if known && st.Body().Author != owner {
			return fmt.Errorf("%w: %w", roster.ErrRejected, roster.ErrAuthor)
		}
		sts = append(sts, st)
		ids = append(ids, st.ID())
	}
	d.describe(o.id, kindRoster, rosterRecordID, ids)
	for _, st := range sts {
		if err := coll.chain.Add(st, roster.Origin{Channel: o.ch.epoch}); err != nil {
			return err
		}
		d.delta.Statements = append(d.delta.Statements, savedStatement(coll.id, o.ch.epoch, st.Body(), st.Sig()))
	}
	return nil
}

// applyData merges a message of data writes found in epoch channel o.ch:
// each must be valid (§9.1, §5.5) and eligible there (§8.3), or none is
// merged. Every write is verified first, so a message holding a forgery is
// rejected at once; then admitData judges eligibility. d.mu is held.
func (d *Device) applyData(o *opened) error {
	ws, err := o.verified, o.verr
	if !o.checked {
		ws, err = verifyData(o.ch.coll, o.p.Writes)
	}
	if err != nil {
		return err
	}
	o.data = ws
	ids := make([][32]byte, len(ws))
	for i, x := range ws {
		ids[i] = x.ID()
	}
	d.describe(o.id, kindRecord, o.p.Record, ids)
	return d.admitData(o)
}

// verifyAll verifies the signatures of data messages on every core before
// they are merged one by one: Verify depends only on the write and the
// collection's fixed rules, so the order does not matter. d.mu is held;
// the workers touch nothing else of the device.
func verifyAll(msgs []*opened) {
	var todo []*opened // not verified by the pull's workers (pipeline.go)
	for _, o := range msgs {
		if !o.checked {
			todo = append(todo, o)
		}
	}
	msgs = todo
	workers := min(runtime.GOMAXPROCS(0), len(msgs))
	if workers < 2 {
		return
	}
	next := make(chan *opened)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range next {
				o.verified, o.verr = verifyData(o.ch.coll, o.p.Writes)
				o.checked = true
			}
		}()
	}
	for _, o := range msgs {
		next <- o
	}
	close(next)
	wg.Wait()
}

// verifyData checks every write of a data message with the collection's
// record.Validator, signature included (§5.5, §9.1). This is the one
// signature check of a received data write: roster.Chain.CheckVerified, in
// admitData, takes the result and does not verify again. A bad signature
// is reported as roster.Chain.CheckWrite reports it (roster.ErrRejected,
// roster.ErrSignature), wrapping record.ErrSignature.
// See docs/decisions/tandem-client-verify-once.md.
func verifyData(coll *collection, sws []SignedWrite) ([]*record.Verified, error) {
	ws := make([]*record.Verified, 0, len(sws))
	for i := range sws {
		x, err := coll.state.Validator().Verify(&sws[i].Body, sws[i].Sig)
		if errors.Is(err, record.ErrSignature) {
			return nil, fmt.Errorf("%w: %w: %w", roster.ErrRejected, roster.ErrSignature, err)
		}
		if err != nil {
			return nil, err
		}
		ws = append(ws, x)
	}
	return ws, nil
}

// admitData merges the verified writes o.data of a data message found in
// epoch channel o.ch: each must be eligible there (§8.3), or none is
// merged. A write naming a statement not yet known holds the whole message,
// with its verified writes, so a retry does not verify them again.
// d.mu is held.
func (d *Device) admitData(o *opened) error {
	coll := o.ch.coll
	ws := make([]*record.Write, 0, len(o.data))
	for _, x := range o.data {
		w, err := coll.chain.CheckVerified(x, o.ch.epoch)
		if errors.Is(err, roster.ErrHeld) {
			return fmt.Errorf("%w: %w", errHeld, err)
		}
		if err != nil {
			return err
		}
		if err := checkKey(coll, o.ch); err != nil {
			return err
		}
		if err := carried(coll, o.ch, w); err != nil {
			return err
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		d.keep(coll.state, w)
	}
	return nil
}

// ErrNotCarried: a write read in an earlier epoch's channel after the
// collection moved on, and not listed in the current epoch's inventory:
// the device has changed to the new snapshot (§11.6), and such a write
// enters only if its author signs it again.
var ErrNotCarried = errors.New("tandem/client: write of an earlier epoch not carried into the current one (§11.6)")

// carried checks a write read in channel ch against the collection's
// current epoch: in the current channel anything eligible enters; in an
// earlier one only what the current inventory lists.
func carried(coll *collection, ch *channel, w *record.Write) error {
	r, ok := coll.chain.Roster()
	if !ok || ch.epoch == r.Epoch() {
		return nil
	}
	inv, ok := r.Inventory(r.Epoch())
	if ok && inv.Lists(w.Record(), w.ID()) {
		return nil
	}
	return ErrNotCarried
}
