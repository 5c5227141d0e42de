package client

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// ErrAlreadyMember: a join asked by a user the collection already lists.
var ErrAlreadyMember = errors.New("tandem/client: already a member")

// InvitePolicy is what an invite admits (§11.1).
type InvitePolicy struct {
	Role        roster.Role // writer or reader
	AutoApprove bool
	MaxUses     int
	Expires     time.Time
	Hint        string // the collection's name in the payload; "" for none
	Hub         RawJSON
}

// InvitePayload is the invite's JSON payload (§11.1).
type InvitePayload struct {
	T    string   `json:"t" tjson:"required"`
	V    int64    `json:"v" tjson:"required"`
	Hub  RawJSON  `json:"hub,omitempty"`
	C    [16]byte `json:"c" tjson:"required"`
	I    [16]byte `json:"i" tjson:"required"`
	S    [32]byte `json:"s" tjson:"required"`
	By   InviteBy `json:"by" tjson:"required"`
	Hint string   `json:"hint,omitempty"`
	Exp  int64    `json:"exp" tjson:"required"`
}

// RawJSON is a JSON value kept as its exact bytes (a hub descriptor, read
// by its own strict parser).
type RawJSON []byte

// UnmarshalTJSON keeps v's bytes; it must be an object.
func (r *RawJSON) UnmarshalTJSON(v tjson.Value) error {
	if v.Kind() != tjson.KindObject {
		return fmt.Errorf("want an object")
	}
	*r = append(RawJSON(nil), v.Raw()...)
	return nil
}

// InviteBy names the inviter, the collection's owner.
type InviteBy struct {
	UID  [32]byte `json:"uid" tjson:"required"`
	Name string   `json:"name"`
}

// CreateInvite makes an invite for collection c, owned by the user: the
// invite record in home (the owner's private business, §11.1) and its
// payload. It returns the payload's JSON.
func (d *Device) CreateInvite(c CollectionID, p InvitePolicy) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, err
	}
	coll := d.colls[c]
	r, ok := coll.chainRoster()
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	case r.Owner() != d.id.UID:
		return nil, ErrNotOwner
	case ended(coll, r) != nil:
		return nil, ended(coll, r)
	case p.Role != roster.RoleWriter && p.Role != roster.RoleReader:
		return nil, fmt.Errorf("%w: role %q", ErrInvite, p.Role)
	}
	idb, err := randomBytes(d.rand, 16)
	if err != nil {
		return nil, err
	}
	sb, err := randomBytes(d.rand, 32)
	if err != nil {
		return nil, err
	}
	id, secret := [16]byte(idb), [32]byte(sb)
	name := invitePrefix + suite.B32(id[:])
	rec := suite.NamedRecordID(name)
	auto := "0"
	if p.AutoApprove {
		auto = "1"
	}
	set := func(f string, v []byte) record.Change {
		return record.Change{Record: rec, Field: f, Op: suite.OpAssign, Value: v}
	}
	changes := []record.Change{set(fieldName, []byte(name)), set(fInvColl, c[:]), set(fInvSecret, secret[:]),
		set(fInvRole, []byte(p.Role)), set(fInvExpires, []byte(strconv.FormatInt(p.Expires.UnixMilli(), 10))),
		set(fInvAuto, []byte(auto)), set(fInvMax, []byte(strconv.Itoa(p.MaxUses)))}
	w := &record.Writer{Key: d.id.SignKey, Device: d.dev, Clock: d.clock}
	ws, m, err := d.buildRecord(d.home, w, d.chans[d.id.HomeTag], changes)
	if err != nil {
		return nil, err
	}
	var sws []stateWrite
	for _, x := range ws {
		sws = append(sws, stateWrite{d.home, x})
	}
	if err := d.applyLocal(sws, []outMsg{m}, d.followInvites); err != nil {
		return nil, err
	}
	return json.Marshal(invitePayloadJSON(InvitePayload{T: "join", V: 1, Hub: p.Hub, C: c, I: id, S: secret,
		By: InviteBy{UID: d.id.UID, Name: memberName(r, d.id.UID)}, Hint: p.Hint, Exp: p.Expires.UnixMilli()}))
}

// invitePayloadJSON writes byte fields as b64u (§5.2).
func invitePayloadJSON(p InvitePayload) any {
	out := map[string]any{"t": p.T, "v": p.V, "c": tjson.Bytes(p.C[:]), "i": tjson.Bytes(p.I[:]), "s": tjson.Bytes(p.S[:]),
		"by": map[string]any{"uid": tjson.Bytes(p.By.UID[:]), "name": p.By.Name}, "exp": p.Exp}
	if len(p.Hub) > 0 {
		out["hub"] = json.RawMessage(p.Hub)
	}
	if p.Hint != "" {
		out["hint"] = p.Hint
	}
	return out
}

func memberName(r *roster.Roster, uid [32]byte) string {
	if m, ok := r.State().Member(uid); ok {
		return m.Name
	}
	return ""
}

// ParseInvite reads an invite payload with the strict reader (§10.5 one
// reading: a duplicate key rejects it whole).
func ParseInvite(b []byte) (*InvitePayload, error) {
	var p InvitePayload
	if err := tjson.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvite, err)
	}
	if p.T != "join" || p.V != 1 {
		return nil, fmt.Errorf("%w: not a version 1 join invite", ErrInvite)
	}
	return &p, nil
}

// Join asks to join the collection an invite names (§11.2): the pending
// membership in home (requested, with the invite and the owner) and the
// join request, sent at the next push. name is what the user calls
// themselves in the collection.
func (d *Device) Join(p *InvitePayload, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	if d.now().UnixMilli() >= p.Exp {
		return ErrInviteExpired
	}
	c := CollectionID(p.C)
	if r, ok := d.colls[c].chainRoster(); ok {
		if _, listed := r.State().Member(d.id.UID); listed {
			return fmt.Errorf("%w: %w", ErrInvite, ErrAlreadyMember)
		}
		// Removed earlier: asking again is allowed; the owner is always
		// asked (§11.3), and the read-only replica stays until then.
	}
	inv := suite.NewInvite(p.S)
	jp := map[string]any{"uid": tjson.Bytes(d.id.UID[:]), "uka": tjson.Bytes(d.id.UKa[:]), "name": name,
		"sig":  tjson.Bytes(ed25519.Sign(d.id.SignKey, suite.JoinSigInput(p.C, p.I, d.id.UID, d.id.UKa, name))),
		"isig": tjson.Bytes(ed25519.Sign(inv.SignKey, suite.InviteSigInput(p.C, p.I, d.id.UID)))}
	pt, err := json.Marshal(jp)
	if err != nil {
		return err
	}
	env, err := suite.SealEnvelope(suite.KindRequest, inv.ChannelKey, inv.Tag, pt, d.rand)
	if err != nil {
		return err
	}
	mname := membershipName(c)
	rec := suite.NamedRecordID(mname)
	set := func(f string, v []byte) record.Change {
		return record.Change{Record: rec, Field: f, Op: suite.OpAssign, Value: v}
	}
	changes := []record.Change{set(fieldName, []byte(mname)), set(fieldState, []byte(stateReq)), set(fInvite, p.I[:]),
		set(fOwner, p.By.UID[:]), set(fExpires, []byte(strconv.FormatInt(p.Exp, 10)))}
	if d.regString(d.home, rec, fDeclined) == "1" { // an earlier request's decline
		changes = append(changes, set(fDeclined, []byte("0")), set(fWhy, nil))
	}
	w := &record.Writer{Key: d.id.SignKey, Device: d.dev, Clock: d.clock}
	ws, m, err := d.buildRecord(d.home, w, d.chans[d.id.HomeTag], changes)
	if err != nil {
		return err
	}
	var sws []stateWrite
	for _, x := range ws {
		sws = append(sws, stateWrite{d.home, x})
	}
	return d.applyLocal(sws, []outMsg{m, {channel: inv.Tag, envelope: env}}, nil)
}

// Requests lists the join requests waiting for the owner's decision.
func (d *Device) Requests(c CollectionID) []JoinRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []JoinRequest
	for _, j := range d.share.pending {
		if j.Collection == c {
			out = append(out, *j)
		}
	}
	slices.SortFunc(out, func(a, b JoinRequest) int { return cmpString(string(a.ID), string(b.ID)) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Approve admits a pending request (§11.3): the same-epoch statement, then
// the grant, both at the next push. Call it after a sync, so the roster is
// current; it checks the invite again.
func (d *Device) Approve(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	j := d.share.pending[hubID(id)]
	if j == nil {
		return ErrNoRequest
	}
	if inv := d.inviteByID(j.Invite); inv != nil {
		r, _ := d.colls[j.Collection].chainRoster()
		if err := d.inviteOpen(inv, r); err != nil {
			return err
		}
	}
	if err := d.admit(j); err != nil {
		return err
	}
	return d.commit()
}

// Decline refuses a pending request: a hint to the requester (§11.4), who
// can't verify it.
func (d *Device) Decline(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.share.pending[hubID(id)]
	if j == nil {
		return ErrNoRequest
	}
	if err := d.decline(j, ""); err != nil {
		return err
	}
	return d.commit()
}

// decline queues a decline of request j to the requester's inbox, with
// why (one of the Why constants; "" for the owner's own decision), and
// marks the request answered. d.mu is held.
func (d *Device) decline(j *JoinRequest, why string) error { return d.declineAs(j, why, false) }

// declineAs is decline; auto marks an automatic answer (answers.go).
func (d *Device) declineAs(j *JoinRequest, why string, auto bool) error {
	m := map[string]any{"type": "declined", "c": tjson.Bytes(j.Collection[:]), "i": tjson.Bytes(j.Invite[:])}
	if why != "" {
		m["why"] = why
	}
	pt, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := d.sealInbox(j.UID, j.UKA, pt, auto); err != nil {
		return err
	}
	d.answer(j.ID)
	return nil
}

// ErrOwnerCantLeave: the owner asked to leave a live collection (§11.5).
var ErrOwnerCantLeave = errors.New("tandem/client: the owner can't leave; delete the collection instead")

// Leave leaves a collection (§11.5). A member of a live collection sets
// home to left (every device of the user stops following) and posts a
// leave notice to the owner in the current epoch. A user no longer listed
// (removed: the replica is read-only) and anyone, owner included, of a
// deleted collection (§11.9) have nobody to tell: home says left and the
// replica goes from every device of the user
// (docs/decisions/tandem-leave-ended.md). The owner of a live collection
// can't leave.
func (d *Device) Leave(c CollectionID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	coll := d.colls[c]
	r, ok := coll.chainRoster()
	if !ok {
		return d.withdraw(c)
	}
	_, listed := r.State().Member(d.id.UID)
	ended := r.State().Deleted || !listed
	if r.Owner() == d.id.UID && !ended {
		return ErrOwnerCantLeave
	}
	var notice *outMsg
	if !ended {
		ch, err := d.currentChannel(coll)
		if err != nil {
			return err
		}
		at := r.Head().ID()
		pt, err := json.Marshal(map[string]any{"type": "leave", "uid": tjson.Bytes(d.id.UID[:]), "at": tjson.Bytes(at[:]),
			"sig": tjson.Bytes(ed25519.Sign(d.id.SignKey, suite.LeaveSigInput([16]byte(c), d.id.UID, at)))})
		if err != nil {
			return err
		}
		env, err := suite.SealEnvelope(suite.KindRequest, ch.key, ch.tag, pt, d.rand)
		if err != nil {
			return err
		}
		notice = &outMsg{channel: ch.tag, envelope: env}
	}
	name := membershipName(c)
	rec := suite.NamedRecordID(name)
	if err := d.homeChanges([]record.Change{{Record: rec, Field: fieldName, Op: suite.OpAssign, Value: []byte(name)},
		{Record: rec, Field: fieldState, Op: suite.OpAssign, Value: []byte(stateLeft)}}); err != nil {
		return err
	}
	if notice != nil {
		d.enqueue(*notice)
	}
	if err := d.commit(); err != nil {
		return err
	}
	d.unfollow(c)
	return nil
}

// PendingLeaves lists the leave notices the owner has not acted on (§11.5).
func (d *Device) PendingLeaves(c CollectionID) []LeaveNotice {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []LeaveNotice
	for _, l := range d.share.leaves {
		if l.Collection == c {
			out = append(out, *l)
		}
	}
	return out
}

// Membership says where the user stands with a collection, from home:
// requested (waiting for the owner, or declined), active, left, or ""
// (never asked). A declined request says why (a Why constant, "" for the
// owner's decision); a request still waiting when its invite expires is
// reported declined, WhyExpired: no approval can come any more (§11.3).
func (d *Device) Membership(c CollectionID) (state string, declined bool, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rec := suite.NamedRecordID(membershipName(c))
	state = d.regString(d.home, rec, fieldState)
	if state != stateReq {
		return state, false, ""
	}
	if d.regString(d.home, rec, fDeclined) == "1" {
		return state, true, d.regString(d.home, rec, fWhy)
	}
	if exp, err := strconv.ParseInt(d.regString(d.home, rec, fExpires), 10, 64); err == nil && d.now().UnixMilli() >= exp {
		return state, true, WhyExpired
	}
	return state, false, ""
}

// withdraw is Leave of a collection the user asked to join and is not in
// yet: the membership reads left in home, so a grant that comes later is
// refused (§11.4: only for a collection the user asked to join) on every
// device of the user. The owner is not told; a request they approve
// anyway admits a member who never arrives. d.mu is held.
func (d *Device) withdraw(c CollectionID) error {
	name := membershipName(c)
	rec := suite.NamedRecordID(name)
	if d.regString(d.home, rec, fieldState) != stateReq {
		return fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	if err := d.homeChanges([]record.Change{{Record: rec, Field: fieldState, Op: suite.OpAssign, Value: []byte(stateLeft)}}); err != nil {
		return err
	}
	return d.commit()
}

// Requested lists the collections the user has asked to join and that are
// not active yet.
func (d *Device) Requested() []CollectionID {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []CollectionID
	for rec := range d.home.Records() {
		if c, ok := d.membershipOf(rec); ok && d.regString(d.home, rec, fieldState) == stateReq {
			out = append(out, c)
		}
	}
	return out
}

// Invites lists the user's invites for collection c that are still open.
func (d *Device) Invites(c CollectionID) []InviteInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []InviteInfo
	for rec := range d.home.Records() {
		inv, ok := d.readInvite(rec)
		if !ok || inv.coll != c {
			continue
		}
		r, _ := d.colls[c].chainRoster()
		if r == nil || d.inviteOpen(inv, r) != nil {
			continue
		}
		out = append(out, InviteInfo{ID: inv.id, Role: inv.role, AutoApprove: inv.auto, MaxUses: inv.max, Expires: time.UnixMilli(inv.expires)})
	}
	return out
}

// CloseInvites closes every open invite of collection c (§11.1): each
// invite's record in home says closed, so that every device of the owner
// refuses it, and the device that made it declines a request on it as
// closed (docs/decisions/tandem-invite-answers.md). It reports how many it
// closed.
func (d *Device) CloseInvites(c CollectionID) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return 0, err
	}
	coll := d.colls[c]
	if coll == nil {
		return 0, fmt.Errorf("%w: %s", ErrUnknownCollection, c)
	}
	r, _ := coll.chainRoster()
	var recs [][16]byte
	for rec := range d.home.Records() {
		if inv, ok := d.readInvite(rec); ok && inv.coll == c && r != nil && d.inviteOpen(inv, r) == nil {
			recs = append(recs, rec)
		}
	}
	for _, rec := range recs {
		if err := d.homeChanges([]record.Change{{Record: rec, Field: fInvClosed, Op: suite.OpAssign, Value: []byte("1")}}); err != nil {
			return 0, err
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	return len(recs), d.commit()
}

// InviteInfo describes one open invite.
type InviteInfo struct {
	ID          [16]byte
	Role        roster.Role
	AutoApprove bool
	MaxUses     int
	Expires     time.Time
}
