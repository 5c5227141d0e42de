package tandemcli

import (
	"strings"

	"github.com/spf13/cobra"
)

// addCompletion makes the shell complete LIST and ITEM arguments with the
// profile's list names and item titles, for every command whose usage
// names them.
func (a *app) addCompletion(cmds []*cobra.Command) {
	for _, c := range cmds {
		a.addCompletion(c.Commands())
		words := strings.Fields(c.Use)
		if len(words) < 2 || words[1] != "LIST" || c.ValidArgsFunction != nil {
			continue
		}
		item := len(words) > 2 && strings.Trim(words[2], "[]") == "ITEM"
		c.ValidArgsFunction = func(c *cobra.Command, as []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(as) > 1 || len(as) == 1 && !item {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.complete(c, as, prefix), cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// complete lists the names (of lists, or of the items of list as[0])
// that start with prefix.
func (a *app) complete(c *cobra.Command, as []string, prefix string) []cobra.Completion {
	s, err := a.open(c.Context())
	if err != nil {
		return nil
	}
	defer s.close()
	var names []string
	if len(as) == 0 {
		lists, err := allLists(s.dev)
		if err != nil {
			return nil
		}
		for _, l := range lists {
			names = append(names, l.Names...)
		}
	} else {
		l, err := findList(s.dev, as[0])
		if err != nil {
			return nil
		}
		its, err := items(s.dev, l, false)
		if err != nil {
			return nil
		}
		for _, it := range its {
			names = append(names, it.Title)
		}
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(strings.ToLower(n), strings.ToLower(prefix)) {
			out = append(out, n)
		}
	}
	return out
}
