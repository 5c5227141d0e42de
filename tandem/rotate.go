package tandem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// Sharing changes that start an epoch (§11.6): removing a member, making
// a writer a reader, a new key, making a list private again. Each syncs
// first (it needs the network: §13.3 "Changing who a list is shared with
// needs a connection."), signs the change and saves it in the device's
// journal before anything leaves the device, then syncs again, which
// uploads the new epoch, announces it, grants the new key to the remaining
// members and retires the old epoch's data. If the process dies midway,
// the next Sync after reopening finishes the same change.

// RemoveMember removes user from collection c (only its owner may).
func (d *Device) RemoveMember(ctx context.Context, c CollectionID, user UserID) error {
	return d.rotate(ctx, c, client.RotateRemove, user, "removing "+d.memberName(c, user))
}

// SetRole makes a member a writer or a reader. Lowering a role starts an
// epoch; raising one does not (§7.2).
func (d *Device) SetRole(ctx context.Context, c CollectionID, user UserID, role Role) error {
	switch role {
	case RoleReader:
		return d.rotate(ctx, c, client.RotateDemote, user, "making "+d.memberName(c, user)+" read-only")
	case RoleWriter:
		uid := [32]byte(user)
		return d.ownerChange(ctx, c, &uid, false)
	}
	return newErr(CodeInvalid, nil, "a member is a writer or a reader")
}

// NewKey gives collection c a new key, with the same members.
func (d *Device) NewKey(ctx context.Context, c CollectionID) error {
	return d.rotate(ctx, c, client.RotateNewKey, UserID{}, "giving it a new key")
}

// MakePrivate removes every member but the owner, in one rotation (§7.4).
func (d *Device) MakePrivate(ctx context.Context, c CollectionID) error {
	return d.rotate(ctx, c, client.RotatePrivate, UserID{}, "making it private again")
}

// CloseInvites closes every open invite of collection c (its owner's
// view, OpenInvites): nobody can join with them any more, and whoever asks
// on one is told it is no longer open. MakePrivate closes them too. It
// reports how many it closed; the next Sync tells the owner's other
// devices.
func (d *Device) CloseInvites(c CollectionID) (int, error) {
	eng, err := d.collection(c)
	if err != nil {
		return 0, err
	}
	n, err := eng.CloseInvites(client.CollectionID(c))
	if err != nil {
		return 0, newErr(CodeStorage, err, "the list's invites could not be closed")
	}
	if n > 0 {
		d.notifyLocal()
	}
	return n, nil
}

// DeleteCollection deletes collection c for everyone (§11.9); there is no
// undo, but a replica can still be copied (CopyCollection).
func (d *Device) DeleteCollection(ctx context.Context, c CollectionID) error {
	return d.ownerChange(ctx, c, nil, true)
}

func (d *Device) memberName(c CollectionID, u UserID) string {
	ms, _ := d.Members(c)
	for _, m := range ms {
		if m.User == u {
			return m.Name
		}
	}
	return u.String()
}

func (d *Device) rotate(ctx context.Context, c CollectionID, kind client.RotationKind, user UserID, what string) error {
	eng, err := d.engine()
	if err != nil {
		return err
	}
	if err := d.needNetwork(ctx); err != nil {
		return err
	}
	names, _ := d.Name(c)
	if len(names) > 0 {
		what += " in " + names[0].String()
	}
	if err := eng.BeginRotation(client.CollectionID(c), kind, [32]byte(user), what); err != nil {
		return d.sharingErr(c, err)
	}
	if kind == client.RotatePrivate { // "only you have it": no invite lets anyone in again
		if _, err := eng.CloseInvites(client.CollectionID(c)); err != nil {
			return newErr(CodeStorage, err, "the list's invites could not be closed")
		}
	}
	d.notifyLocal()
	_, err = d.Sync(ctx)
	return err
}

func (d *Device) ownerChange(ctx context.Context, c CollectionID, promote *[32]byte, del bool) error {
	eng, err := d.engine()
	if err != nil {
		return err
	}
	if err := d.needNetwork(ctx); err != nil {
		return err
	}
	if err := eng.OwnerChange(client.CollectionID(c), promote, del); err != nil {
		return d.sharingErr(c, err)
	}
	d.notifyLocal()
	_, err = d.Sync(ctx)
	return err
}

// needNetwork syncs, so that a sharing change is made on the current
// roster (§8.2); offline it fails with the §13.3 message.
func (d *Device) needNetwork(ctx context.Context) error {
	if _, err := d.Sync(ctx); err != nil {
		if CodeOf(err) == CodeOffline {
			return newErr(CodeOffline, err, msgNeedsNetwork)
		}
		return err
	}
	return nil
}

func (d *Device) sharingErr(c CollectionID, err error) error {
	var msg string
	switch {
	case errors.Is(err, client.ErrInFlight) && d.eng.Rotating(client.CollectionID(c)):
		return newErr(CodeInFlight, err, "this device's last change to who the list is shared with is not finished yet: sync, then try again")
	case errors.Is(err, client.ErrInFlight):
		_, what, _ := strings.Cut(err.Error(), ": ")
		_, what, _ = strings.Cut(what, ": ")
		return newErr(CodeInFlight, err, "another of your devices started %s and didn't finish: finish or discard that change first", what)
	case errors.Is(err, client.ErrNotOwner):
		msg = "only the list's owner can change who it is shared with"
	case errors.Is(err, client.ErrStateMismatch):
		msg = "that change doesn't apply to this member"
	case errors.Is(err, client.ErrUnknownCollection):
		return newErr(CodeNotFound, err, "no such list on this device")
	default:
		return newErr(CodeStorage, err, "the change could not be made")
	}
	return newErr(CodeNotWritable, err, "%s", msg)
}

// CopyCollection copies a collection the user can read — a dead one (§11.8)
// or a deleted one — into a new collection owned by the user: the current
// value of every field, set and record as the user's own writes. Tombstones
// and the old writes' signatures are not carried; people are invited again.
func (d *Device) CopyCollection(c CollectionID, name string) (CollectionID, error) {
	recs, err := d.Records(c)
	if err != nil {
		return CollectionID{}, err
	}
	nc, err := d.NewCollection(name)
	if err != nil {
		return CollectionID{}, err
	}
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		id := r.ID // record IDs are kept, as StartOver keeps them (an app can map old to new)
		for f, v := range r.Fields {
			if len(v.Values) > 0 {
				if err := d.Set(nc, id, f, v.Values[0].Bytes); err != nil {
					return nc, err
				}
			}
		}
		for f, v := range r.Fields {
			for _, e := range v.Elements {
				if err := d.AddElement(nc, id, f, e); err != nil {
					return nc, err
				}
			}
		}
	}
	return nc, nil
}

// Removed reports whether the user was removed from collection c: the
// followed roster no longer lists them (§13.2 "House is no longer shared
// with you."). The replica stays readable; unsent edits are kept locally.
func (d *Device) Removed(c CollectionID) (bool, error) {
	eng, err := d.collection(c)
	if err != nil {
		return false, err
	}
	s, err := eng.Standing(client.CollectionID(c), [32]byte(d.UserID()))
	if err != nil {
		return false, d.collErr(err)
	}
	return s.Removed, nil
}

var _ = fmt.Sprint

// ChangeInFlight returns the sharing change another device of the owner
// started for collection c and has not finished (§11.7), as a phrase
// ("removing Aimee in House").
func (d *Device) ChangeInFlight(c CollectionID) (string, bool, error) {
	eng, err := d.collection(c)
	if err != nil {
		return "", false, err
	}
	what, ok := eng.Flight(client.CollectionID(c))
	return what, ok, nil
}

// FinishChange finishes the change another device left in flight
// ("Finishing a change started on …", §13.2). If that device did not get
// far enough (its change is not on the hub), it fails with CodeInFlight:
// the user can make the change here instead, after DiscardChange.
func (d *Device) FinishChange(ctx context.Context, c CollectionID) error {
	eng, err := d.collection(c)
	if err != nil {
		return err
	}
	if err := eng.FinishFlight(client.CollectionID(c)); err != nil {
		return newErr(CodeNotFound, err, "no change of another device is waiting here")
	}
	if err := d.needNetwork(ctx); err != nil {
		return err
	}
	if eng.Rotating(client.CollectionID(c)) { // taken over, not done yet
		if _, err := d.Sync(ctx); err != nil {
			return err
		}
	}
	if what, ok := eng.Flight(client.CollectionID(c)); ok {
		return newErr(CodeInFlight, nil, "your other device started %s and didn't finish. Do it here, or discard it?", what)
	}
	return nil
}

// DiscardChange discards the change another device left in flight, with
// the user's consent (§11.7); that device drops it when it returns.
func (d *Device) DiscardChange(ctx context.Context, c CollectionID) error {
	eng, err := d.collection(c)
	if err != nil {
		return err
	}
	if err := eng.DiscardFlight(client.CollectionID(c)); err != nil {
		return newErr(CodeNotFound, err, "no change of another device is waiting here")
	}
	d.notifyLocal()
	_, err = d.Sync(ctx)
	return err
}
