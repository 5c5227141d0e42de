package tandemcli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// The fields a list item has by convention; any other field name may be
// set too (docs/decisions/cli-items.md).
const (
	fieldTitle = "title"
	fieldTags  = "tags" // a set: ferry tag / untag
	fieldDone  = "done" // "yes" or "no"
	maxField   = 64     // bytes of a field name
	maxValue   = 60 << 10
)

type valueOut struct {
	Value  string `json:"value"`
	Author string `json:"author"` // the name the list's members know the writer by
	User   string `json:"user"`   // the writer's user ID
	device string // shown after the author when one user wrote several values: "this device", "device 1a2b3c"
}

type fieldOut struct {
	Values       []valueOut `json:"values"`
	Elements     []string   `json:"elements"`
	Conflict     bool       `json:"conflict"`
	Unsettleable bool       `json:"unsettleable"`
}

type itemOut struct {
	ID       string              `json:"id"`
	Title    string              `json:"title"`
	Done     bool                `json:"done"`
	Tags     []string            `json:"tags"`
	Conflict bool                `json:"conflict"`
	Deleted  bool                `json:"deleted"`
	Fields   map[string]fieldOut `json:"fields"`
}

type showOut struct {
	List    listInfo     `json:"list"`
	Items   []itemOut    `json:"items"`
	Refused []refusedOut `json:"refused,omitempty"` // your edits that were not shared (refused.go)
}

// authorName is who wrote a value, by the name the list knows them by.
func authorName(a tandem.Author) string {
	if a.Name != "" {
		return a.Name
	}
	id := a.User.String()
	return "someone (" + id[:min(len(id), 9)] + ")"
}

func item(r tandem.Record) itemOut {
	out := itemOut{ID: r.ID.String(), Deleted: r.Deleted, Tags: []string{}, Fields: map[string]fieldOut{}}
	for name, f := range r.Fields {
		fo := fieldOut{Values: []valueOut{}, Elements: []string{}, Conflict: f.Conflict(), Unsettleable: f.Unsettleable}
		for _, v := range f.Values {
			fo.Values = append(fo.Values, valueOut{Value: v.String(), Author: authorName(v.Author), User: v.Author.User.String()})
		}
		for _, e := range f.Elements {
			fo.Elements = append(fo.Elements, string(e))
		}
		out.Fields[name] = fo
		out.Conflict = out.Conflict || fo.Conflict
	}
	out.Title = strings.Join(r.Fields[fieldTitle].Strings(), " | ")
	out.Done = slices.Contains(r.Fields[fieldDone].Strings(), "yes")
	out.Tags = out.Fields[fieldTags].Elements
	if out.Tags == nil {
		out.Tags = []string{}
	}
	return out
}

// items reads a list's items, sorted by title; deleted ones only with all.
func items(d *tandem.Device, l listInfo, all bool) ([]itemOut, error) {
	recs, err := d.Records(l.id)
	if err != nil {
		return nil, err
	}
	out := []itemOut{}
	for _, r := range recs {
		if !r.Deleted || all {
			it := item(r)
			labelDevices(it, r, d.DeviceID())
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(x, y itemOut) int {
		if n := strings.Compare(strings.ToLower(x.Title), strings.ToLower(y.Title)); n != 0 {
			return n
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out, nil
}

// findItem resolves an item by its title (case-insensitive) or the start
// of its ID.
func findItem(d *tandem.Device, l listInfo, ref string) (tandem.RecordID, itemOut, error) {
	all, err := items(d, l, false)
	if err != nil {
		return tandem.RecordID{}, itemOut{}, err
	}
	var byTitle, byID []itemOut
	low, key := strings.ToLower(ref), nameKey(ref)
	for _, it := range all {
		if nameKey(it.Title) == key || slices.ContainsFunc(it.Fields[fieldTitle].Values, func(v valueOut) bool { return nameKey(v.Value) == key }) {
			byTitle = append(byTitle, it)
		}
		if len(ref) >= 4 && strings.HasPrefix(it.ID, low) {
			byID = append(byID, it)
		}
	}
	var found itemOut
	switch {
	case len(byTitle) == 1:
		found = byTitle[0]
	case len(byTitle) > 1:
		var ids []string
		for _, it := range byTitle {
			ids = append(ids, short(it.ID))
		}
		return tandem.RecordID{}, itemOut{}, failf("ambiguous", "%d items of %q are called %q (or look the same): give the ID of the one you mean, %s (ferry show %s shows them)", len(byTitle), l.Name, ref, strings.Join(ids, " or "), short(l.ID))
	case len(byID) == 1:
		found = byID[0]
	case len(byID) > 1:
		return tandem.RecordID{}, itemOut{}, failf("ambiguous", "%q starts the IDs of %d items: give more of the ID", ref, len(byID))
	default:
		return tandem.RecordID{}, itemOut{}, failf("not_found", "%q has no item %q: ferry show %s lists them", l.Name, ref, short(l.ID))
	}
	id, err := tandem.ParseRecordID(found.ID)
	return id, found, err
}

// assignment is one FIELD=VALUE argument.
type assignment struct{ field, value string }

func parseAssignments(as []string) ([]assignment, error) {
	var out []assignment
	seen := map[string]bool{}
	for _, a := range as {
		f, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, usagef("%q is not FIELD=VALUE", a)
		}
		if err := checkFieldName(f); err != nil {
			return nil, err
		}
		if f == fieldTags {
			return nil, usagef("tags is a set of tags: use ferry tag / ferry untag")
		}
		if seen[f] {
			return nil, usagef("the field %s is given twice", f)
		}
		seen[f] = true
		if err := checkText("value of "+f, v, maxValue); err != nil {
			return nil, err
		}
		out = append(out, assignment{f, v})
	}
	return out, nil
}

func checkFieldName(f string) error {
	if f == "" || len(f) > maxField {
		return usagef("a field name has 1 to %d characters", maxField)
	}
	if f[0] == '_' {
		return usagef("field names starting with _ are reserved: choose another name than %q", f)
	}
	for _, r := range f {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return usagef("the field name %q may have only letters, digits, '-', '_' and '.'", f)
		}
	}
	return nil
}

// editErr explains a refused edit of list l.
func editErr(err error, l listInfo) error {
	if tandem.CodeOf(err) == tandem.CodeNotWritable {
		if l.Removed {
			return failf("not_writable", "%s is no longer shared with you.", l.Name)
		}
		switch l.State {
		case tandem.StateDead:
			return failf("not_writable", "%s can't sync any more, so it is read-only: ferry copy %s makes a new list from it", l.Name, short(l.ID))
		case tandem.StateDeleted:
			return failf("not_writable", "%s was deleted by its owner: it is read-only", l.Name)
		case tandem.StateWaiting:
			return failf("not_writable", "%s is not ready yet: run ferry sync, then try again", l.Name)
		}
		return failf("not_writable", "you can read %s but not change it: ask its owner to let you edit", l.Name)
	}
	return err
}

func (a *app) showCmd() *cobra.Command {
	var all, hideDone bool
	var tags []string
	c := &cobra.Command{
		Use:     "show LIST [ITEM]",
		GroupID: groupLists,
		Short:   "Show a list's items, or one item's fields; conflicts show each value and who wrote it",
		Args:    args(1, 2, "show LIST [ITEM]"),
		RunE: func(c *cobra.Command, as []string) error {
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			if len(as) == 2 {
				if all || hideDone || len(tags) > 0 {
					return usagef("--all, --hide-done and --tag apply to a whole list, not to one item")
				}
				_, it, err := findItem(s.dev, l, as[1])
				if err != nil {
					return err
				}
				if a.json {
					return emit(c.OutOrStdout(), it)
				}
				printItemFields(c.OutOrStdout(), it)
				return nil
			}
			its, err := items(s.dev, l, all)
			if err != nil {
				return err
			}
			its = filterItems(its, hideDone, tags)
			if all {
				deletedTitles(s.dir, its)
			}
			rs, err := refusedOf(s.dev, l)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), showOut{List: l, Items: its, Refused: rs})
			}
			printList(c.OutOrStdout(), l, its, sharing(s.dev, l))
			printRefused(c.OutOrStdout(), l, rs)
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "include deleted items")
	c.Flags().BoolVar(&hideDone, "hide-done", false, "leave out items that are done")
	c.Flags().StringSliceVar(&tags, "tag", nil, "only items with this tag (repeat: with all of them)")
	return a.flags(c, true)
}

// showField shows a field's value, or its conflicting values with their authors.
func showField(f fieldOut) string {
	if len(f.Values) == 1 {
		return f.Values[0].Value
	}
	var parts []string
	for _, v := range f.Values {
		parts = append(parts, fmt.Sprintf("%s (by %s%s)", v.Value, v.Author, onDevice(v)))
	}
	return "CONFLICT " + strings.Join(parts, " | ")
}

// sharing says who else has list l, for show's header ("" when nobody).
func sharing(d *tandem.Device, l listInfo) string {
	ms, err := d.Members(l.id)
	if err != nil || len(ms) < 2 {
		return ""
	}
	var owner string
	for _, m := range ms {
		if m.Role == tandem.RoleOwner {
			owner = m.Name
		}
	}
	switch l.Role {
	case tandem.RoleOwner:
		return fmt.Sprintf("shared with %d other(s)", len(ms)-1)
	case tandem.RoleReader:
		return "shared by " + disp(owner) + ", read-only for you"
	}
	return "shared by " + disp(owner)
}

func printList(w io.Writer, l listInfo, its []itemOut, shared string) {
	l = l.shown()
	if shared != "" {
		shared = ", " + shared
	}
	fmt.Fprintf(w, "%s  (%d item(s)%s)\n", l.Name, len(its), shared)
	if l.Removed {
		fmt.Fprintf(w, "  %s is no longer shared with you.\n", l.Name)
	}
	if l.State != tandem.StateFollowing {
		fmt.Fprintf(w, "  [%s]\n", l.State)
	}
	for _, it := range its {
		it = it.shown()
		box := "[ ]"
		if it.Done {
			box = "[x]"
		}
		title := it.Title
		if f := it.Fields[fieldTitle]; f.Conflict {
			title = showField(f)
		}
		if title == "" && it.Deleted {
			title = "(its title went with it)"
		}
		line := fmt.Sprintf("  %s %s %s", short(it.ID), box, title)
		var names []string
		for n := range it.Fields {
			if n != fieldTitle && n != fieldTags && n != fieldDone {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			if f := it.Fields[n]; len(f.Values) > 0 {
				line += fmt.Sprintf("  %s %s", n, showField(f))
			}
		}
		if len(it.Tags) > 0 {
			line += "  #" + strings.Join(it.Tags, " #")
		}
		if it.Deleted {
			line += "  (deleted)"
		}
		fmt.Fprintln(w, line)
	}
}

func printItemFields(w io.Writer, it itemOut) {
	it = it.shown()
	fmt.Fprintf(w, "%s  %s\n", it.ID, it.Title)
	var names []string
	for n := range it.Fields {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := it.Fields[n]
		for _, v := range f.Values {
			mark := ""
			if f.Conflict {
				mark = "  (conflict)"
			}
			fmt.Fprintf(w, "  %-10s %s  by %s%s%s\n", n, v.Value, v.Author, onDevice(v), mark)
		}
		if len(f.Elements) > 0 {
			fmt.Fprintf(w, "  %-10s %s\n", n, strings.Join(f.Elements, ", "))
		}
	}
}

// filterItems keeps the items show's filters let through: not done (with
// hideDone), and tagged with every tag in tags (compared as nameKey).
func filterItems(its []itemOut, hideDone bool, tags []string) []itemOut {
	return slices.DeleteFunc(its, func(it itemOut) bool {
		if hideDone && it.Done {
			return true
		}
		for _, t := range tags {
			if !slices.ContainsFunc(it.Tags, func(x string) bool { return nameKey(x) == nameKey(t) }) {
				return true
			}
		}
		return false
	})
}

// labelDevices names the device of each value of a field in conflict that
// one user wrote more than once (two of their devices): "this device" for
// own, else "device" and the start of its ID.
func labelDevices(it itemOut, r tandem.Record, own [8]byte) {
	for name, f := range r.Fields {
		users := map[tandem.UserID]int{}
		for _, v := range f.Values {
			users[v.Author.User]++
		}
		fo := it.Fields[name]
		for i, v := range f.Values {
			if users[v.Author.User] < 2 || i >= len(fo.Values) {
				continue
			}
			fo.Values[i].device = "this device"
			if v.Device != own {
				fo.Values[i].device = fmt.Sprintf("device %x", v.Device[:3])
			}
		}
	}
}

// onDevice is ", on DEVICE" for a value that needs its device named.
func onDevice(v valueOut) string {
	if v.device == "" {
		return ""
	}
	return ", on " + v.device
}
