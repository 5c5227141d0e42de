package tandemcli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// Edits the group would not accept (made before the owner made you a
// reader or removed you, or a rename by someone who isn't the owner) are
// not part of the list any more: the library keeps them aside
// (tandem.Device.Refused). show, status and sync say so; ferry refused
// lists them, copies them into a list you can write, or discards them.
// docs/decisions/tandem-epoch-state.md.

// refusedOut is one refused edit as the CLI shows it.
type refusedOut struct {
	ItemID  string `json:"item_id"`
	Item    string `json:"item"` // the item's title here, or the refused title
	Field   string `json:"field"`
	Kind    string `json:"kind"` // set, add, remove, delete
	Value   string `json:"value"`
	Why     string `json:"why"` // one line for a person
	edit    tandem.RefusedEdit
	current bool // the item is still in the list
}

// refusedOf lists list l's refused edits.
func refusedOf(d *tandem.Device, l listInfo) ([]refusedOut, error) {
	rs, err := d.Refused(l.id)
	if err != nil {
		return nil, err
	}
	out := make([]refusedOut, 0, len(rs))
	for _, r := range rs {
		o := refusedOut{ItemID: r.Record().String(), Field: r.Field(), Kind: string(r.Kind()), Why: r.Why().Message(), edit: r}
		switch r.Kind() {
		case tandem.EditSet:
			o.Value = string(r.Value())
		case tandem.EditAdd, tandem.EditRemove:
			o.Value = string(r.Element())
		}
		if it, err := d.Record(l.id, r.Record()); err == nil {
			o.Item, o.current = it.Get(fieldTitle), true
		}
		out = append(out, o)
	}
	for i := range out { // an item that exists only in refused edits: its refused title
		if out[i].Item == "" {
			out[i].Item = refusedTitle(out, out[i].ItemID)
		}
	}
	return out, nil
}

// refusedTitle is the title a refused edit gave item id, if any.
func refusedTitle(rs []refusedOut, id string) string {
	for _, r := range rs {
		if r.ItemID == id && r.Field == fieldTitle && r.Kind == string(tandem.EditSet) {
			return r.Value
		}
	}
	return "(untitled item)"
}

// String is the edit on one line.
func (r refusedOut) String() string {
	var what string
	switch tandem.EditKind(r.Kind) {
	case tandem.EditSet:
		what = fmt.Sprintf("%s = %s", r.Field, r.Value)
	case tandem.EditAdd:
		what = fmt.Sprintf("%s + %s", r.Field, r.Value)
	case tandem.EditRemove:
		what = fmt.Sprintf("%s - %s", r.Field, r.Value)
	default:
		what = "deleted"
	}
	return fmt.Sprintf("%s %s: %s (%s)", short(r.ItemID), r.Item, what, r.Why)
}

// printRefused says, under a list, which of your edits were not shared.
func printRefused(w io.Writer, l listInfo, rs []refusedOut) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "  Not shared: %d of your edit(s), kept only on this device:\n", len(rs))
	for _, r := range rs {
		fmt.Fprintf(w, "    %s\n", r)
	}
	fmt.Fprintf(w, "  ferry refused %s --copy-to LIST copies them into a list you can write; --discard drops them.\n", quoteRef(l))
}

// quoteRef names list l for a command line.
func quoteRef(l listInfo) string {
	if strings.ContainsAny(l.Name, " \t'\"\\$`") || l.Name == "" {
		return short(l.ID)
	}
	return l.Name
}

// refusedCount counts the refused edits of every list, for status and sync.
func refusedCount(d *tandem.Device) int { return d.Status().Refused }

// refusedLine is what sync and status say when some edits were not shared.
func refusedLine(n int) string {
	return fmt.Sprintf("%d of your edit(s) were not shared: the list's owner no longer accepts them from you. ferry show LIST says which, ferry refused LIST what to do.", n)
}

type refusedCmdOut struct {
	List    listInfo     `json:"list"`
	Refused []refusedOut `json:"refused"`
	Copied  int          `json:"copied"`
	Dropped int          `json:"dropped"`
}

func (a *app) refusedCmd() *cobra.Command {
	var discard bool
	var copyTo string
	c := &cobra.Command{
		Use:     "refused LIST",
		GroupID: groupLists,
		Short:   "Show your edits of a list that were not shared; copy them to a list you can write, or discard them",
		Long: `An edit you made that the list's owner no longer accepts from you (made
before they made you a reader or removed you) is not shared and not shown
as part of the list. ferry refused LIST shows such edits; with --copy-to
OTHER it puts them, as new items, into OTHER (a list you can write) and then
drops them here; with --discard it drops them.`,
		Args: args(1, 1, "refused LIST"),
		RunE: func(c *cobra.Command, as []string) error {
			if discard && copyTo != "" {
				return usagef("give --copy-to or --discard, not both")
			}
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			rs, err := refusedOf(s.dev, l)
			if err != nil {
				return err
			}
			out := refusedCmdOut{List: l, Refused: rs}
			if copyTo != "" && len(rs) > 0 {
				to, err := findList(s.dev, copyTo)
				if err != nil {
					return err
				}
				if to.ID == l.ID {
					return usagef("copy them into another list: %s does not accept them", l.Name)
				}
				if out.Copied, err = copyRefused(s.dev, to, rs); err != nil {
					return editErr(err, to)
				}
				discard = true
			}
			if discard && len(rs) > 0 {
				if out.Dropped, err = s.dev.DiscardRefused(l.id); err != nil {
					return err
				}
			}
			if a.json {
				return emit(c.OutOrStdout(), out)
			}
			w := c.OutOrStdout()
			switch {
			case len(rs) == 0:
				fmt.Fprintf(w, "All your edits of %s were shared.\n", l.Name)
			case out.Copied > 0:
				fmt.Fprintf(w, "Copied %d item(s) with your %d unshared edit(s) into %s, and dropped them from %s.\n", out.Copied, len(rs), copyTo, l.Name)
			case out.Dropped > 0:
				fmt.Fprintf(w, "Dropped %d unshared edit(s) of %s.\n", out.Dropped, l.Name)
			default:
				printRefused(w, l, rs)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&discard, "discard", false, "drop the unshared edits for good")
	c.Flags().StringVar(&copyTo, "copy-to", "", "copy the unshared edits, as new items, into this list, then drop them here")
	return a.flags(c, true)
}

// copyRefused writes rs into list to: one new item per item they edited,
// titled as the item is here (or as the refused edit titled it), with the
// refused values and elements. It reports how many items it made.
func copyRefused(d *tandem.Device, to listInfo, rs []refusedOut) (int, error) {
	made := map[string]tandem.RecordID{}
	var order []string
	for _, r := range rs {
		if _, ok := made[r.ItemID]; !ok {
			id, err := d.NewRecord(to.id, map[string][]byte{fieldTitle: []byte(r.Item)})
			if err != nil {
				return len(made), err
			}
			made[r.ItemID] = id
			order = append(order, r.ItemID)
		}
	}
	for _, r := range rs {
		id := made[r.ItemID]
		var err error
		switch tandem.EditKind(r.Kind) {
		case tandem.EditSet:
			if r.Field != fieldTitle {
				err = d.Set(to.id, id, r.Field, r.edit.Value())
			}
		case tandem.EditAdd:
			err = d.AddElement(to.id, id, r.Field, r.edit.Element())
		}
		if err != nil {
			return len(order), err
		}
	}
	return len(order), nil
}
