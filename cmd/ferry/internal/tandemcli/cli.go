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
	trust   *trust // connect --ca-file: trusted by the device a connect opens
	quiet   bool   // -q: no confirmations of what was done, no progress
	verbose bool   // -v: the device's log on stderr too
}

// annQuiet marks a command whose text output only confirms what it did:
// -q leaves it out (a command that shows data shows it anyway).
const annQuiet = "ferry-quiet"

// chatty are the commands whose output -q leaves out.
var chatty = map[string]bool{"add": true, "set": true, "tag": true, "untag": true, "done": true, "rm": true, "new": true, "rename": true,
	"copy": true, "delete": true, "sync": true, "connect": true, "jmap": true, "imap": true, "paste": true, "approve": true, "decline": true,
	"leave": true, "role": true, "remove": true, "finish": true, "discard": true, "new-key": true, "make-private": true, "name": true}

// markQuiet annotates the chatty commands under cs.
func markQuiet(cs []*cobra.Command) {
	for _, c := range cs {
		if chatty[c.Name()] {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[annQuiet] = "1"
		}
		markQuiet(c.Commands())
	}
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
		a.initCmd(), a.restoreCmd(), a.nameCmd(), a.connectCmd(), a.hubCmd(), a.backupKeyCmd(), a.deviceCmd(), a.startOverCmd(),
		a.newCmd(), a.listsCmd(), a.showCmd(), a.refusedCmd(), a.renameCmd(), a.copyCmd(), a.deleteCmd(),
		a.addCmd(), a.setCmd(), a.tagCmd(true), a.tagCmd(false), a.doneCmd(), a.rmCmd(),
		a.shareCmd(), a.joinCmd(), a.requestsCmd(), a.decideCmd(true), a.decideCmd(false), a.membersCmd(), a.roleCmd(), a.removeCmd(), a.leaveCmd(),
		a.statusCmd(), a.syncCmd(),
	} {
		root.AddCommand(c)
	}
	root.AddCommand(a.inFlightCmds()...)
	markQuiet(root.Commands())
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
	c.PreRun = func(c *cobra.Command, _ []string) {
		a.stdout, a.stderr = c.OutOrStdout(), c.ErrOrStderr() // raw: progress lines
		c.SetOut(newSafeWriter(a.stdout))                     // what members wrote can't reach the terminal raw
		c.SetErr(newSafeWriter(a.stderr))
		if a.quiet && !a.json && c.Annotations[annQuiet] != "" {
			c.SetOut(io.Discard)
		}
	}
	c.Flags().StringVar(&a.profile, "profile", "", "the profile directory: one device (default $FERRY_HOME, else $XDG_DATA_HOME/ferry)")
	c.Flags().BoolVarP(&a.quiet, "quiet", "q", false, "print no confirmation of what was done (results and errors still)")
	c.Flags().BoolVarP(&a.verbose, "verbose", "v", false, "also show what the device does (its log) on stderr")
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
  130  Ctrl-C stopped it before it was done (sync --watch and a share waiting
     for someone stop there by design, and exit 0)

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
		want, ok := map[string]string{"duration": "a duration such as 30s, 5m, 1h or 7d", "int": "a whole number", "bool": "true or false"}[f.Value.Type()]
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
			cmd.InitDefaultVersionFlag() // ferry help lists --version, as ferry --help does
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
