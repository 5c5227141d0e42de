package tandemcli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// listChange is a command on one list that changes who it is shared with:
// it syncs first, finds the list, asks, and runs within the sync timeout.
type listChange struct {
	use, short, long string
	confirm          func(l listInfo) string // the question, or nil
	run              func(ctx context.Context, s *session, l listInfo) (string, error)
}

func (a *app) listChangeCmd(lc listChange) *cobra.Command {
	c := &cobra.Command{
		Use:     lc.use + " LIST",
		GroupID: groupShare,
		Short:   lc.short,
		Long:    lc.long,
		Args:    args(1, 1, lc.use+" LIST"),
		RunE: func(c *cobra.Command, as []string) error {
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			// Asked before anything happens: an answer of no leaves the
			// device as it was, without even a sync.
			if lc.confirm != nil && !a.confirm(c, lc.confirm(l)) {
				return failf("declined", "nothing changed in %s", l.Name)
			}
			if err := a.syncForSharing(c, s); err != nil {
				return err
			}
			if l, err = findList(s.dev, as[0]); err != nil {
				return err
			}
			var msg string
			err = a.sharingChange(c, s, l, func(ctx context.Context) (err error) {
				msg, err = lc.run(ctx, s, l)
				return err
			})
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), map[string]any{"list": l.ID, "name": l.Name, "done": msg})
			}
			fmt.Fprintln(c.OutOrStdout(), msg)
			return nil
		},
	}
	if lc.confirm != nil {
		c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	}
	return a.flags(c, true)
}

// inFlight is the change another device left unfinished in l, or an error.
func inFlight(s *session, l listInfo) (string, error) {
	what, ok, err := s.dev.ChangeInFlight(l.id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", failf("not_found", "no change started on another device is waiting in %s", l.Name)
	}
	return what, nil
}

func (a *app) inFlightCmds() []*cobra.Command {
	return []*cobra.Command{
		a.listChangeCmd(listChange{
			use: "finish", short: "Finish a sharing change another of your devices started and didn't finish",
			run: func(ctx context.Context, s *session, l listInfo) (string, error) {
				what, err := inFlight(s, l)
				if err != nil {
					return "", err
				}
				if err := s.dev.FinishChange(ctx, l.id); err != nil {
					if tandem.CodeOf(err) == tandem.CodeInFlight {
						return "", failf("in_flight", "the other device didn't get far enough with %s: ferry discard %s, then make the change here", what, short(l.ID))
					}
					return "", err
				}
				return "Finished " + what + ".", nil
			},
		}),
		a.listChangeCmd(listChange{
			use: "discard", short: "Discard a sharing change another of your devices started and didn't finish",
			confirm: func(l listInfo) string {
				return "Discard the change another of your devices started in " + disp(l.Name) + "?"
			},
			run: func(ctx context.Context, s *session, l listInfo) (string, error) {
				what, err := inFlight(s, l)
				if err != nil {
					return "", err
				}
				if err := s.dev.DiscardChange(ctx, l.id); err != nil {
					return "", err
				}
				return "Discarded " + what + ".", nil
			},
		}),
		a.listChangeCmd(listChange{
			use: "new-key", short: "Give a list a new key, with the same members (its owner only; needs a connection)",
			run: func(ctx context.Context, s *session, l listInfo) (string, error) {
				return l.Name + " has a new key.", s.dev.NewKey(ctx, l.id)
			},
		}),
		a.listChangeCmd(listChange{
			use: "make-private", short: "Remove everyone but you from a list, with a new key (its owner only)",
			confirm: func(l listInfo) string { return "Remove everyone but you from " + disp(l.Name) + "?" },
			run: func(ctx context.Context, s *session, l listInfo) (string, error) {
				return l.Name + " is private again: only you have it.", s.dev.MakePrivate(ctx, l.id)
			},
		}),
	}
}
