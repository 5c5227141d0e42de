package tandemcli

import (
	"bufio"
	"fmt"
	"io"
	"slices"
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
	var each bool
	c := &cobra.Command{
		Use:     "add LIST TITLE [FIELD=VALUE]...",
		GroupID: groupLists,
		Short:   "Add an item to a list (or several: --each, or titles one a line on standard input with -)",
		Long: `Add an item to a list. With --each, every argument that is not FIELD=VALUE
is the title of another item; with - as the title, the titles are read from
standard input, one a line. FIELD=VALUE and --tag apply to every item added.`,
		Example: "  ferry add Groceries Milk qty=2 --tag dairy\n  ferry add Groceries --each Eggs Bread Butter\n  ferry add Groceries - < shopping.txt",
		Args:    args(2, -1, "add LIST TITLE [FIELD=VALUE]..."),
		RunE: func(c *cobra.Command, as []string) error {
			titles, rest := as[1:2], as[2:]
			switch {
			case as[1] == "-":
				var err error
				if titles, err = readTitles(c.InOrStdin()); err != nil {
					return err
				}
			case each:
				titles, rest = splitTitles(as[1:])
			}
			if len(titles) == 0 {
				return usagef("give the title of at least one item")
			}
			for _, t := range titles {
				if err := checkText("title", t, maxValue); err != nil {
					return err
				}
				if strings.TrimSpace(t) == "" {
					return usagef("an item needs a title")
				}
			}
			set, err := parseAssignments(rest)
			if err != nil {
				return err
			}
			if c.Flags().Changed("tag") {
				if err := checkTags(tags); err != nil {
					return err
				}
			}
			for _, x := range set {
				if x.field == fieldTitle {
					return usagef("the title is the second argument; drop title=")
				}
			}
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			var added []itemOut
			for _, title := range titles {
				fields := map[string][]byte{fieldTitle: []byte(title)}
				for _, x := range set {
					fields[x.field] = []byte(x.value)
				}
				id, err := s.dev.NewRecord(l.id, fields)
				if err != nil {
					return editErr(err, l)
				}
				for _, t := range tags {
					if err := s.dev.AddElement(l.id, id, fieldTags, []byte(t)); err != nil {
						return editErr(err, l)
					}
				}
				r, err := s.dev.Record(l.id, id)
				if err != nil {
					return err
				}
				added = append(added, item(r))
			}
			if a.json && len(added) == 1 && !each && as[1] != "-" {
				return emit(c.OutOrStdout(), added[0])
			}
			if a.json {
				return emit(c.OutOrStdout(), added)
			}
			for _, it := range added {
				fmt.Fprintf(c.OutOrStdout(), "Added %q to %s (%s).\n", it.Title, disp(l.Name), short(it.ID))
			}
			return nil
		},
	}
	c.Flags().StringSliceVar(&tags, "tag", nil, "tag the item (repeat or separate with commas)")
	c.Flags().BoolVar(&each, "each", false, "every argument that is not FIELD=VALUE is another item's title")
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
		Use:     "done LIST ITEM...",
		GroupID: groupLists,
		Short:   "Tick items off (--undo: not done)",
		Args:    args(2, -1, "done LIST ITEM..."),
		RunE: func(c *cobra.Command, as []string) error {
			return a.editItems(c, as[0], as[1:], func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error) {
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
	var done bool
	c := &cobra.Command{
		Use:     "rm LIST ITEM...",
		GroupID: groupLists,
		Short:   "Delete items, on every device (--done: every item that is done)",
		Example: "  ferry rm Groceries Milk Eggs\n  ferry rm Groceries --done",
		Args:    args(1, -1, "rm LIST ITEM... (or rm LIST --done)"),
		RunE: func(c *cobra.Command, as []string) error {
			switch {
			case done && len(as) > 1:
				return usagef("--done deletes every item that is done: name no items with it")
			case !done && len(as) < 2:
				return usagef("usage: ferry rm LIST ITEM... (or ferry rm LIST --done)")
			}
			rm := func(s *session, l listInfo, id tandem.RecordID, it itemOut) (string, error) {
				if err := s.dev.Delete(l.id, id); err != nil {
					return "", err
				}
				rememberDeleted(s.dir, deletedTitle{Item: it.ID, Title: it.Title})
				return fmt.Sprintf("Deleted %s from %s.", disp(it.Title), disp(l.Name)), nil
			}
			if done {
				return a.clearDone(c, as[0], rm)
			}
			return a.editItems(c, as[0], as[1:], rm)
		},
	}
	c.Flags().BoolVar(&done, "done", false, "delete every item that is done")
	return a.flags(c, true)
}

// maxTitles bounds the items one ferry add makes.
const maxTitles = 10000

// readTitles reads titles one a line (blank lines skipped).
func readTitles(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxTitles*(maxValue+2)))
	sc.Buffer(make([]byte, 64<<10), maxValue+2)
	var out []string
	for sc.Scan() {
		if t := strings.TrimRight(sc.Text(), "\r"); strings.TrimSpace(t) != "" {
			if len(out) == maxTitles {
				return nil, usagef("more than %d titles on standard input: add them in parts", maxTitles)
			}
			out = append(out, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usagef("a line on standard input is longer than %d bytes: one title a line", maxValue)
	}
	if len(out) == 0 {
		return nil, usagef("no titles on standard input: give one a line")
	}
	return out, nil
}

// splitTitles separates FIELD=VALUE arguments from titles (--each).
func splitTitles(as []string) (titles, set []string) {
	for _, x := range as {
		if f, _, ok := strings.Cut(x, "="); ok && checkFieldName(f) == nil {
			set = append(set, x)
		} else {
			titles = append(titles, x)
		}
	}
	return titles, set
}

// editItems runs fn on each item named in refs (all found before any is
// changed, so a wrong name changes nothing) and prints one line each.
func (a *app) editItems(c *cobra.Command, listRef string, refs []string, fn editFn) error {
	if len(refs) == 1 {
		return a.editItem(c, listRef, refs[0], fn)
	}
	s, l, err := a.openList(c.Context(), listRef)
	if err != nil {
		return err
	}
	defer s.close()
	type target struct {
		id tandem.RecordID
		it itemOut
	}
	var ts []target
	seen := map[string]bool{}
	for _, ref := range refs {
		id, it, err := findItem(s.dev, l, ref)
		if err != nil {
			return err
		}
		if !seen[it.ID] {
			seen[it.ID] = true
			ts = append(ts, target{id, it})
		}
	}
	return a.applyEach(c, s, l, len(ts), func(i int) (tandem.RecordID, itemOut) { return ts[i].id, ts[i].it }, fn)
}

// clearDone runs fn (a delete) on every item of the list that is done.
func (a *app) clearDone(c *cobra.Command, listRef string, fn editFn) error {
	s, l, err := a.openList(c.Context(), listRef)
	if err != nil {
		return err
	}
	defer s.close()
	all, err := items(s.dev, l, false)
	if err != nil {
		return err
	}
	done := slices.DeleteFunc(all, func(it itemOut) bool { return !it.Done })
	if len(done) == 0 && !a.json {
		fmt.Fprintf(c.OutOrStdout(), "No item of %s is done.\n", disp(l.Name))
		return nil
	}
	return a.applyEach(c, s, l, len(done), func(i int) (tandem.RecordID, itemOut) {
		id, _ := tandem.ParseRecordID(done[i].ID)
		return id, done[i]
	}, fn)
}

// applyEach runs fn on n items and prints what it did (JSON: the items
// afterwards).
func (a *app) applyEach(c *cobra.Command, s *session, l listInfo, n int, at func(int) (tandem.RecordID, itemOut), fn editFn) error {
	out := []itemOut{}
	for i := 0; i < n; i++ {
		id, it := at(i)
		msg, err := fn(s, l, id, it)
		if err != nil {
			return editErr(err, l)
		}
		if a.json {
			r, err := s.dev.Record(l.id, id)
			if err != nil {
				return err
			}
			out = append(out, item(r))
			continue
		}
		fmt.Fprintln(c.OutOrStdout(), msg)
	}
	if a.json {
		return emit(c.OutOrStdout(), out)
	}
	return nil
}
