package tandem

import (
	"crypto/rand"
	"errors"
	"slices"
	"strings"

	"github.com/ferry-sync/ferry/tandem/internal/client"
)

// UserID is a user's ID: their public signing key (§5.3).
type UserID [32]byte

// String shows the ID as §5.3 says: the first 20 bytes in b32, in groups
// of four.
func (u UserID) String() string {
	s := client.B32(u[:20])
	var g []string
	for i := 0; i < len(s); i += 4 {
		g = append(g, s[i:min(i+4, len(s))])
	}
	return strings.Join(g, " ")
}

// CollectionID identifies a collection (§7.1).
type CollectionID [16]byte

// String is the ID in b32 (§5.2).
func (c CollectionID) String() string { return client.B32(c[:]) }

// ParseCollectionID reads CollectionID.String's form.
func ParseCollectionID(s string) (CollectionID, error) {
	b, err := client.ParseB32(s)
	if err != nil || len(b) != 16 {
		return CollectionID{}, newErr(CodeInvalid, err, "%q is not a list ID", s)
	}
	return CollectionID(b), nil
}

// RecordID identifies a record in a collection (§7.3, §9.5).
type RecordID [16]byte

// String is the ID in b32.
func (r RecordID) String() string { return client.B32(r[:]) }

// ParseRecordID reads RecordID.String's form.
func ParseRecordID(s string) (RecordID, error) {
	b, err := client.ParseB32(s)
	if err != nil || len(b) != 16 {
		return RecordID{}, newErr(CodeInvalid, err, "%q is not an item ID", s)
	}
	return RecordID(b), nil
}

// Author is who wrote a value (§1.1 goal 5): the user, verified by their
// signature, and the name the collection's roster gives them. For a user
// the roster no longer lists (removed, or left and then removed by the
// owner), Name is the last name its history gave them and Removed is set.
type Author struct {
	User    UserID
	Name    string
	Removed bool // no longer a member; Name is from the roster's history
}

// Value is one value of a register field, with its author. A field with
// several values is in conflict (§9.2, §13.2): the app shows them and a
// later write that saw them all settles it.
type Value struct {
	Bytes  []byte
	Author Author
	// Device is the installation that wrote the value (§5.3): it tells
	// apart two values one user wrote on two of their devices.
	Device [8]byte
}

// String is the value as text.
func (v Value) String() string { return string(v.Bytes) }

// Field is one field of a record as the device holds it.
type Field struct {
	// Values are the register's values (§9.2), sorted by bytes; more than
	// one is a conflict.
	Values []Value
	// Elements are the set's present elements (§9.2), sorted by bytes.
	Elements [][]byte
	// Unsettleable is set when a write to this field could not cover every
	// value it should (§9.2 "Vector size"): the field can't be settled
	// until the record is deleted and created again.
	Unsettleable bool
}

// Strings returns the values as text.
func (f Field) Strings() []string {
	out := make([]string, len(f.Values))
	for i, v := range f.Values {
		out[i] = string(v.Bytes)
	}
	return out
}

// Conflict reports whether the field holds concurrent values.
func (f Field) Conflict() bool { return len(f.Values) > 1 }

// Record is one record as the device holds it (§9.3).
type Record struct {
	ID      RecordID
	Deleted bool
	Fields  map[string]Field
}

// Get returns the first value of a register field as text ("" if none).
func (r Record) Get(field string) string {
	if f, ok := r.Fields[field]; ok && len(f.Values) > 0 {
		return string(f.Values[0].Bytes)
	}
	return ""
}

// NewCollection creates a collection owned by the user, named name (§7.1,
// §7.3). It works offline; the next Sync publishes it.
func (d *Device) NewCollection(name string) (CollectionID, error) {
	eng, err := d.engine()
	if err != nil {
		return CollectionID{}, err
	}
	c, err := eng.CreateCollection(name)
	if err != nil {
		return CollectionID{}, d.editErr(err)
	}
	d.notifyLocal()
	return CollectionID(c), nil
}

// Collections lists the collections the device follows.
func (d *Device) Collections() []CollectionID {
	eng, err := d.engine()
	if err != nil {
		return nil
	}
	var out []CollectionID
	for _, c := range eng.Collections() {
		out = append(out, CollectionID(c))
	}
	return out
}

// Name returns a collection's name from its _meta record (§7.3): one
// value, or several after concurrent renames.
func (d *Device) Name(c CollectionID) ([]Value, error) {
	eng, err := d.collection(c)
	if err != nil {
		return nil, err
	}
	vs, err := eng.NameValues(client.CollectionID(c))
	if err != nil {
		return nil, d.collErr(err)
	}
	return valuesOf(vs), nil
}

// Rename renames a collection (only its owner may, §8.3).
func (d *Device) Rename(c CollectionID, name string) error {
	if err := d.renameErr(c); err != nil {
		return err
	}
	return d.edit(c, func(eng *client.Device, c client.CollectionID) error { return eng.Rename(c, name) })
}

// NewRecord creates a record with initial register fields (§9.5) and
// returns its ID. Field order is the sorted order of the map's keys.
func (d *Device) NewRecord(c CollectionID, fields map[string][]byte) (RecordID, error) {
	var id RecordID
	if _, err := rand.Read(id[:]); err != nil {
		return id, newErr(CodeInternal, err, "no randomness for a record ID")
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := d.Set(c, id, k, fields[k]); err != nil {
			return id, err
		}
	}
	return id, nil
}

// Set assigns value to a register field (§9.2). The write is durable when
// Set returns.
func (d *Device) Set(c CollectionID, rec RecordID, field string, value []byte) error {
	return d.edit(c, func(eng *client.Device, c client.CollectionID) error { return eng.SetField(c, rec, field, value) })
}

// SetString is Set with a text value.
func (d *Device) SetString(c CollectionID, rec RecordID, field, value string) error {
	return d.Set(c, rec, field, []byte(value))
}

// AddElement adds element to a set field (§9.2).
func (d *Device) AddElement(c CollectionID, rec RecordID, field string, element []byte) error {
	return d.edit(c, func(eng *client.Device, c client.CollectionID) error { return eng.AddElement(c, rec, field, element) })
}

// RemoveElement removes element from a set field (§9.2): every add this
// device has seen; a concurrent add wins.
func (d *Device) RemoveElement(c CollectionID, rec RecordID, field string, element []byte) error {
	return d.edit(c, func(eng *client.Device, c client.CollectionID) error {
		return eng.RemoveElement(c, rec, field, element)
	})
}

// Delete deletes a record for good (§9.2 sticky tombstone, §12.3).
func (d *Device) Delete(c CollectionID, rec RecordID) error {
	return d.edit(c, func(eng *client.Device, c client.CollectionID) error { return eng.DeleteRecord(c, rec) })
}

// edit runs one local write on the engine and wakes Run's publisher.
func (d *Device) edit(c CollectionID, write func(*client.Device, client.CollectionID) error) error {
	eng, err := d.engine()
	if err != nil {
		return err
	}
	if err := write(eng, client.CollectionID(c)); err != nil {
		return d.editErr(err)
	}
	d.notifyLocal()
	return nil
}

// editErr turns an engine error of a local edit into an *Error.
func (d *Device) editErr(err error) error {
	switch {
	case errors.Is(err, client.ErrUnknownCollection):
		return d.collErr(err)
	case errors.Is(err, client.ErrMetaNotOwner):
		return newErr(CodeNotWritable, err, "only the list's owner can rename it")
	case errors.Is(err, client.ErrNotWritable) && strings.Contains(err.Error(), "not the owner or a writer"):
		return newErr(CodeNotWritable, err, "you can only read this list")
	case errors.Is(err, client.ErrNotWritable) && strings.Contains(err.Error(), "deleted"):
		return newErr(CodeNotWritable, err, "this list was deleted by its owner; it stays readable here")
	case errors.Is(err, client.ErrNotWritable) && strings.Contains(err.Error(), "dead"):
		return newErr(CodeNotWritable, err, "this list can't sync any more: copy it to a new list")
	case errors.Is(err, client.ErrRecordDeleted):
		return newErr(CodeNotWritable, err, "this item was deleted")
	case errors.Is(err, client.ErrNotWritable):
		return newErr(CodeNotWritable, err, "this list can't be changed now")
	case errors.Is(err, client.ErrTooLarge):
		return newErr(CodeTooLarge, err, "this value is too large to sync (keep it under 64 KiB)")
	case errors.Is(err, client.ErrBroken):
		return newErr(CodeStorage, err, "the device's disk failed: close and reopen it")
	case errors.Is(err, client.ErrInvalidChange):
		return newErr(CodeInvalid, err, "this change is not allowed")
	}
	if strings.Contains(err.Error(), "disk is full") {
		return newErr(CodeStorage, err, "the disk is full: free some space, then try again (nothing saved was lost)")
	}
	return newErr(CodeStorage, err, "the change could not be saved")
}

// Record returns one record.
func (d *Device) Record(c CollectionID, id RecordID) (Record, error) {
	eng, err := d.collection(c)
	if err != nil {
		return Record{}, err
	}
	r, ok, err := eng.ReadRecord(client.CollectionID(c), id)
	switch {
	case err != nil:
		return Record{}, d.collErr(err)
	case !ok:
		return Record{}, newErr(CodeNotFound, nil, "no such item in this list")
	}
	return recordOf(r), nil
}

// Records returns every record of a collection except the reserved ones
// (_meta), sorted by ID; deleted records are included with Deleted set.
func (d *Device) Records(c CollectionID) ([]Record, error) {
	eng, err := d.collection(c)
	if err != nil {
		return nil, err
	}
	rs, err := eng.ReadRecords(client.CollectionID(c))
	if err != nil {
		return nil, d.collErr(err)
	}
	var out []Record
	for _, r := range rs {
		out = append(out, recordOf(r))
	}
	return out, nil
}

func recordOf(r client.Record) Record {
	out := Record{ID: RecordID(r.ID), Deleted: r.Deleted, Fields: make(map[string]Field, len(r.Fields))}
	for name, f := range r.Fields {
		out.Fields[name] = Field{Values: valuesOf(f.Values), Elements: f.Elements, Unsettleable: f.Unsettleable}
	}
	return out
}

func valuesOf(vs []client.Value) []Value {
	var out []Value
	for _, v := range vs {
		a := Author{User: UserID(v.Author.User), Name: v.Author.Name, Removed: v.Author.Removed}
		out = append(out, Value{Bytes: v.Bytes, Author: a, Device: v.Device})
	}
	return out
}
