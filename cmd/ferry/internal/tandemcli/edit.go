package tandemcli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// editFn changes one item of list l and returns what to print.
type editFn func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error)

// editItem runs an edit of LIST ITEM and prints the item afterwards.
func (a *app) editItem(c *cobra.Command, listRef, itemRef string, fn editFn) error {
	s, err := a.open(c.Context())
	if err != nil {
		return err
	}
	defer s.close()
	l, err := findList(s.dev, listRef)
	if err != nil {
		return err
	}
	id, it, err := findItem(s.dev, l, itemRef)
	if err != nil {
		return err
	}
	msg, err := fn(s, l, id, it)
	if err != nil {
		return editErr(err, l)
	}
	return a.printItem(c, s, l, id, msg)
}

func (a *app) printItem(c *cobra.Command, s *session, l listInfo, id tandem.RecordID, msg string) error {
	r, err := s.dev.Record(l.id, id)
	if err != nil {
		return err
	}
	if a.json {
		return emit(c.OutOrStdout(), item(r))
	}
	fmt.Fprintln(c.OutOrStdout(), msg)
	return nil
}

func (a *app) addCmd() *cobra.Command {
	var tags []string
	c := &cobra.Command{
		Use:     "add LIST TITLE [FIELD=VALUE]...",
		GroupID: groupLists,
		Short:   "Add an item to a list",
		Example: "  ferry add Groceries Milk qty=2 --tag dairy",
		Args:    args(2, -1, "add LIST TITLE [FIELD=VALUE]..."),
		RunE: func(c *cobra.Command, as []string) error {
			if err := checkText("title", as[1], maxValue); err != nil {
				return err
			}
			if strings.TrimSpace(as[1]) == "" {
				return usagef("an item needs a title")
			}
			set, err := parseAssignments(as[2:])
			if err != nil {
				return err
			}
			if c.Flags().Changed("tag") {
				if err := checkTags(tags); err != nil {
					return err
				}
			}
			fields := map[string][]byte{fieldTitle: []byte(as[1])}
			for _, x := range set {
				if x.field == fieldTitle {
					return usagef("the title is the second argument; drop title=")
				}
				fields[x.field] = []byte(x.value)
			}
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			id, err := s.dev.NewRecord(l.id, fields)
			if err != nil {
				return editErr(err, l)
			}
			for _, t := range tags {
				if err := s.dev.AddElement(l.id, id, fieldTags, []byte(t)); err != nil {
					return editErr(err, l)
				}
			}
			return a.printItem(c, s, l, id, fmt.Sprintf("Added %q to %s (%s).", as[1], disp(l.Name), short(id.String())))
		},
	}
	c.Flags().StringSliceVar(&tags, "tag", nil, "tag the item (repeat or separate with commas)")
	return a.flags(c, true)
}

func checkTags(tags []string) error {
	if len(tags) == 0 {
		return usagef("a tag is one line of text, not empty")
	}
	for _, t := range tags {
		if strings.TrimSpace(t) == "" || strings.ContainsAny(t, "\r\n\x00") {
			return usagef("a tag is one line of text, not empty")
		}
		if err := checkText("tag", t, 1000); err != nil {
			return err
		}
	}
	return nil
}

func (a *app) setCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "set LIST ITEM FIELD=VALUE...",
		GroupID: groupLists,
		Short:   "Set fields of an item (title=..., qty=..., any name); this also settles a conflict",
		Example: "  ferry set Groceries Milk qty=3 note='the oat one'",
		Args:    args(3, -1, "set LIST ITEM FIELD=VALUE..."),
		RunE: func(c *cobra.Command, as []string) error {
			set, err := parseAssignments(as[2:])
			if err != nil {
				return err
			}
			for _, x := range set {
				if x.field == fieldTitle && strings.TrimSpace(x.value) == "" {
					return usagef("an item needs a title: give title=TEXT, or ferry rm to delete the item")
				}
			}
			return a.editItem(c, as[0], as[1], func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error) {
				var done []string
				for _, x := range set {
					if err := s.dev.SetString(l.id, id, x.field, x.value); err != nil {
						return "", err
					}
					done = append(done, x.field+" = "+x.value)
				}
				return fmt.Sprintf("%s: %s.", disp(it.Title), disp(strings.Join(done, ", "))), nil
			})
		},
	}
	return a.flags(c, true)
}

func (a *app) tagCmd(add bool) *cobra.Command {
	use, short, verb := "tag", "Add tags to an item", "Tagged"
	if !add {
		use, short, verb = "untag", "Remove tags from an item (a tag added at the same time elsewhere stays)", "Untagged"
	}
	c := &cobra.Command{
		Use:     use + " LIST ITEM TAG...",
		GroupID: groupLists,
		Short:   short,
		Args:    args(3, -1, use+" LIST ITEM TAG..."),
		RunE: func(c *cobra.Command, as []string) error {
			tags := as[2:]
			if err := checkTags(tags); err != nil {
				return err
			}
			return a.editItem(c, as[0], as[1], func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error) {
				for _, t := range tags {
					var err error
					if add {
						err = s.dev.AddElement(l.id, id, fieldTags, []byte(t))
					} else {
						err = s.dev.RemoveElement(l.id, id, fieldTags, []byte(t))
					}
					if err != nil {
						return "", err
					}
				}
				return fmt.Sprintf("%s %s: %s.", verb, disp(it.Title), disp(strings.Join(tags, ", "))), nil
			})
		},
	}
	return a.flags(c, true)
}

func (a *app) doneCmd() *cobra.Command {
	var undo bool
	c := &cobra.Command{
		Use:     "done LIST ITEM",
		GroupID: groupLists,
		Short:   "Tick an item off (--undo: not done)",
		Args:    args(2, 2, "done LIST ITEM"),
		RunE: func(c *cobra.Command, as []string) error {
			return a.editItem(c, as[0], as[1], func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error) {
				v, msg := "yes", "Done: "+disp(it.Title)+"."
				if undo {
					v, msg = "no", "Not done: "+disp(it.Title)+"."
				}
				return msg, s.dev.SetString(l.id, id, fieldDone, v)
			})
		},
	}
	c.Flags().BoolVar(&undo, "undo", false, "mark the item not done")
	return a.flags(c, true)
}

func (a *app) rmCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "rm LIST ITEM",
		GroupID: groupLists,
		Short:   "Delete an item, on every device",
		Args:    args(2, 2, "rm LIST ITEM"),
		RunE: func(c *cobra.Command, as []string) error {
			return a.editItem(c, as[0], as[1], func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error) {
				return fmt.Sprintf("Deleted %s from %s.", disp(it.Title), disp(l.Name)), s.dev.Delete(l.id, id)
			})
		},
	}
	return a.flags(c, true)
}
