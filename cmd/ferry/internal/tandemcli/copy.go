package tandemcli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

func (a *app) copyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "copy LIST [NEWNAME]",
		GroupID: groupLists,
		Short:   "Copy a list into a new one of yours (the way on for a list that can't sync any more)",
		Long: `Copy a list's items into a new list that you own (for a list that can't
sync any more stays readable; its copy is yours, and you share it again).
A field in conflict is copied with the first of its values; ferry says which.`,
		Args: args(1, 2, "copy LIST [NEWNAME]"),
		RunE: func(c *cobra.Command, as []string) error {
			if len(as) == 2 {
				if err := checkListName(as[1]); err != nil {
					return err
				}
			}
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			name := l.Name + " (copy)"
			if len(as) == 2 {
				name = as[1]
			}
			if checkListName(name) != nil {
				return usagef("give the copy a name: ferry copy LIST NEWNAME")
			}
			id, conflicts, err := copyList(s.dev, l, name)
			if err != nil {
				return err
			}
			nl, err := oneList(s.dev, id)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), map[string]any{"list": nl, "from": l.ID, "conflicts_resolved": conflicts})
			}
			fmt.Fprintf(c.OutOrStdout(), "Copied %s into the new list %q (%s), %d item(s).\n", disp(l.Name), name, short(nl.ID), nl.Items)
			if conflicts > 0 {
				fmt.Fprintf(c.OutOrStdout(), "%d field(s) in conflict were copied with their first value: check them with ferry show.\n", conflicts)
			}
			return nil
		},
	}
	return a.flags(c, true)
}

// copyList makes a new list named name with l's items (tandem's
// CopyCollection); it returns how many conflicting fields were copied
// with one value.
func copyList(d *tandem.Device, l listInfo, name string) (tandem.CollectionID, int, error) {
	recs, err := d.Records(l.id)
	if err != nil {
		return tandem.CollectionID{}, 0, err
	}
	conflicts := 0
	for _, r := range recs {
		for _, f := range r.Fields {
			if !r.Deleted && f.Conflict() {
				conflicts++
			}
		}
	}
	id, err := d.CopyCollection(l.id, name)
	return id, conflicts, err
}
