// Package tandemcli is the Tandem part of the ferry command: a profile
// holds one device of one user, and the commands keep lists in sync
// through a mail account (tandem.txt §13), using only the public package
// github.com/ferry-sync/ferry/tandem.
package tandemcli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
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
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &Error{Exit: ExitUsage, Kind: "usage", Msg: err.Error() + " (see ferry help)", Err: err}
	})
	root.AddGroup(&cobra.Group{ID: groupSetup, Title: "Set up a device (Tandem):"},
		&cobra.Group{ID: groupLists, Title: "Lists (Tandem):"},
		&cobra.Group{ID: groupShare, Title: "Sharing (Tandem):"},
		&cobra.Group{ID: groupSync, Title: "Sync (Tandem):"})
	for _, c := range []*cobra.Command{
		a.initCmd(), a.restoreCmd(), a.connectCmd(), a.hubCmd(), a.backupKeyCmd(), a.deviceCmd(), a.startOverCmd(),
		a.newCmd(), a.listsCmd(), a.showCmd(), a.renameCmd(), a.copyCmd(), a.deleteCmd(),
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
			return usagef("usage: ferry %s (see ferry %s --help)", names, c.Name())
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
