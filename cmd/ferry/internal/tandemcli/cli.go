// Package tandemcli is the Tandem part of the ferry command: a profile
// holds one device of one user, and the commands keep lists in sync
// through a mail account (tandem.txt §13), using only the public package
// github.com/ferry-sync/ferry/tandem.
package tandemcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Config is what the commands take from their surroundings.
type Config struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// app is the state one command line shares between its commands' flags
// and code: made anew for every root command, so there is no global state.
type app struct {
	cfg     Config
	getenv  func(string) string
	profile string // --profile
	json    bool   // --json
	yes     bool   // --yes
	stdout  io.Writer
	stderr  io.Writer
}

// Register adds the Tandem commands to root, and makes root's flag errors
// usage errors (exit 2).
func Register(root *cobra.Command, cfg Config) {
	a := &app{cfg: cfg, getenv: cfg.Getenv}
	if a.getenv == nil {
		a.getenv = os.Getenv
	}
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(helpCmd(root))
	root.AddGroup(&cobra.Group{ID: groupSetup, Title: "Set up a device (Tandem):"},
		&cobra.Group{ID: groupLists, Title: "Lists (Tandem):"},
		&cobra.Group{ID: groupShare, Title: "Sharing (Tandem):"},
		&cobra.Group{ID: groupSync, Title: "Sync (Tandem):"})
	for _, c := range []*cobra.Command{
		a.initCmd(), a.restoreCmd(), a.connectCmd(), a.hubCmd(), a.backupKeyCmd(), a.deviceCmd(), a.startOverCmd(),
		a.newCmd(), a.listsCmd(), a.showCmd(), a.refusedCmd(), a.renameCmd(), a.copyCmd(), a.deleteCmd(),
		a.addCmd(), a.setCmd(), a.tagCmd(true), a.tagCmd(false), a.doneCmd(), a.rmCmd(),
		a.shareCmd(), a.joinCmd(), a.requestsCmd(), a.decideCmd(true), a.decideCmd(false), a.membersCmd(), a.roleCmd(), a.removeCmd(), a.leaveCmd(),
		a.statusCmd(), a.syncCmd(),
	} {
		root.AddCommand(c)
	}
	root.AddCommand(a.inFlightCmds()...)
	a.addCompletion(root.Commands())
	root.AddCommand(a.manCmd(root), exitCodesTopic())
}

const (
	groupSetup = "tandem-setup"
	groupLists = "tandem-lists"
	groupSync  = "tandem-sync"
)

// flags adds the flags every Tandem command has: --profile, and --json
// for commands that print data.
func (a *app) flags(c *cobra.Command, withJSON bool) *cobra.Command {
	c.PreRun = func(c *cobra.Command, _ []string) { a.stdout, a.stderr = c.OutOrStdout(), c.ErrOrStderr() }
	c.Flags().StringVar(&a.profile, "profile", "", "the profile directory: one device (default $FERRY_HOME, else $XDG_DATA_HOME/ferry)")
	if withJSON {
		c.Flags().BoolVar(&a.json, "json", false, "print the result as JSON (errors as JSON on stderr)")
	}
	return c
}

// args checks the number of positional arguments: at least min, at most
// max (max < 0: no limit).
func args(min, max int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, as []string) error {
		if len(as) < min || max >= 0 && len(as) > max {
			if names == "" {
				names = c.Name()
			}
			return usagef("usage: ferry %s (see %s --help)", names, c.CommandPath())
		}
		return nil
	}
}

// emit writes v as one line of JSON.
func emit(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func exitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What ferry's exit codes mean",
		Long:  exitCodesText,
	}
}

const exitCodesText = `Exit status: ferry exits with
  0  the command did what it was asked
  1  it could not: the message (one line on stderr) says why and what to do
  2  the command line was wrong: an unknown command or flag, a missing or bad argument

With --json, an error is printed on stderr as
  {"error":{"kind":"...","message":"..."},"exit":N}
where kind is a stable word for scripts (usage, not_found, auth, offline, ...).`

// flagError turns a flag parsing error into a usage error (exit 2) that
// names the flag, what it takes and the command's help.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) && iv.GetFlag() != nil {
		f := iv.GetFlag()
		want, ok := map[string]string{"duration": "a duration such as 30s, 5m or 1h", "int": "a whole number", "bool": "true or false"}[f.Value.Type()]
		if ok {
			msg = fmt.Sprintf("--%s takes %s, not %q", f.Name, want, iv.GetValue())
		}
	}
	return &Error{Exit: ExitUsage, Kind: "usage", Msg: msg + " (see " + c.CommandPath() + " --help)", Err: err}
}

// helpCmd is "ferry help [COMMAND]": cobra's, except that an unknown
// topic is a usage error (exit 2) instead of a page of usage and exit 0.
func helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, as []string) error {
			cmd, _, err := root.Find(as)
			if err != nil || cmd == nil || (len(as) > 0 && cmd == root) {
				return usagef("there is no command or help topic %q (ferry help lists them)", strings.Join(as, " "))
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, as []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, sub := range root.Commands() {
				if sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}
