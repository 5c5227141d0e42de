package tandem

import (
	"context"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// A local edit the collection's group would not accept — made before the
// device learned the user was made a reader or removed, or an edit of an
// old epoch the owner's snapshot missed that can't be signed again — is
// not published and not shown as part of the list: it is kept aside here
// for the app, which can copy it into a list the user can write, or
// discard it (§11.6). See docs/decisions/tandem-epoch-state.md.

// RefusedReason says why the group would not accept a local edit.
type RefusedReason int

// Reasons for a refused edit.
const (
	RefusedLate      RefusedReason = RefusedReason(client.RefusedLate)      // made in an earlier epoch, missed by the owner's snapshot, and can't be signed again
	RefusedNotWriter RefusedReason = RefusedReason(client.RefusedNotWriter) // the owner made the user a reader before the edit went out
	RefusedRemoved   RefusedReason = RefusedReason(client.RefusedRemoved)   // the owner removed the user before the edit went out
	RefusedNotOwner  RefusedReason = RefusedReason(client.RefusedNotOwner)  // only the owner may rename the list
	RefusedDeleted   RefusedReason = RefusedReason(client.RefusedDeleted)   // the owner deleted the list before the edit went out
)

// Message is one line for a person: why the edit was not shared.
func (r RefusedReason) Message() string {
	switch r {
	case RefusedNotWriter:
		return "not shared: you were made a reader of this list before it went out"
	case RefusedRemoved:
		return "not shared: you were removed from this list before it went out"
	case RefusedNotOwner:
		return "not shared: only the list's owner can rename it"
	case RefusedDeleted:
		return "not shared: the list was deleted before it went out"
	}
	return "not shared: the list's key changed before it went out and it could not be sent again"
}

// EditKind is what a refused edit did.
type EditKind string

// Edit kinds (§9.1 ops).
const (
	EditSet    EditKind = client.EditSet    // assigned Value to a register field
	EditAdd    EditKind = client.EditAdd    // added Element to a set field
	EditRemove EditKind = client.EditRemove // removed Element from a set field
	EditDelete EditKind = client.EditDelete // deleted the record
)

// RefusedEdit is one local edit the group would not accept.
type RefusedEdit struct {
	w   client.Refused
	rec RecordID
}

// Record is the record the edit was made to.
func (e RefusedEdit) Record() RecordID { return e.rec }

// Field is the field the edit wrote ("" for a delete).
func (e RefusedEdit) Field() string { return e.w.Write.Field() }

// Kind is what the edit did.
func (e RefusedEdit) Kind() EditKind { return EditKind(e.w.Kind()) }

// Value is the value a set wrote.
func (e RefusedEdit) Value() []byte { return append([]byte(nil), e.w.Write.Value()...) }

// Element is the element an add or remove named.
func (e RefusedEdit) Element() []byte { return append([]byte(nil), e.w.Write.Element()...) }

// Why says why the group would not accept it; Why().Message() is for a
// person.
func (e RefusedEdit) Why() RefusedReason { return RefusedReason(e.w.Why) }

// Refused lists collection c's local edits that the group would not
// accept, by record: they are not in Records or Record, not published, and
// not counted as pending. Status().Refused counts them for every list.
func (d *Device) Refused(c CollectionID) ([]RefusedEdit, error) {
	eng, err := d.engine()
	if err != nil {
		return nil, err
	}
	rs, err := eng.Refused(client.CollectionID(c))
	if err != nil {
		return nil, newErr(CodeNotFound, err, "no such list on this device")
	}
	out := make([]RefusedEdit, len(rs))
	for i, r := range rs {
		out[i] = RefusedEdit{w: r, rec: RecordID(r.Write.Record())}
	}
	return out, nil
}

// DiscardRefused drops collection c's refused edits for good and reports
// how many there were. To keep one, copy it first into a list the user can
// write (NewRecord, Set, AddElement with the edit's values).
func (d *Device) DiscardRefused(c CollectionID) (int, error) {
	eng, err := d.engine()
	if err != nil {
		return 0, err
	}
	ids, err := eng.DiscardRefused(client.CollectionID(c))
	if err != nil {
		return 0, newErr(CodeNotFound, err, "no such list on this device")
	}
	if len(ids) == 0 {
		return 0, nil
	}
	gone := make(map[[32]byte]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	// Out of the journal too: only these writes, so nothing a running Sync
	// stores meanwhile is touched.
	if _, err := d.db.Prune(context.Background(), func(id [32]byte) bool { return !gone[id] }); err != nil {
		return len(ids), newErr(CodeStorage, err, "the discarded edits could not be removed from the disk; they are gone until the device is reopened")
	}
	d.notifyLocal()
	return len(ids), nil
}

// renameErr refuses a rename up front when the user does not own c (§8.3,
// §13.3), naming the owner.
func (d *Device) renameErr(c CollectionID) error {
	ms, err := d.Members(c)
	if err != nil {
		return err
	}
	owner := ""
	for _, m := range ms {
		if m.Role == RoleOwner {
			owner = m.Name
		}
		if m.User == d.UserID() && m.Role == RoleOwner {
			return nil
		}
	}
	if owner == "" {
		return nil // the roster is not known yet: the engine judges
	}
	return newErr(CodeNotWritable, client.ErrNotWritable, "only %s, who owns this list, can rename it", owner)
}
