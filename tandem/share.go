package tandem

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// Role is a member's role in a collection (§8.1).
type Role string

// Roles.
const (
	RoleOwner  Role = "owner"  // the creator; changes sharing; never changes
	RoleWriter Role = "writer" // changes records
	RoleReader Role = "reader" // only reads
)

// Sharing messages of §13.3.
const (
	msgNeedsNetwork = "Changing who a list is shared with needs a connection."
	msgExpired      = "This code has expired. Ask for a new one."
)

// DefaultLinkBase is where invite links point (§11.1: the payload goes in
// the fragment, which browsers never send to a server).
const DefaultLinkBase = "https://ferry-sync.github.io/join"

// InviteOptions say what an invite admits (§11.1).
type InviteOptions struct {
	// Role is RoleWriter (the default) or RoleReader.
	Role Role
	// Link makes the link form: the owner approves each request, and it
	// lasts 7 days. Without it, the QR form: approved automatically, 10
	// minutes, one use.
	Link bool
	// NoHint leaves the collection's name out of the payload, where anyone
	// who sees the link can read it.
	NoHint bool
	// MaxUses overrides the form's number of uses (0: the form's).
	MaxUses int
	// Expires overrides the form's lifetime (0: the form's).
	Expires time.Duration
}

// Invite is an invite made by the owner: its payload (the QR code's text)
// and link form.
type Invite struct {
	Payload string // the JSON payload (§11.1)
	Link    string // DefaultLinkBase#b64u(payload)
	Expires time.Time
}

// Invite makes an invite to collection c, which the user owns. It works
// offline; the invite's channel is watched from the next sync. Everyone
// who gets the invite also gets the hub's credential (§13.1).
func (d *Device) Invite(c CollectionID, o InviteOptions) (Invite, error) {
	eng, err := d.engine()
	if err != nil {
		return Invite{}, err
	}
	p := client.InvitePolicy{Role: client.RoleWriter, AutoApprove: !o.Link, MaxUses: 1}
	life := 10 * time.Minute
	if o.Link {
		p.MaxUses, life = 0, 7*24*time.Hour
	}
	if o.Role == RoleReader {
		p.Role = client.RoleReader
	} else if o.Role != "" && o.Role != RoleWriter {
		return Invite{}, newErr(CodeInvalid, nil, "an invite admits a writer or a reader")
	}
	if o.MaxUses < 0 || o.Expires < 0 {
		return Invite{}, newErr(CodeInvalid, nil, "uses and lifetime must not be negative")
	}
	if o.MaxUses > 0 {
		p.MaxUses = o.MaxUses
	}
	if o.Expires > 0 {
		life = o.Expires
	}
	p.Expires = time.Now().Add(life)
	if !o.NoHint {
		if names, err := d.Name(c); err == nil && len(names) > 0 {
			p.Hint = names[0].String()
		}
	}
	if h := d.Hub(); !h.IsZero() {
		p.Hub, _ = h.MarshalJSON()
	}
	b, err := eng.CreateInvite(client.CollectionID(c), p)
	switch {
	case errors.Is(err, client.ErrNotOwner):
		return Invite{}, newErr(CodeNotWritable, err, "only the list's owner can invite people")
	case err != nil:
		return Invite{}, d.editErr(err)
	}
	d.notifyLocal()
	return Invite{Payload: string(b), Link: DefaultLinkBase + "#" + base64.RawURLEncoding.EncodeToString(b), Expires: p.Expires}, nil
}

// InviteInfo is what an invite says, for the joiner to see before joining.
type InviteInfo struct {
	Collection CollectionID
	By         Author // the owner
	Hint       string // the collection's name, if the owner left it in
	Expires    time.Time
	Hub        Hub // zero if the invite carries none
	payload    *client.InvitePayload
}

// ParseInvite reads an invite's payload or link form.
func ParseInvite(s string) (InviteInfo, error) {
	s = strings.TrimSpace(s)
	b := []byte(s)
	if _, frag, ok := strings.Cut(s, "#"); ok && !strings.HasPrefix(s, "{") {
		var err error
		if b, err = base64.RawURLEncoding.DecodeString(frag); err != nil {
			return InviteInfo{}, newErr(CodeInvalid, err, "this invite link is damaged: copy it again")
		}
	}
	p, err := client.ParseInvite(b)
	if err != nil {
		return InviteInfo{}, newErr(CodeInvalid, err, "this is not a Ferry invite")
	}
	info := InviteInfo{Collection: CollectionID(p.C), By: Author{User: UserID(p.By.UID), Name: p.By.Name}, Hint: p.Hint,
		Expires: time.UnixMilli(p.Exp), payload: p}
	if len(p.Hub) > 0 {
		if info.Hub, err = ParseHub(p.Hub); err != nil {
			return InviteInfo{}, err
		}
	}
	return info, nil
}

// Join asks to join the collection an invite names (§11.2), as name. A
// device without a hub takes the invite's; one with a different hub is
// refused with the §13.3 message. The request goes out at the next sync;
// Membership tells when the owner has let the user in.
func (d *Device) Join(ctx context.Context, invite, name string) (CollectionID, error) {
	info, err := ParseInvite(invite)
	if err != nil {
		return CollectionID{}, err
	}
	if time.Now().After(info.Expires) {
		return CollectionID{}, newErr(CodeExpired, client.ErrInviteExpired, msgExpired)
	}
	cur := d.Hub()
	switch {
	case !info.Hub.IsZero() && cur.IsZero() && d.opts.Store == nil:
		if err := d.SetHub(ctx, info.Hub); err != nil {
			return CollectionID{}, err
		}
	case !info.Hub.IsZero() && !cur.IsZero() && !cur.Same(info.Hub):
		return CollectionID{}, newErr(CodeDifferentHub, nil, msgOtherHub)
	}
	eng, err := d.engine()
	if err != nil {
		return CollectionID{}, err
	}
	if err := eng.Join(info.payload, name); err != nil {
		switch {
		case errors.Is(err, client.ErrInviteExpired):
			return CollectionID{}, newErr(CodeExpired, err, msgExpired)
		case errors.Is(err, client.ErrAlreadyMember):
			return CollectionID{}, newErr(CodeInvalid, err, "you are already in this list")
		}
		return CollectionID{}, newErr(CodeInvalid, err, "this invite can't be used: ask for a new one")
	}
	d.notifyLocal()
	return info.Collection, nil
}

// JoinRequest is a request to join one of the user's collections, waiting
// for the owner (§11.3, §13.2 "Aimee wants to join House").
type JoinRequest struct {
	ID                string
	Collection        CollectionID
	User              UserID
	Name              string
	Role              Role
	PreviouslyRemoved bool // "Aimee was removed from House. Add her again?"
}

// Requests lists the pending join requests for collection c.
func (d *Device) Requests(c CollectionID) ([]JoinRequest, error) {
	eng, err := d.collection(c)
	if err != nil {
		return nil, err
	}
	var out []JoinRequest
	for _, j := range eng.Requests(client.CollectionID(c)) {
		out = append(out, JoinRequest{ID: string(j.ID), Collection: CollectionID(j.Collection), User: UserID(j.UID),
			Name: j.Name, Role: Role(j.Role), PreviouslyRemoved: j.PreviouslyRemoved})
	}
	return out, nil
}

// Approve admits a pending request (§11.3). It syncs first, so the
// decision reads the current roster, then publishes the new member and
// their key; without a connection it fails with the §13.3 message.
func (d *Device) Approve(ctx context.Context, requestID string) error {
	return d.decide(ctx, requestID, true)
}

// Decline refuses a pending request; the joiner sees that the owner
// declined (a hint, §11.4).
func (d *Device) Decline(ctx context.Context, requestID string) error {
	return d.decide(ctx, requestID, false)
}

func (d *Device) decide(ctx context.Context, id string, approve bool) error {
	if _, err := d.Sync(ctx); err != nil {
		if CodeOf(err) == CodeOffline {
			return newErr(CodeOffline, err, msgNeedsNetwork)
		}
		return err
	}
	eng, err := d.engine()
	if err != nil {
		return err
	}
	if approve {
		err = eng.Approve(id)
	} else {
		err = eng.Decline(id)
	}
	switch {
	case errors.Is(err, client.ErrNoRequest):
		return newErr(CodeNotFound, err, "there is no such request (it may have been answered on another device)")
	case errors.Is(err, client.ErrInvite), errors.Is(err, client.ErrInviteExpired):
		return newErr(CodeExpired, err, "the invite this request came through is no longer open")
	case err != nil:
		return newErr(CodeStorage, err, "the decision could not be saved")
	}
	_, err = d.Sync(ctx)
	return err
}

// Member is a member of a collection as its roster lists them (§8.1,
// §13.2 "Members").
type Member struct {
	User UserID
	Name string
	Role Role
}

// Members lists collection c's members.
func (d *Device) Members(c CollectionID) ([]Member, error) {
	eng, err := d.collection(c)
	if err != nil {
		return nil, err
	}
	v, err := eng.RosterView(client.CollectionID(c))
	if err != nil {
		return nil, d.collErr(err)
	}
	var out []Member
	for _, m := range v.Members {
		out = append(out, Member{User: UserID(m.User), Name: m.Name, Role: Role(m.Role)})
	}
	return out, nil
}

// Role returns the user's role in collection c ("" while not listed).
func (d *Device) Role(c CollectionID) (Role, error) {
	ms, err := d.Members(c)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.User == d.UserID() {
			return m.Role, nil
		}
	}
	return "", nil
}

// Leave leaves collection c (§11.5): gone from all the user's devices.
// A member of a live list tells the owner, who sees it and confirms. A
// user removed from the list (Removed), or anyone of a deleted one — its
// owner included — just drops the read-only replica everywhere
// (docs/decisions/tandem-leave-ended.md). The owner can't leave a live
// list (CodeNotWritable). Leave of a list the user asked to join and is
// not in yet withdraws the request on this side: Membership reads
// MembershipLeft and a later grant is refused; the owner is not told.
func (d *Device) Leave(c CollectionID) error {
	eng, err := d.engine()
	if err != nil {
		return err
	}
	if err := eng.Leave(client.CollectionID(c)); err != nil {
		switch {
		case errors.Is(err, client.ErrOwnerCantLeave):
			return newErr(CodeNotWritable, err, "the owner can't leave a list: delete it instead")
		case errors.Is(err, client.ErrNotWritable):
			return newErr(CodeNotWritable, err, "this list can't be left until it has synced: sync, then try again")
		}
		return d.editErr(err)
	}
	d.notifyLocal()
	return nil
}

// PendingLeaves lists members who left collection c and whom the owner has
// not removed yet (§11.5: "Aimee left House").
func (d *Device) PendingLeaves(c CollectionID) ([]Member, error) {
	eng, err := d.collection(c)
	if err != nil {
		return nil, err
	}
	ms, err := d.Members(c)
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, l := range eng.PendingLeaves(client.CollectionID(c)) {
		for _, m := range ms {
			if m.User == UserID(l.UID) {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// MembershipState is where the user stands with a collection they asked
// to join (§13.2).
type MembershipState string

// Membership states.
const (
	MembershipNone     MembershipState = ""         // never asked
	MembershipWaiting  MembershipState = "waiting"  // "Waiting for Jesper to approve"
	MembershipDeclined MembershipState = "declined" // "Jesper declined your request to join House."
	MembershipActive   MembershipState = "active"
	MembershipLeft     MembershipState = "left"
)

// Membership returns where the user stands with collection c: a
// collection the user asked to join is known to the device before it
// follows it, so only one it neither follows nor asked for is unknown.
func (d *Device) Membership(c CollectionID) (MembershipState, error) {
	st, declined, _, err := d.membership(c)
	switch {
	case err != nil:
		return MembershipNone, err
	case st == "requested" && declined:
		return MembershipDeclined, nil
	case st == "requested":
		return MembershipWaiting, nil
	}
	return MembershipState(st), nil
}

// membership is the engine's word on where the user stands with c, or
// noCollection for a collection the device neither follows nor asked to
// join.
func (d *Device) membership(c CollectionID) (st string, declined bool, why string, err error) {
	eng, err := d.engine()
	if err != nil {
		return "", false, "", err
	}
	st, declined, why = eng.Membership(client.CollectionID(c))
	if st == "" && !eng.Follows(client.CollectionID(c)) {
		return "", false, "", noCollection(nil)
	}
	return st, declined, why, nil
}

// DeclineReason says why a request to join was declined
// (MembershipDeclined).
type DeclineReason string

// Decline reasons. A decline is a hint the joiner can't verify (§11.4); a
// valid grant that arrives later still counts.
const (
	DeclineNone    DeclineReason = ""        // not declined
	DeclineByOwner DeclineReason = "owner"   // the owner declined the request
	DeclineUsedUp  DeclineReason = "used"    // the invite had no uses left
	DeclineExpired DeclineReason = "expired" // the invite had expired
	DeclineClosed  DeclineReason = "closed"  // the invite was closed (or someone it admitted was removed, §11.1)
	DeclineEnded   DeclineReason = "ended"   // the list was deleted, or can't take anyone in any more (§11.8, §11.9)
)

// WhyDeclined returns why the request to join collection c was declined
// (DeclineNone unless Membership is MembershipDeclined). The owner's device
// that made the invite answers a request on an invite that no longer
// admits; a request still unanswered when its invite expires is reported
// DeclineExpired (docs/decisions/tandem-invite-answers.md).
func (d *Device) WhyDeclined(c CollectionID) (DeclineReason, error) {
	st, declined, why, err := d.membership(c)
	switch {
	case err != nil:
		return DeclineNone, err
	case st != "requested" || !declined:
		return DeclineNone, nil
	case why == client.WhyUsedUp:
		return DeclineUsedUp, nil
	case why == client.WhyExpired:
		return DeclineExpired, nil
	case why == client.WhyClosed:
		return DeclineClosed, nil
	case why == client.WhyEnded:
		return DeclineEnded, nil
	}
	return DeclineByOwner, nil
}

// Message is the sentence for the joiner (§13.2); owner and list are the
// owner's and the collection's names as the app knows them ("" for
// unknown).
func (r DeclineReason) Message(owner, list string) string {
	who, ask := owner, " Ask "+owner+" for a new one."
	if owner == "" {
		who, ask = "The owner", " Ask the owner for a new one."
	}
	switch r {
	case DeclineNone:
		return ""
	case DeclineUsedUp:
		return "This invite was already used." + ask
	case DeclineExpired:
		return "This invite has expired." + ask
	case DeclineClosed:
		return "This invite is no longer open." + ask
	case DeclineEnded:
		if list == "" {
			return "This list was deleted or can't take anyone in any more."
		}
		return list + " was deleted or can't take anyone in any more."
	}
	if list == "" {
		return who + " declined your request to join."
	}
	return who + " declined your request to join " + list + "."
}

// OpenInvites lists the open invites of collection c (the owner's view).
func (d *Device) OpenInvites(c CollectionID) ([]InviteSummary, error) {
	eng, err := d.collection(c)
	if err != nil {
		return nil, err
	}
	var out []InviteSummary
	for _, i := range eng.Invites(client.CollectionID(c)) {
		out = append(out, InviteSummary{Role: Role(i.Role), AutoApprove: i.AutoApprove, MaxUses: i.MaxUses, Expires: i.Expires})
	}
	return out, nil
}

// InviteSummary describes an open invite.
type InviteSummary struct {
	Role        Role
	AutoApprove bool
	MaxUses     int // 0: unlimited
	Expires     time.Time
}

var _ = json.Marshal
