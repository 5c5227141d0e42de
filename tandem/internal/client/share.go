package client

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Sharing (§11.1–11.5): invites as owner records in home, join requests in
// an invite's channel, grants and declines in the joiner's inbox, leave
// notices in a collection's channel. Messages are opened and verified when
// fetched (stash*), and judged after the pull (judgeShares), when home and
// every roster are as synced as they get: approval reads the roster's whole
// history (§11.3), a grant needs the roster through its statement (§11.4).
// See docs/decisions/tandem-sharing.md.

// Sharing errors.
var (
	// ErrInvite: an invite payload, or a join request, that is not valid
	// or no longer open (§11.1, §11.3).
	ErrInvite = errors.New("tandem/client: invite not valid")
	// ErrInviteExpired: the invite's time is over (§13.3).
	ErrInviteExpired = errors.New("tandem/client: invite expired")
	// ErrGrant: a grant that fails a receiver check (§11.4).
	ErrGrant = errors.New("tandem/client: grant refused")
	// ErrNotOwner: a sharing change asked of a device whose user is not the
	// collection's owner (§8.1).
	ErrNotOwner = errors.New("tandem/client: only the owner changes sharing")
	// ErrNoRequest: no pending request with that ID.
	ErrNoRequest = errors.New("tandem/client: no such request")
	// errUsedUp, errClosed: why an invite no longer admits (§11.3), with
	// ErrInvite and ErrInviteExpired.
	errUsedUp = errors.New("used up")
	errClosed = errors.New("closed")
)

// Why a decline was sent (the "why" of a declined message, an addition to
// §11.4: docs/decisions/tandem-invite-answers.md). A decline without one
// is the owner's.
const (
	WhyUsedUp  = "used"
	WhyExpired = "expired"
	WhyClosed  = "closed"
	WhyEnded   = "ended" // the collection was deleted or can't be administered any more (§11.8, §11.9)
)

// ended reports why collection coll takes nobody in any more: deleted by
// its owner (§11.9), or dead or stalled (§9.4, §11.8); nil while live.
func ended(coll *collection, r *roster.Roster) error {
	switch {
	case coll.chain.Status() != roster.StatusFollowing:
		return fmt.Errorf("%w: dead: can't be administered any more (§11.8)", ErrNotWritable)
	case r.State().Deleted:
		return fmt.Errorf("%w: deleted (§11.9)", ErrNotWritable)
	}
	return nil
}

// whyShut names the reason of an inviteOpen error.
func whyShut(err error) string {
	switch {
	case errors.Is(err, ErrInviteExpired):
		return WhyExpired
	case errors.Is(err, errUsedUp):
		return WhyUsedUp
	}
	return WhyClosed
}

// errStashed marks a sharing message kept for judgeShares.
var errStashed = errors.New("stashed")

// Invite record fields in home (§6.2 invite:<inviteID>).
const (
	invitePrefix = "invite:"
	fInvColl     = "c"
	fInvSecret   = "s"
	fInvRole     = "role"
	fInvExpires  = "expires"
	fInvAuto     = "autoApprove"
	fInvMax      = "maxUses"
	fInvClosed   = "closed"
	// Membership fields while requested (§6.2, §11.2).
	fInvite   = "invite"
	fOwner    = "owner"
	fExpires  = "expires"
	fDeclined = "declined"
	fWhy      = "declinedWhy"
	fLeft     = "left"
	stateReq  = "requested"
	stateLeft = "left"
)

// invite is an open invite of the user, from home.
type invite struct {
	id      [16]byte
	coll    CollectionID
	keys    *suite.Invite
	role    roster.Role
	expires int64 // unix ms
	auto    bool
	mine    bool // made on this device: it alone approves automatically
	max     int
	closed  bool
}

// shares holds sharing messages waiting to be judged, and the owner's
// pending decisions.
type shares struct {
	joins   map[hub.ID]*JoinRequest // fetched, not yet judged
	pending map[hub.ID]*JoinRequest // waiting for the owner
	grants  map[hub.ID]*grant
	leaves  map[hub.ID]*LeaveNotice
	keyreqs map[hub.ID]*keyReq
}

func newShares() *shares {
	return &shares{joins: map[hub.ID]*JoinRequest{}, pending: map[hub.ID]*JoinRequest{}, grants: map[hub.ID]*grant{}, leaves: map[hub.ID]*LeaveNotice{}, keyreqs: map[hub.ID]*keyReq{}}
}

// JoinRequest is a verified join request (§11.2) for an invite of the user.
type JoinRequest struct {
	ID                hub.ID
	Collection        CollectionID
	Invite            [16]byte
	UID, UKA          [32]byte
	Name              string
	Role              roster.Role
	PreviouslyRemoved bool // the roster once listed this user: always asked (§11.3)
}

// LeaveNotice is a verified leave notice (§11.5) of a current member.
type LeaveNotice struct {
	ID         hub.ID
	Collection CollectionID
	UID        [32]byte
	At         [32]byte
}

type grant struct {
	id           hub.ID
	coll         CollectionID
	at, epoch, k [32]byte
	sig          [64]byte
	owner        [32]byte // set by checkGrant
}

// joinPayload is the kind-3 join request (§11.2).
type joinPayload struct {
	UID  [32]byte `json:"uid" tjson:"required"`
	UKA  [32]byte `json:"uka" tjson:"required"`
	Name string   `json:"name" tjson:"required"`
	Sig  [64]byte `json:"sig" tjson:"required"`
	ISig [64]byte `json:"isig" tjson:"required"`
}

// inboxPayload is a kind-2 inbox message (§11.4): grant or declined.
type inboxPayload struct {
	Type       string        `json:"type" tjson:"required"`
	C          [16]byte      `json:"c" tjson:"required"`
	At         [32]byte      `json:"at"`
	Epoch      [32]byte      `json:"epoch"`
	K          [32]byte      `json:"k"`
	Sig        [64]byte      `json:"sig"`
	I          [16]byte      `json:"i"`
	Have       [32]byte      `json:"have"`       // keyreq
	By         [32]byte      `json:"by"`         // keyreq
	Statements []tjson.Bytes `json:"statements"` // roster reply: statement payloads
	Why        string        `json:"why"`        // declined: used, expired, closed; "" by the owner
}

// noticePayload is a kind-3 notice in a collection's channel (§11.5).
type noticePayload struct {
	Type string   `json:"type" tjson:"required"`
	UID  [32]byte `json:"uid"`
	At   [32]byte `json:"at"`
	Sig  [64]byte `json:"sig"`
}

// stashJoin opens and verifies a join request in one of the user's invite
// channels: sig by the joiner, isig by the invite key (§11.2, §11.3).
// d.mu is held.
func (d *Device) stashJoin(b hub.Body, ch *channel) error {
	kind, pt, err := suite.OpenEnvelope(ch.key, ch.tag, b.Envelope)
	switch {
	case errors.Is(err, suite.ErrEnvelopeVersion):
		return errIgnore
	case err != nil:
		return err
	case kind != suite.KindRequest:
		return errIgnore
	}
	var p joinPayload
	if err := tjson.Unmarshal(pt, &p); err != nil {
		return fmt.Errorf("%w: join request: %w", ErrInvite, err)
	}
	inv := ch.inv
	if !suite.VerifyStrict(p.UID[:], suite.JoinSigInput([16]byte(inv.coll), inv.id, p.UID, p.UKA, p.Name), p.Sig[:]) {
		return fmt.Errorf("%w: join request sig does not verify (§11.2)", ErrInvite)
	}
	if !suite.VerifyStrict(inv.keys.SignPub[:], suite.InviteSigInput([16]byte(inv.coll), inv.id, p.UID), p.ISig[:]) {
		return fmt.Errorf("%w: join request isig does not verify (§11.2)", ErrInvite)
	}
	d.share.joins[b.ID] = &JoinRequest{ID: b.ID, Collection: inv.coll, Invite: inv.id, UID: p.UID, UKA: p.UKA, Name: p.Name, Role: inv.role}
	d.mark(b.ID, MsgPending)
	return errStashed
}

// stashInbox opens a kind-2 message of the user's inbox: a grant (checked
// against its owner's signature here, against the roster in judgeShares)
// or a decline (a hint, §11.4). d.mu is held.
func (d *Device) stashInbox(b hub.Body, ch *channel) error {
	pt, err := suite.OpenInbox(d.id, ch.tag, b.Envelope)
	switch {
	case errors.Is(err, suite.ErrEnvelopeVersion), errors.Is(err, suite.ErrEnvelopeKID):
		return errIgnore // another key's message on our tag, or a newer version
	case err != nil:
		return err
	}
	var p inboxPayload
	if err := tjson.Unmarshal(pt, &p); err != nil {
		return fmt.Errorf("%w: %w", ErrGrant, err)
	}
	c := CollectionID(p.C)
	rec := suite.NamedRecordID(membershipName(c))
	state := d.regString(d.home, rec, fieldState)
	switch p.Type {
	case "declined":
		if state == stateReq && d.regString(d.home, rec, fInvite) == string(p.I[:]) && d.regString(d.home, rec, fDeclined) != "1" {
			why := p.Why
			if why != WhyUsedUp && why != WhyExpired && why != WhyClosed && why != WhyEnded {
				why = "" // the owner's, or a newer reason
			}
			if err := d.homeChanges([]record.Change{{Record: rec, Field: fDeclined, Op: suite.OpAssign, Value: []byte("1")},
				{Record: rec, Field: fWhy, Op: suite.OpAssign, Value: []byte(why)}}); err != nil {
				d.log.Warn("tandem/client: home write", "err", err)
			}
		}
		return errIgnore
	case "grant":
	case "keyreq":
		return d.stashKeyReq(b.ID, c, p.Have, p.By, p.Sig)
	case "roster":
		return d.takeRosterReply(c, p.Statements)
	default:
		return errIgnore // newer types
	}
	// Checked after the pull (checkGrant), once home holds what this
	// pull brought: the request may have been made on another device of
	// the user (docs/decisions/tandem-grant-other-device.md).
	d.share.grants[b.ID] = &grant{id: b.ID, coll: c, at: p.At, epoch: p.Epoch, k: p.K, sig: p.Sig}
	d.mark(b.ID, MsgPending)
	return errStashed
}

// checkGrant decides whether a stashed grant may be judged: a key only for
// a collection the user asked to join or follows (§11.4), signed by its
// owner. It is called after the pull, so a request another device of the
// user made is known from home. A grant for a membership the user has
// since left answers a request already over: errIgnore, not a refusal; one
// for a collection the user never asked to join is refused
// (docs/decisions/tandem-grant-other-device.md). d.mu is held.
func (d *Device) checkGrant(g *grant) error {
	rec := suite.NamedRecordID(membershipName(g.coll))
	switch d.regString(d.home, rec, fieldState) {
	case stateReq, stateActive:
	case "":
		return fmt.Errorf("%w: a grant for a collection this user never asked to join", ErrGrant)
	default:
		d.log.Info("tandem/client: a grant for a membership that is over; passed over", "collection", g.coll)
		return errIgnore
	}
	owner, ok := d.expectedOwner(g.coll, rec)
	if !ok {
		return fmt.Errorf("%w: owner of the collection unknown", ErrGrant)
	}
	if !suite.VerifyStrict(owner[:], suite.GrantSigInput(d.id.UID, [16]byte(g.coll), g.at, g.epoch, g.k), g.sig[:]) {
		return fmt.Errorf("%w: grant not signed by the collection's owner (§11.4)", ErrGrant)
	}
	g.owner = owner
	return nil
}

// expectedOwner is the owner a grant for c must come from: the followed
// roster's, or the invite's by.uid recorded in home. d.mu is held.
func (d *Device) expectedOwner(c CollectionID, rec [16]byte) ([32]byte, bool) {
	if coll := d.colls[c]; coll != nil {
		if r, ok := coll.chain.Roster(); ok {
			return r.Owner(), true
		}
	}
	b := []byte(d.regString(d.home, rec, fOwner))
	if len(b) != 32 {
		return [32]byte{}, false
	}
	return [32]byte(b), true
}

// stashNotice reads a kind-3 notice in a collection's channel: a leave
// notice of a current member, at a statement of the current epoch (§11.5).
// d.mu is held.
func (d *Device) stashNotice(b hub.Body, ch *channel, pt []byte) error {
	var p noticePayload
	if err := tjson.Unmarshal(pt, &p); err != nil {
		return err
	}
	if p.Type == "keyreq" {
		var k struct {
			Have [32]byte `json:"have" tjson:"required"`
			By   [32]byte `json:"by" tjson:"required"`
			Sig  [64]byte `json:"sig" tjson:"required"`
		}
		if err := tjson.Unmarshal(pt, &k); err != nil {
			return err
		}
		return d.stashKeyReq(b.ID, ch.coll.id, k.Have, k.By, k.Sig)
	}
	if p.Type != "leave" {
		return errIgnore
	}
	if !suite.VerifyStrict(p.UID[:], suite.LeaveSigInput([16]byte(ch.coll.id), p.UID, p.At), p.Sig[:]) {
		return fmt.Errorf("%w: leave notice sig does not verify (§11.5)", ErrInvite)
	}
	d.share.leaves[b.ID] = &LeaveNotice{ID: b.ID, Collection: ch.coll.id, UID: p.UID, At: p.At}
	d.mark(b.ID, MsgPending)
	return errStashed
}

// judgeShares decides what was stashed. It reports whether it followed a
// channel whose messages a further pull must read. d.mu is held.
func (d *Device) judgeShares(rep *SyncReport) bool {
	for _, id := range d.inHubOrder(d.share.joins) { // the first of one identity's requests stays (collapse)
		j := d.share.joins[id]
		delete(d.share.joins, id)
		if err := d.judgeJoin(j, rep); err != nil {
			d.reject(rep, id, d.msgs[id].chanOrEmpty(), [32]byte{}, err)
		}
	}
	more := false
	for id, g := range d.share.grants {
		switch err := d.checkGrant(g); {
		case errors.Is(err, errIgnore):
			delete(d.share.grants, id)
			d.mark(id, MsgDone)
			rep.Ignored++
			continue
		case err != nil:
			delete(d.share.grants, id)
			d.reject(rep, id, d.id.InboxTag, [32]byte{}, err)
			continue
		}
		done, followed, err := d.judgeGrant(g)
		more = more || followed
		switch {
		case err != nil:
			delete(d.share.grants, id)
			d.reject(rep, id, d.id.InboxTag, [32]byte{}, err)
		case done:
			delete(d.share.grants, id)
			d.mark(id, MsgDone)
			rep.Applied++
		}
	}
	for id, j := range d.share.pending { // admitted elsewhere, or by another owner device
		if r, ok := d.colls[j.Collection].chainRoster(); ok {
			if ended(d.colls[j.Collection], r) != nil && r.Owner() == d.id.UID { // deleted or dead meanwhile
				delete(d.share.pending, id)
				d.mark(id, MsgDone)
				if err := d.decline(j, WhyEnded); err != nil {
					d.log.Warn("tandem/client: declining a request on an ended collection", "err", err)
				} else {
					rep.Declined++
				}
				continue
			}
			if _, member := r.State().Member(j.UID); member {
				delete(d.share.pending, id)
				d.mark(id, MsgDone)
				continue
			}
			// The invite closed while the request waited (expired, used up
			// by another request): the device that made it says so.
			if inv := d.inviteByID(j.Invite); inv != nil && inv.mine && r.Owner() == d.id.UID {
				if err := d.inviteOpen(inv, r); err != nil {
					if !d.mayAnswer(j.Collection, j.UID, answerDecline) {
						d.answer(id) // over the answer rate: destroyed unanswered
					} else if err := d.declineAs(j, whyShut(err), true); err != nil {
						d.log.Warn("tandem/client: declining a request on a closed invite", "err", err)
					} else {
						rep.Declined++
					}
				}
			}
		}
	}
	for id, l := range d.share.leaves {
		coll := d.colls[l.Collection]
		r, ok := coll.chainRoster()
		if !ok || r.Owner() != d.id.UID {
			delete(d.share.leaves, id)
			d.mark(id, MsgDone)
			continue
		}
		src, ok := r.SourceEpoch(l.At)
		if _, member := r.State().Member(l.UID); !ok || src != r.Epoch() || !member {
			delete(d.share.leaves, id) // from an earlier stay, or already gone (§11.5)
			d.mark(id, MsgDone)
		}
	}
	if len(d.held) > 0 {
		d.retryHeld(rep) // a grant may have moved a collection on (announcedByGrant)
	}
	d.answerKeyReqs()
	d.askForKeys()
	if more {
		d.followMemberships()
	}
	return more
}

// inHubOrder returns the ids of m in the order the hub reported them.
// d.mu is held.
func (d *Device) inHubOrder(m map[hub.ID]*JoinRequest) []hub.ID {
	out := make([]hub.ID, 0, len(m))
	for _, id := range d.order {
		if _, ok := m[id]; ok {
			out = append(out, id)
		}
	}
	if len(out) == len(m) {
		return out
	}
	for id := range m { // not in the index (cannot happen): judged last
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func ed25519Sign(d *Device, msg []byte) []byte { return ed25519.Sign(d.id.SignKey, msg) }

func (m *msgInfo) chanOrEmpty() string {
	if m == nil {
		return ""
	}
	return m.channel
}

func (c *collection) chainRoster() (*roster.Roster, bool) {
	if c == nil {
		return nil, false
	}
	return c.chain.Roster()
}

// judgeJoin applies §11.3 to a verified join request. d.mu is held.
func (d *Device) judgeJoin(j *JoinRequest, rep *SyncReport) error {
	inv := d.inviteByID(j.Invite)
	coll := d.colls[j.Collection]
	r, ok := coll.chainRoster()
	switch {
	case inv == nil || !ok:
		return fmt.Errorf("%w: unknown invite or collection", ErrInvite)
	case r.Owner() != d.id.UID:
		return fmt.Errorf("%w: %w", ErrInvite, ErrNotOwner)
	}
	if err := ended(coll, r); err != nil {
		// Nobody is let in any more: every owner device says so, so the
		// joiner stops waiting even if the device that made the invite is
		// gone (a decline is only a hint, §11.4; a second one is harmless).
		if derr := d.decline(j, WhyEnded); derr != nil {
			return derr
		}
		d.log.Info("tandem/client: declined a join request: the collection ended", "collection", j.Collection, "err", err)
		rep.Declined++
		return nil
	}
	if _, member := r.State().Member(j.UID); member {
		if !d.mayAnswer(j.Collection, j.UID, answerRegrant) {
			d.answer(j.ID) // a copy answered moments ago: destroyed unanswered
			return nil
		}
		return d.grant(coll, r, j.UID, j.UKA, j.ID, true) // again: a crash between admitting and granting (§11.3)
	}
	if err := d.inviteOpen(inv, r); err != nil {
		if !inv.mine {
			return err
		}
		// The device that made the invite, the one that would have
		// approved it automatically, answers as a decline would, saying
		// why, so the joiner stops waiting; the owner's other devices keep
		// quiet, so the joiner gets one answer
		// (docs/decisions/tandem-invite-answers.md).
		if !d.mayAnswer(j.Collection, j.UID, answerDecline) {
			d.answer(j.ID) // over the answer rate: destroyed unanswered
			return nil
		}
		if derr := d.declineAs(j, whyShut(err), true); derr != nil {
			return derr
		}
		d.log.Info("tandem/client: declined a join request", "collection", j.Collection, "err", err)
		rep.Declined++
		return nil
	}
	j.PreviouslyRemoved = everListed(r, j.UID)
	// Only the device that made the invite approves automatically: two
	// owner devices admitting the same request would sign two successors
	// of one statement, and the collection would die (§8.2, §9.4).
	if inv.auto && inv.mine && !j.PreviouslyRemoved {
		return d.admit(j)
	}
	if d.collapse(j) {
		return nil
	}
	d.share.pending[j.ID] = j
	return nil
}

// MaxPendingRequests bounds the join requests one collection lists for the
// owner's decision; past it, more are destroyed unanswered
// (docs/decisions/tandem-client-join-collapse.md).
const MaxPendingRequests = 100

// collapse keeps one pending request per identity and collection: a
// request from someone who already has one pending is destroyed unanswered
// and the first stays, name included, so the entry the owner sees never
// changes under them; and a collection lists at most MaxPendingRequests.
// It reports whether j was dropped. d.mu is held.
func (d *Device) collapse(j *JoinRequest) bool {
	n := 0
	for _, p := range d.share.pending {
		if p.Collection != j.Collection {
			continue
		}
		if p.UID == j.UID {
			d.answer(j.ID)
			return true
		}
		n++
	}
	if n >= MaxPendingRequests {
		d.log.Warn("tandem/client: too many pending join requests; one more destroyed unanswered", "collection", j.Collection, "limit", MaxPendingRequests)
		d.answer(j.ID)
		return true
	}
	return false
}

// inviteOpen checks that an invite still admits (§11.1, §11.3): not closed
// in home, not expired, uses left, and nobody it admitted ever removed —
// uses and removals read from the roster's whole history. d.mu is held.
func (d *Device) inviteOpen(inv *invite, r *roster.Roster) error {
	if inv.closed || d.regString(d.home, suite.NamedRecordID(invitePrefix+suite.B32(inv.id[:])), fInvClosed) == "1" { // closed since it was read
		return fmt.Errorf("%w: %w", ErrInvite, errClosed)
	}
	if d.now().UnixMilli() >= inv.expires {
		return ErrInviteExpired
	}
	uses := map[[32]byte]bool{}
	sts := r.Statements()
	for i, st := range sts {
		for _, m := range st.State().Members {
			if m.Via == nil || *m.Via != inv.id {
				continue
			}
			uses[m.UID] = true
			for _, later := range sts[i+1:] {
				if _, still := later.State().Member(m.UID); !still {
					return fmt.Errorf("%w: %w: someone it admitted was removed (§11.1)", ErrInvite, errClosed)
				}
			}
		}
	}
	if inv.max > 0 && len(uses) >= inv.max {
		return fmt.Errorf("%w: %w (%d of %d)", ErrInvite, errUsedUp, len(uses), inv.max)
	}
	return nil
}

// everListed reports whether any statement of the roster's history lists uid.
func everListed(r *roster.Roster, uid [32]byte) bool {
	for _, st := range r.Statements() {
		if _, ok := st.State().Member(uid); ok {
			return true
		}
	}
	return false
}

// admit signs the same-epoch statement adding the requester (§11.3) and
// queues it, then the grant. d.mu is held.
func (d *Device) admit(j *JoinRequest) error {
	coll := d.colls[j.Collection]
	r, _ := coll.chain.Roster()
	hlc, err := d.clock.Next()
	if err != nil {
		return err
	}
	via := j.Invite
	chg, err := roster.AddMember(r, roster.Signer{Key: d.id.SignKey, Dot: suite.Dot{Device: d.dev, HLC: hlc}, Rand: d.rand},
		roster.Member{UID: j.UID, Role: j.Role, UKA: j.UKA, Name: j.Name, Via: &via})
	if err != nil {
		return err
	}
	if err := d.queueStatement(coll, chg.Statement); err != nil {
		return err
	}
	r, _ = coll.chain.Roster()
	return d.sendGrant(coll, r, j.UID, j.UKA, j.ID)
}

// queueStatement follows a same-epoch statement the owner just signed and
// queues it in the collection's current channel (§8.2). d.mu is held.
func (d *Device) queueStatement(coll *collection, st *roster.Statement) error {
	ch, err := d.currentChannel(coll)
	if err != nil {
		return err
	}
	m, err := d.seal(ch, &RecordPayload{Record: rosterRecordID, Writes: []SignedWrite{{Body: st.Body(), Sig: st.Sig()}}})
	if err != nil {
		return err
	}
	if err := coll.chain.Add(st, roster.Origin{Channel: ch.epoch}); err != nil {
		return err
	}
	d.delta.Statements = append(d.delta.Statements, savedStatement(coll.id, ch.epoch, st.Body(), st.Sig()))
	m.kind, m.ids = kindRoster, [][32]byte{st.ID()}
	d.enqueue(m)
	return nil
}

// sendGrant queues a grant of the current epoch's key to uid, sealed to
// uka (§11.4), after everything already queued (the statement it names
// goes first), and marks the request answered. d.mu is held.
func (d *Device) sendGrant(coll *collection, r *roster.Roster, uid, uka [32]byte, req hub.ID) error {
	return d.grant(coll, r, uid, uka, req, false)
}

// grant queues a grant (§11.4); auto marks an automatic answer, pushed
// after the device's own messages (answers.go). d.mu is held.
func (d *Device) grant(coll *collection, r *roster.Roster, uid, uka [32]byte, req hub.ID, auto bool) error {
	key, ok := coll.epochs[r.Epoch()]
	if !ok {
		ep := r.Epoch()
		return fmt.Errorf("%w: no key for the current epoch %x (have %d)", ErrNotWritable, ep[:4], len(coll.epochs))
	}
	at, epoch := r.Head().ID(), r.Epoch()
	sig := ed25519.Sign(d.id.SignKey, suite.GrantSigInput(uid, [16]byte(coll.id), at, epoch, key))
	pt, err := json.Marshal(map[string]any{"type": "grant", "c": tjson.Bytes(coll.id[:]), "at": tjson.Bytes(at[:]),
		"epoch": tjson.Bytes(epoch[:]), "k": tjson.Bytes(key[:]), "sig": tjson.Bytes(sig)})
	if err != nil {
		return err
	}
	if err := d.sealInbox(uid, uka, pt, auto); err != nil {
		return err
	}
	d.answer(req)
	return nil
}

func (d *Device) queueInbox(uid, uka [32]byte, pt []byte) error {
	return d.sealInbox(uid, uka, pt, false)
}

// sealInbox queues pt sealed to uid's inbox; auto marks an automatic
// answer. d.mu is held.
func (d *Device) sealInbox(uid, uka [32]byte, pt []byte, auto bool) error {
	tag := suite.InboxTag(uid)
	env, err := suite.SealInbox(uka, tag, pt)
	if err != nil {
		return err
	}
	d.enqueue(outMsg{channel: tag, envelope: env, auto: auto})
	return nil
}

// answer marks a join request answered: it is destroyed after the push.
// d.mu is held.
func (d *Device) answer(req hub.ID) {
	delete(d.share.pending, req)
	if req != "" {
		d.mark(req, MsgAnswered)
	}
}

// enqueue appends an envelope to the outbox. d.mu is held.
func (d *Device) enqueue(m outMsg) {
	d.outSeq++
	m.seq = d.outSeq
	d.addOutbox(m)
	d.delta.OutAdd = append(d.delta.OutAdd, savedOut(m))
}

// destroyAnswered destroys the join requests that were answered (§11.3:
// "the request destroyed"), once their answers are on the hub.
func (d *Device) destroyAnswered(ctx context.Context, s hub.Store) error {
	d.mu.Lock()
	var ids []hub.ID
	for id, m := range d.msgs {
		if m.state == MsgAnswered {
			ids = append(ids, id)
		}
	}
	d.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	if err := s.Destroy(ctx, ids); err != nil {
		d.log.Warn("tandem/client: destroying answered requests", "err", err)
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.forget(id)
	}
	return d.commitSynced()
}

// judgeGrant checks a grant against the roster its channel holds (§11.4):
// the collection was created by the expected owner, the roster through at
// is followed, the key matches the epoch's commitment, and the user is
// listed. It follows the channel first if needed (followed = true: pull
// again); done once the key is in home. d.mu is held.
func (d *Device) judgeGrant(g *grant) (done, followed bool, err error) {
	coll := d.colls[g.coll]
	if coll == nil {
		coll = newCollection(g.coll, d.bounds.chainOptions())
		d.colls[g.coll] = coll
	}
	tag := suite.CollectionTag(g.k, g.epoch)
	if d.chans[tag] == nil {
		d.follow(coll, g.epoch, g.k)
		return false, true, nil
	}
	r, ok := coll.chain.Roster()
	if !ok {
		return false, false, nil // the genesis has not arrived: held
	}
	if !r.Contains(g.at) && r.Owner() == g.owner {
		r = d.announcedByGrant(coll, g)
	}
	switch {
	case r.Owner() != g.owner:
		err = fmt.Errorf("%w: the collection was not created by the inviter (§11.4)", ErrGrant)
	case !r.Contains(g.at):
		if r.Len() > 0 && coll.chain.Status() == roster.StatusFollowing {
			return false, false, nil // the statement may still arrive: held
		}
		err = fmt.Errorf("%w: roster through the grant's statement not followed", ErrGrant)
	default:
		if cerr := checkKey(coll, d.chans[tag]); cerr != nil {
			err = fmt.Errorf("%w: %w", ErrGrant, cerr)
		} else if _, listed := r.State().Member(d.id.UID); !listed {
			err = fmt.Errorf("%w: the user is not listed", ErrGrant)
		}
	}
	if err != nil {
		if !d.active(suite.NamedRecordID(membershipName(g.coll))) {
			d.unfollow(g.coll)
		}
		return false, false, err
	}
	m, _ := r.State().Member(d.id.UID)
	if err := d.recordGrant(g.coll, g.epoch, g.k, m.Role); err != nil {
		return false, false, err
	}
	return true, false, nil
}

// recordGrant writes the key and the active state to the membership in
// home (§6.2), so every device of the user follows. d.mu is held.
func (d *Device) recordGrant(c CollectionID, epoch, key [32]byte, role roster.Role) error {
	name := membershipName(c)
	rec := suite.NamedRecordID(name)
	elem, err := keyEntry{Epoch: epoch, K: key}.encode()
	if err != nil {
		return err
	}
	changes := []record.Change{
		{Record: rec, Field: fieldName, Op: suite.OpAssign, Value: []byte(name)},
		{Record: rec, Field: fieldKeys, Op: suite.OpAdd, Element: elem},
	}
	if d.regString(d.home, rec, fieldRole) != string(role) {
		changes = append(changes, record.Change{Record: rec, Field: fieldRole, Op: suite.OpAssign, Value: []byte(role)})
	}
	if d.regString(d.home, rec, fieldState) != stateActive {
		changes = append(changes, record.Change{Record: rec, Field: fieldState, Op: suite.OpAssign, Value: []byte(stateActive)})
	}
	return d.homeChanges(changes)
}

// homeChanges signs home writes and applies them at once, queuing the
// record for the next push; they enter the journal with the sync's delta.
// d.mu is held.
func (d *Device) homeChanges(changes []record.Change) error {
	w := &record.Writer{Key: d.id.SignKey, Device: d.dev, Clock: d.clock}
	ws, m, err := d.buildRecord(d.home, w, d.chans[d.id.HomeTag], changes)
	if err != nil {
		return err
	}
	for _, x := range ws {
		d.keep(d.home, x)
	}
	if !d.isDirty(m.channel, m.rec) {
		d.enqueue(m)
	}
	return nil
}

// unfollow stops following a collection. d.mu is held.
func (d *Device) unfollow(c CollectionID) {
	for tag, ch := range d.chans {
		if ch.coll != nil && ch.coll.id == c {
			delete(d.chans, tag)
		}
	}
	delete(d.colls, c)
}

// regString returns the first sibling of a register as a string ("" if none).
func (d *Device) regString(s *record.State, rec [16]byte, field string) string {
	vs := s.Values(rec, field)
	if len(vs) == 0 {
		return ""
	}
	return string(vs[0].Value)
}

// inviteByID returns the user's invite with that ID, from home. d.mu is held.
func (d *Device) inviteByID(id [16]byte) *invite {
	for _, ch := range d.chans {
		if ch.role == roleInvite && ch.inv.id == id {
			return ch.inv
		}
	}
	return nil
}

// readInvite reads an invite record of home. d.mu is held.
func (d *Device) readInvite(rec [16]byte) (*invite, bool) {
	name := d.regString(d.home, rec, fieldName)
	raw, ok := stringsCut(name, invitePrefix)
	if !ok {
		return nil, false
	}
	idb, err := suite.ParseB32(raw)
	c, s := d.regString(d.home, rec, fInvColl), d.regString(d.home, rec, fInvSecret)
	if err != nil || len(idb) != 16 || len(c) != 16 || len(s) != 32 {
		return nil, false
	}
	inv := &invite{id: [16]byte(idb), coll: CollectionID([]byte(c)), keys: suite.NewInvite([32]byte([]byte(s))),
		role: roster.Role(d.regString(d.home, rec, fInvRole)), auto: d.regString(d.home, rec, fInvAuto) == "1",
		closed: d.regString(d.home, rec, fInvClosed) == "1"}
	for _, v := range d.home.Values(rec, fieldName) {
		inv.mine = inv.mine || v.Dot.Device == d.dev
	}
	inv.expires, _ = strconv.ParseInt(d.regString(d.home, rec, fInvExpires), 10, 64)
	inv.max, _ = strconv.Atoi(d.regString(d.home, rec, fInvMax))
	return inv, true
}

// followInvites follows the channel of every invite in home (§11.1), so
// its join requests are read. d.mu is held.
func (d *Device) followInvites() {
	for rec := range d.home.Records() {
		inv, ok := d.readInvite(rec)
		if !ok || d.chans[inv.keys.Tag] != nil {
			continue
		}
		d.chans[inv.keys.Tag] = &channel{tag: inv.keys.Tag, key: inv.keys.ChannelKey, role: roleInvite, inv: inv}
	}
}

func stringsCut(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

func randomBytes(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

func hubID(s string) hub.ID { return hub.ID(s) }

// announcedByGrant takes a grant verified as the owner's as proof that its
// statement was announced (§11.6: a device learns of the change "from the
// announcement in the old channel, or from a verified grant and the roster
// in the new channel"; grants are sent only after the announcement,
// §11.4): the draft read in the new channel becomes a successor, and the
// journal keeps it as announced. Healing then puts the missing
// announcement back in the old channel (§12.2, publish.go heal). It
// returns the roster as the chain now follows it. d.mu is held.
func (d *Device) announcedByGrant(coll *collection, g *grant) *roster.Roster {
	coll.chain.Announce(g.at)
	coll.chain.Announce(g.epoch)
	r, _ := coll.chain.Roster()
	if !r.Contains(g.at) {
		return r // the roster in the new channel has not been read yet: held
	}
	for _, st := range r.Statements() {
		if id := st.ID(); id == g.at || id == g.epoch {
			d.delta.Statements = append(d.delta.Statements, savedStatement(coll.id, [32]byte{}, st.Body(), st.Sig()))
		}
	}
	d.log.Info("tandem/client: moved to a new epoch on a verified grant; the old channel lacked its announcement", "collection", coll.id)
	return r
}
