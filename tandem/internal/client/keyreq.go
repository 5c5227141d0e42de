package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Key requests (§11.4): a member whose device knows of an epoch without
// its key, after KeyRequestAfter without a grant, asks the owner — in the
// owner's inbox and as a notice in the last epoch channel it can read. Any
// owner device answers: a current member gets the key again; someone
// removed gets the signed statements up to their removal, which prove it.

// KeyRequestAfter is how long a device waits for a grant before it asks
// (§11.4: a safety net behind the grant, not a schedule).
const KeyRequestAfter = 10 * time.Minute

type keyReq struct {
	id   hub.ID
	coll CollectionID
	have [32]byte
	by   [32]byte
}

// stashKeyReq verifies a key request for a collection the user owns and
// keeps it for judgeShares. d.mu is held.
func (d *Device) stashKeyReq(id hub.ID, c CollectionID, have, by [32]byte, sig [64]byte) error {
	r, ok := d.colls[c].chainRoster()
	if !ok || r.Owner() != d.id.UID {
		return errIgnore // not ours to answer
	}
	if !suite.VerifyStrict(by[:], suite.KeyReqSigInput([16]byte(c), have, by), sig[:]) {
		return fmt.Errorf("%w: key request sig does not verify (§11.4)", ErrInvite)
	}
	d.share.keyreqs[id] = &keyReq{id: id, coll: c, have: have, by: by}
	d.mark(id, MsgPending)
	return errStashed
}

// answerKeyReqs answers the key requests stashed this pull. d.mu is held.
func (d *Device) answerKeyReqs() {
	for id, k := range d.share.keyreqs {
		delete(d.share.keyreqs, id)
		coll := d.colls[k.coll]
		r, ok := coll.chainRoster()
		if !ok {
			continue
		}
		m, member := r.State().Member(k.by)
		uka, removedAt, removed := removal(r, k.by)
		switch {
		case !member && !removed:
		case !d.mayAnswer(k.coll, k.by, answerKeyReq):
			// a copy answered moments ago, or over the answer rate
		case member:
			if err := d.grant(coll, r, k.by, m.UKA, "", true); err != nil {
				d.log.Warn("tandem/client: answering a key request", "err", err)
			}
		default:
			d.sendRosterReply(k, uka, r, removedAt)
		}
		d.mark(id, MsgDone)
	}
}

// removal finds the statement that removed uid and the agreement key the
// roster last listed for them.
func removal(r *roster.Roster, uid [32]byte) (uka [32]byte, at int, ok bool) {
	sts := r.Statements()
	for i := 1; i < len(sts); i++ {
		prev, was := sts[i-1].State().Member(uid)
		if _, still := sts[i].State().Member(uid); was && !still {
			uka, at, ok = prev.UKA, i, true
		}
	}
	return uka, at, ok
}

// sendRosterReply sends a removed user the statements from the one they
// have up to the one that removed them (§11.4). d.mu is held.
func (d *Device) sendRosterReply(k *keyReq, uka [32]byte, r *roster.Roster, removedAt int) {
	sts := r.Statements()
	from := 0
	for i, st := range sts {
		if st.ID() == k.have {
			from = i + 1
		}
	}
	var payloads []tjson.Bytes
	for _, st := range sts[from : removedAt+1] {
		p, err := EncodeRecordPayload(&RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: st.Body(), Sig: st.Sig()}}})
		if err != nil {
			return
		}
		payloads = append(payloads, tjson.Bytes(p))
	}
	pt, err := json.Marshal(map[string]any{"type": "roster", "c": tjson.Bytes(k.coll[:]), "statements": payloads})
	if err == nil {
		err = d.sealInbox(k.by, uka, pt, true)
	}
	if err != nil {
		d.log.Warn("tandem/client: answering a removed user's key request", "err", err)
	}
}

// takeRosterReply follows the statements of a roster reply: signed by the
// owner, they prove themselves (§11.4); read from the inbox, each counts
// as announced. d.mu is held.
func (d *Device) takeRosterReply(c CollectionID, payloads []tjson.Bytes) error {
	coll := d.colls[c]
	if coll == nil {
		return errIgnore
	}
	for _, b := range payloads {
		p, err := DecodePayload(b, [16]byte(c))
		if err != nil || p.Record == nil || len(p.Record.Writes) != 1 {
			return fmt.Errorf("%w: roster reply: %w", ErrGrant, err)
		}
		st, err := roster.NewStatement(p.Record.Writes[0].Body, p.Record.Writes[0].Sig)
		if err != nil {
			return err
		}
		coll.chain.Announce(st.ID())
		if err := coll.chain.Add(st, roster.Origin{}); err != nil {
			return err
		}
		d.delta.Statements = append(d.delta.Statements, savedStatement(c, [32]byte{}, st.Body(), st.Sig()))
	}
	return errIgnore // applied; nothing more to judge
}

// askForKeys sends a key request for every followed collection whose
// current epoch's key the device has lacked for KeyRequestAfter (§11.4).
// d.mu is held.
func (d *Device) askForKeys() {
	now := d.now()
	for c, coll := range d.colls {
		r, ok := coll.chain.Roster()
		if !ok || r.Owner() == d.id.UID {
			continue
		}
		_, listed := r.State().Member(d.id.UID)
		if _, have := coll.epochs[r.Epoch()]; have || !listed {
			delete(d.keyWait, c) // has the key, or was removed: nothing to ask
			continue
		}
		since, waiting := d.keyWait[c]
		if !waiting {
			d.keyWait[c] = now
			continue
		}
		if now.Sub(since) < KeyRequestAfter {
			continue
		}
		d.keyWait[c] = now // the next request, if any, in another KeyRequestAfter
		d.sendKeyReq(coll, r)
	}
}

func (d *Device) sendKeyReq(coll *collection, r *roster.Roster) {
	have := r.Head().ID()
	sig := ed25519Sign(d, suite.KeyReqSigInput([16]byte(coll.id), have, d.id.UID))
	pt, err := json.Marshal(map[string]any{"type": "keyreq", "c": tjson.Bytes(coll.id[:]), "have": tjson.Bytes(have[:]),
		"by": tjson.Bytes(d.id.UID[:]), "sig": tjson.Bytes(sig)})
	if err != nil {
		return
	}
	if m, ok := r.State().Member(r.Owner()); ok {
		if err := d.queueInbox(r.Owner(), m.UKA, pt); err != nil {
			d.log.Warn("tandem/client: key request", "err", err)
		}
	}
	// And a notice in the last epoch channel the device can read.
	var last *channel
	for _, ch := range d.chans {
		if ch.coll == coll && (last == nil || r.Contains(ch.epoch) && isLater(r, ch.epoch, last.epoch)) {
			last = ch
		}
	}
	if last != nil {
		if env, err := suite.SealEnvelope(suite.KindRequest, last.key, last.tag, pt, d.rand); err == nil {
			d.enqueue(outMsg{channel: last.tag, envelope: env})
		}
	}
	d.log.Info("tandem/client: no key for the current epoch yet; asked the owner", "collection", coll.id)
}

func isLater(r *roster.Roster, a, b [32]byte) bool { return r.IsAncestor(b, a) }

// SetClock replaces the device's wall clock (tests of the waits of §9.4
// and §11.4); the HLC keeps its own.
func (d *Device) SetClock(now func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.now = now
}
