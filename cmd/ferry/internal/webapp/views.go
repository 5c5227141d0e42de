package webapp

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/tandem"
)

// The fields a list item has by convention, as the CLI names them
// (docs/decisions/cli-items.md).
const (
	fieldTitle = "title"
	fieldTags  = "tags"
	fieldDone  = "done"
)

// indicatorView is the sync indicator (§13.2, §13.3).
type indicatorView struct {
	Text  string
	Class string // ok, behind, offline, error, none
}

func indicator(st tandem.Status, runErr error, hasHub bool) indicatorView {
	switch {
	case runErr != nil:
		return indicatorView{tandemcli.Message(runErr), "error"}
	case !hasHub:
		return indicatorView{"Not connected to a mail account yet", "none"}
	case st.Receiving > 0:
		return indicatorView{fmt.Sprintf("Syncing: %d of %d", st.Received, st.Receiving), "behind"}
	case st.Offline:
		return indicatorView{"Offline: everything keeps working here and syncs when the connection is back", "offline"}
	case st.Pending > 0:
		return indicatorView{fmt.Sprintf("Behind: %d change(s) made here not synced yet", st.Pending), "behind"}
	case st.LastSync.IsZero() || !st.Online:
		return indicatorView{"Connecting…", "behind"}
	}
	return indicatorView{"Synced", "ok"}
}

// listView is one list as the pages show it.
type listView struct {
	ID      string
	Name    string
	Names   []string // several after concurrent renames
	Role    tandem.Role
	State   tandem.CollectionState
	Open    int // items not done
	Items   int
	CanEdit bool   // the user may change its items
	Owner   bool   // the user owns it and it is live: sharing, renaming
	Notice  string // why it is read-only, or what it waits for
	Dead    bool   // can't sync any more: copy it
	Ended   bool   // deleted, removed or dead: copy or leave
}

func listOf(d *tandem.Device, c tandem.CollectionID) (listView, error) {
	ls, err := tandemcli.ListOf(d, c)
	if err != nil {
		return listView{}, err
	}
	l := listView{ID: c.String(), Name: ls.Name, Names: ls.Names, State: ls.State, Role: ls.Role}
	removed := ls.Removed
	recs, err := d.Records(c)
	if err != nil {
		return l, err
	}
	for _, r := range recs {
		if !r.Deleted {
			l.Items++
			if !slices.Contains(r.Fields[fieldDone].Strings(), "yes") {
				l.Open++
			}
		}
	}
	membership, err := d.Membership(c)
	if err != nil {
		return l, err
	}
	live := !removed && l.State != tandem.StateDeleted && l.State != tandem.StateDead && l.State != tandem.StateStalled
	l.CanEdit = live && (l.Role == tandem.RoleOwner || l.Role == tandem.RoleWriter)
	l.Owner = live && l.Role == tandem.RoleOwner
	l.Dead = l.State == tandem.StateDead
	l.Ended = !live
	switch {
	case removed:
		l.Notice = l.Name + " is no longer shared with you."
	case l.State == tandem.StateDead:
		l.Notice = l.Name + " can't sync any more. Copy it to a new list?"
	case l.State == tandem.StateDeleted:
		l.Notice = l.Name + " was deleted by its owner; it stays here, read-only."
	case l.State == tandem.StateStalled:
		l.Notice = l.Name + " can't sync until its owner's next change arrives; it is read-only meanwhile."
	case membership == tandem.MembershipWaiting:
		l.Notice = "Waiting for the owner to let you in."
	case membership == tandem.MembershipDeclined:
		why, err := d.WhyDeclined(c)
		if err != nil {
			return l, err
		}
		l.Notice = why.Message("", l.Name)
	case l.State == tandem.StateWaiting:
		l.Notice = "Waiting for this list to arrive from the hub."
	case l.Role == tandem.RoleReader:
		l.Notice = "You can read this list; its owner has not let you change it."
	}
	return l, nil
}

// allLists reads every list the device follows, sorted by name.
func allLists(d *tandem.Device) ([]listView, error) {
	var out []listView
	for _, c := range d.Collections() {
		m, err := d.Membership(c)
		if err != nil {
			return nil, err
		}
		if m == tandem.MembershipLeft {
			continue
		}
		l, err := listOf(d, c)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(x, y listView) int {
		if n := strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name)); n != 0 {
			return n
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out, nil
}

// valueView is one value of a field, with who wrote it.
type valueView struct {
	Text    string
	Author  string
	Removed bool // the author is no longer a member
	Index   int
}

// fieldView is one field of an item.
type fieldView struct {
	Name         string
	Values       []valueView
	Elements     []string
	Conflict     bool
	Unsettleable bool
}

// Merged is the values joined, a starting point for a merged value.
func (f fieldView) Merged() string {
	var vs []string
	for _, v := range f.Values {
		vs = append(vs, v.Text)
	}
	return strings.Join(vs, "\n")
}

// itemView is one item as the pages show it.
type itemView struct {
	ID       string
	Title    string
	Titles   []valueView
	Done     bool
	Tags     []string
	Conflict bool
	Fields   []fieldView // other than title, done and tags
	All      []fieldView // every field, title first
	By       string      // who wrote the title
}

func authorName(a tandem.Author) string { return tandemcli.AuthorName(a) }

func itemOf(r tandem.Record) itemView {
	it := itemView{ID: r.ID.String()}
	names := make([]string, 0, len(r.Fields))
	for n := range r.Fields {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if a == fieldTitle || b == fieldTitle {
			return boolInt(b == fieldTitle) - boolInt(a == fieldTitle)
		}
		return strings.Compare(a, b)
	})
	for _, n := range names {
		f := r.Fields[n]
		fv := fieldView{Name: n, Conflict: f.Conflict(), Unsettleable: f.Unsettleable}
		for i, v := range f.Values {
			fv.Values = append(fv.Values, valueView{Text: v.String(), Author: authorName(v.Author), Removed: v.Author.Removed, Index: i})
		}
		for _, e := range f.Elements {
			fv.Elements = append(fv.Elements, string(e))
		}
		it.Conflict = it.Conflict || fv.Conflict
		it.All = append(it.All, fv)
		switch n {
		case fieldTitle:
			it.Titles = fv.Values
			if len(fv.Values) > 0 {
				it.By = fv.Values[0].Author
			}
		case fieldTags:
			it.Tags = fv.Elements
		case fieldDone:
		default:
			it.Fields = append(it.Fields, fv)
		}
	}
	it.Title = strings.Join(r.Fields[fieldTitle].Strings(), " | ")
	it.Done = slices.Contains(r.Fields[fieldDone].Strings(), "yes")
	if f := r.Fields[fieldDone]; f.Conflict() {
		it.Fields = append(it.Fields, fieldView{Name: fieldDone, Values: valuesOf(f), Conflict: true})
	}
	return it
}

func valuesOf(f tandem.Field) []valueView {
	var out []valueView
	for i, v := range f.Values {
		out = append(out, valueView{Text: v.String(), Author: authorName(v.Author), Removed: v.Author.Removed, Index: i})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// itemsOf reads a list's live items: not done first, then by title.
func itemsOf(d *tandem.Device, c tandem.CollectionID) ([]itemView, error) {
	recs, err := d.Records(c)
	if err != nil {
		return nil, err
	}
	var out []itemView
	for _, r := range recs {
		if !r.Deleted {
			out = append(out, itemOf(r))
		}
	}
	slices.SortFunc(out, func(x, y itemView) int {
		if x.Done != y.Done {
			return boolInt(x.Done) - boolInt(y.Done)
		}
		if n := strings.Compare(strings.ToLower(x.Title), strings.ToLower(y.Title)); n != 0 {
			return n
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out, nil
}

// memberView is one member of a list, with the form value naming them.
type memberView struct {
	Ref  string // hex of the user ID
	Name string
	Role tandem.Role
	You  bool
}

func userRef(u tandem.UserID) string { return hex.EncodeToString(u[:]) }
