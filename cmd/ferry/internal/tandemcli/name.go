package tandemcli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
)

// nameCmd is "ferry name [NEW]": the name this profile gives when it
// joins a list, makes one, or pairs a device. Lists you are already in
// keep the name their members know you by.
func (a *app) nameCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "name [NEW]",
		GroupID: groupSetup,
		Short:   "Show or change the name you give when you join or make a list",
		Long: `Show the name this profile gives when it asks to join a list, makes a
list or adds a device; with NEW, change it for what comes next. Lists you
are in already keep the name their members know you by.`,
		Args: args(0, 1, "name [NEW]"),
		RunE: func(c *cobra.Command, as []string) error {
			dir, _, err := a.profileDir()
			if err != nil {
				return err
			}
			p, err := readProfile(dir)
			if err != nil {
				return err
			}
			if len(as) == 1 {
				if p.Name, err = a.userName(as[0]); err != nil {
					return err
				}
				if err := writeJSON(filepath.Join(dir, profileFile), p); err != nil {
					return err
				}
			}
			if a.json {
				return emit(c.OutOrStdout(), map[string]any{"name": p.Name})
			}
			if len(as) == 1 {
				fmt.Fprintf(c.OutOrStdout(), "From now on you join and make lists as %s.\n", disp(p.Name))
				return nil
			}
			fmt.Fprintf(c.OutOrStdout(), "You join and make lists as %s (ferry name NEW changes it).\n", disp(p.Name))
			return nil
		},
	}
	return a.flags(c, true)
}
