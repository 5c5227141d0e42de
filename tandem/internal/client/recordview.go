package client

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// The read model package tandem shows an app: records, fields and values
// with their authors named by the collection's roster, in plain types, so
// the public package reaches neither tandem/internal/record nor
// tandem/internal/roster.

// Author is who wrote a value (§1.1 goal 5): the user, and the name the
// roster gives them; for a user it no longer lists, the last name its
// history gave them, with Removed set.
type Author struct {
	User    [32]byte
	Name    string
	Removed bool
}

// Value is one value of a register field (§9.2) and its author.
type Value struct {
	Bytes  []byte
	Author Author
	Device suite.DeviceID
}

// Field is one field of a record: a register's values sorted by bytes
// (more than one is a conflict), a set's present elements, and whether a
// write could not cover every value (§9.2 "Vector size").
type Field struct {
	Values       []Value
	Elements     [][]byte
	Unsettleable bool
}

// Record is one record as the device holds it (§9.3), without its
// reserved ("_") fields.
type Record struct {
	ID      [16]byte
	Deleted bool
	Fields  map[string]Field
}

// Write errors package tandem tells apart (the causes stay in the chain).
var (
	// ErrRecordDeleted: a write to a deleted record (§9.2 sticky tombstone).
	ErrRecordDeleted = record.ErrDeleted
	// ErrMetaNotOwner: a rename by someone other than the owner (§7.3, §8.3).
	ErrMetaNotOwner = roster.ErrMetaNotOwner
	// ErrInvalidChange: a write the record rules refuse as given (a field
	// name, an op's shape, a delete of a named record).
	ErrInvalidChange = errors.New("tandem/client: change not allowed")
)

// changeErr marks the record rules' refusals with ErrInvalidChange.
func changeErr(err error) error {
	for _, e := range []error{record.ErrMalformed, record.ErrField, record.ErrReservedField, record.ErrNamedDelete, record.ErrOpShape} {
		if errors.Is(err, e) {
			return fmt.Errorf("%w: %w", ErrInvalidChange, err)
		}
	}
	return err
}

// SetField assigns value to a register field (§9.2).
func (d *Device) SetField(c CollectionID, rec [16]byte, field string, value []byte) error {
	return changeErr(d.Assign(c, rec, field, value))
}

// AddElement adds element to a set field (§9.2).
func (d *Device) AddElement(c CollectionID, rec [16]byte, field string, element []byte) error {
	return changeErr(d.Add(c, rec, field, element))
}

// RemoveElement removes element from a set field (§9.2).
func (d *Device) RemoveElement(c CollectionID, rec [16]byte, field string, element []byte) error {
	return changeErr(d.Remove(c, rec, field, element))
}

// DeleteRecord deletes a record for good (§9.2, §12.3).
func (d *Device) DeleteRecord(c CollectionID, rec [16]byte) error {
	return changeErr(d.Delete(c, rec))
}

// Rename writes the collection's name to its _meta record (§7.3).
func (d *Device) Rename(c CollectionID, name string) error {
	return changeErr(d.Assign(c, roster.MetaRecordID(), MetaNameField, []byte(name)))
}

// NameValues returns the collection's name values with their authors: one,
// or several after concurrent renames.
func (d *Device) NameValues(c CollectionID) ([]Value, error) {
	var out []Value
	err := d.View(c, func(s *record.State, r *roster.Roster, _ roster.Status) {
		out = values(s, newAuthors(r), roster.MetaRecordID(), MetaNameField)
	})
	return out, err
}

// ReadRecord returns one record; ok is false when the collection has no
// such record.
func (d *Device) ReadRecord(c CollectionID, id [16]byte) (rec Record, ok bool, err error) {
	err = d.View(c, func(s *record.State, r *roster.Roster, _ roster.Status) {
		for have := range s.Records() {
			if have == id {
				rec, ok = readRecord(s, r, newAuthors(r), id), true
			}
		}
	})
	return rec, ok, err
}

// ReadRecords returns every record of the collection except _meta, sorted
// by ID; deleted records are included with Deleted set.
func (d *Device) ReadRecords(c CollectionID) ([]Record, error) {
	var out []Record
	err := d.View(c, func(s *record.State, r *roster.Roster, _ roster.Status) {
		meta, names := roster.MetaRecordID(), newAuthors(r)
		for rec := range s.Records() {
			if rec != meta {
				out = append(out, readRecord(s, r, names, rec))
			}
		}
	})
	slices.SortFunc(out, func(a, b Record) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out, err
}

func readRecord(s *record.State, r *roster.Roster, names *authors, rec [16]byte) Record {
	var epoch uint64
	if r != nil {
		epoch, _ = r.Counter(r.Head().ID())
	}
	out := Record{ID: rec, Deleted: s.Deleted(rec), Fields: map[string]Field{}}
	for _, f := range s.Fields(rec) {
		if strings.HasPrefix(f, "_") {
			continue
		}
		fl := Field{Values: values(s, names, rec, f), Elements: s.Members(rec, f)}
		fl.Unsettleable = s.Unsettleable(record.Change{Record: rec, Field: f, Op: suite.OpAssign}, epoch)
		out.Fields[f] = fl
	}
	return out
}

func values(s *record.State, names *authors, rec [16]byte, field string) []Value {
	var out []Value
	for _, v := range s.Values(rec, field) {
		out = append(out, Value{Bytes: v.Value, Author: names.of(v.Author), Device: v.Dot.Device})
	}
	slices.SortFunc(out, func(a, b Value) int { return bytes.Compare(a.Bytes, b.Bytes) })
	return out
}

// authors names users as a roster does: a member by their entry; a user
// the roster no longer lists by the last entry its history gave them,
// marked Removed. The history is read once, at the first such user.
type authors struct {
	r    *roster.Roster
	past map[[32]byte]string
}

func newAuthors(r *roster.Roster) *authors { return &authors{r: r} }

func (n *authors) of(uid [32]byte) Author {
	a := Author{User: uid}
	if n.r == nil {
		return a
	}
	if m, ok := n.r.State().Member(uid); ok {
		a.Name = m.Name
		return a
	}
	if n.past == nil {
		n.past = map[[32]byte]string{}
		sts := n.r.Statements()
		for i := len(sts) - 1; i >= 0; i-- {
			for _, m := range sts[i].State().Members {
				if _, seen := n.past[m.UID]; !seen {
					n.past[m.UID] = m.Name
				}
			}
		}
	}
	if name, ok := n.past[uid]; ok {
		a.Name, a.Removed = name, true
	}
	return a
}

// B32 writes an ID in b32 (§5.2), the form IDs are shown in.
func B32(b []byte) string { return suite.B32(b) }

// ParseB32 reads B32's form.
func ParseB32(s string) ([]byte, error) { return suite.ParseB32(s) }

// Follows reports whether the device follows collection c.
func (d *Device) Follows(c CollectionID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.colls[c]
	return ok
}
