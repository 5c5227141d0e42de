package tandemcli

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// listInfo is one list as ferry lists shows it.
type listInfo struct {
	ID      string                 `json:"id"`
	Name    string                 `json:"name"`  // the names joined with " | " when renamed concurrently
	Names   []string               `json:"names"` // every concurrent name
	State   tandem.CollectionState `json:"state"`
	Removed bool                   `json:"removed"` // the owner removed you: read-only (§13.2)
	Role    tandem.Role            `json:"role"`    // yours: owner, writer, reader ("" while not listed)
	Items   int                    `json:"items"`
	id      tandem.CollectionID
}

// live reports whether the list can still change: not deleted, not dead,
// not one the user was removed from.
func (l listInfo) live() bool {
	return !l.Removed && l.State != tandem.StateDeleted && l.State != tandem.StateDead && l.State != tandem.StateStalled
}

// allLists reads every list the device follows, sorted by name.
func allLists(d *tandem.Device) ([]listInfo, error) {
	out := []listInfo{}
	for _, c := range d.Collections() {
		l, err := oneList(d, c)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(x, y listInfo) int {
		if n := strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name)); n != 0 {
			return n
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out, nil
}

func oneList(d *tandem.Device, c tandem.CollectionID) (listInfo, error) {
	l := listInfo{ID: c.String(), id: c, Names: []string{}}
	names, err := d.Name(c)
	if err != nil {
		return l, err
	}
	for _, n := range names {
		l.Names = append(l.Names, n.String())
	}
	l.Name = strings.Join(l.Names, " | ")
	if l.Name == "" {
		l.Name = "(unnamed)"
	}
	if l.State, err = d.CollectionState(c); err != nil {
		return l, err
	}
	if l.Removed, err = d.Removed(c); err != nil {
		return l, err
	}
	if l.Role, err = d.Role(c); err != nil {
		return l, err
	}
	recs, err := d.Records(c)
	if err != nil {
		return l, err
	}
	for _, r := range recs {
		if !r.Deleted {
			l.Items++
		}
	}
	return l, nil
}

// short is the start of an ID, enough to tell lists and items apart.
func short(id string) string { return id[:min(len(id), 6)] }

// findList resolves a list by name (case-insensitive) or by its ID or the
// start of its ID; a name several lists share means the one that can
// still change (docs/decisions/cli-list-names.md).
func findList(d *tandem.Device, ref string) (listInfo, error) {
	lists, err := allLists(d)
	if err != nil {
		return listInfo{}, err
	}
	var byName, byID []listInfo
	low, key := strings.ToLower(ref), nameKey(ref)
	for _, l := range lists {
		if slices.ContainsFunc(l.Names, func(n string) bool { return nameKey(n) == key }) {
			byName = append(byName, l)
		}
		if len(ref) >= 4 && strings.HasPrefix(l.ID, low) {
			byID = append(byID, l)
		}
	}
	if len(byName) > 1 {
		// A name shared with lists that can't change any more (deleted,
		// dead, or one you were removed from) means the live one.
		live := slices.DeleteFunc(slices.Clone(byName), func(l listInfo) bool { return !l.live() })
		if len(live) == 1 {
			byName = live
		}
	}
	switch {
	case len(byName) == 1:
		return byName[0], nil
	case len(byName) > 1:
		var ids []string
		for _, l := range byName {
			ids = append(ids, short(l.ID))
		}
		return listInfo{}, failf("ambiguous", "%d lists are called %q (or look the same): give the ID of the one you mean, %s (ferry lists shows them)", len(byName), ref, strings.Join(ids, " or "))
	case len(byID) == 1:
		return byID[0], nil
	case len(byID) > 1:
		return listInfo{}, failf("ambiguous", "%q starts the IDs of %d lists: give more of the ID", ref, len(byID))
	}
	return listInfo{}, failf("not_found", "there is no list %q on this device: ferry lists shows them", ref)
}

// checkText checks a name or value a person typed.
func checkText(what, s string, max int) error {
	if !utf8.ValidString(s) {
		return usagef("the %s is not valid text (UTF-8)", what)
	}
	if len(s) > max {
		return usagef("the %s is %d bytes long: keep it under %d", what, len(s), max)
	}
	return nil
}

// maxListName bounds a list's name.
const maxListName = 200

func checkListName(name string) error {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "\r\n\x00") {
		return usagef("a list's name is one line of text, not empty")
	}
	return checkText("name", name, maxListName)
}

func (a *app) newCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "new NAME",
		GroupID: groupLists,
		Short:   "Make a new list, owned by you",
		Args:    args(1, 1, "new NAME"),
		RunE: func(c *cobra.Command, as []string) error {
			if err := checkListName(as[0]); err != nil {
				return err
			}
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			lists, err := allLists(s.dev)
			if err != nil {
				return err
			}
			for _, l := range lists {
				if l.live() && l.Role == tandem.RoleOwner && nameKey(l.Name) == nameKey(as[0]) {
					return failf("exists", "you already have a list called %q (%s): give the new one another name", l.Name, short(l.ID))
				}
			}
			id, err := s.dev.NewCollection(as[0])
			if err != nil {
				return err
			}
			l, err := oneList(s.dev, id)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), l)
			}
			fmt.Fprintf(c.OutOrStdout(), "Made the list %q (%s). It syncs at the next ferry sync.\n", as[0], short(l.ID))
			return nil
		},
	}
	return a.flags(c, true)
}

func (a *app) listsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "lists",
		GroupID: groupLists,
		Short:   "Show your lists",
		Args:    args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			lists, err := allLists(s.dev)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), lists)
			}
			w := c.OutOrStdout()
			var joining []membershipOut
			for _, j := range readJoins(s.dir) {
				if m := membership(s.dev, j); m.State == "waiting" || m.State == string(tandem.MembershipDeclined) {
					joining = append(joining, m)
				}
			}
			if len(lists) == 0 && len(joining) == 0 {
				fmt.Fprintln(w, "No lists yet: ferry new NAME makes one.")
			}
			for _, m := range joining {
				fmt.Fprintf(w, "        %-24s %s\n", disp(m.Name), m.Message)
			}
			for _, l := range lists {
				note := ""
				if len(l.Names) > 1 {
					note = "  (renamed at the same time on two devices: ferry rename settles it)"
				}
				if l.State != tandem.StateFollowing {
					note += "  [" + string(l.State) + "]"
				}
				if l.Removed {
					note += "  (" + disp(l.Name) + " is no longer shared with you.)"
				} else if l.Role == tandem.RoleReader {
					note += "  (read-only for you)"
				}
				fmt.Fprintf(w, "%s  %-24s %d item(s)%s\n", short(l.ID), disp(l.Name), l.Items, note)
			}
			return nil
		},
	}
	return a.flags(c, true)
}

func (a *app) renameCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "rename LIST NEWNAME",
		GroupID: groupLists,
		Short:   "Rename a list (its owner only)",
		Args:    args(2, 2, "rename LIST NEWNAME"),
		RunE: func(c *cobra.Command, as []string) error {
			if err := checkListName(as[1]); err != nil {
				return err
			}
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.dev.Rename(l.id, as[1]); err != nil {
				if tandem.CodeOf(err) == tandem.CodeNotWritable {
					return failf("not_writable", "only the owner of %q can rename it", l.Name)
				}
				return err
			}
			l, err = oneList(s.dev, l.id)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), l)
			}
			fmt.Fprintf(c.OutOrStdout(), "Renamed to %q.\n", as[1])
			return nil
		},
	}
	return a.flags(c, true)
}
