package tandemcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// findMember resolves a member of l by name (nameKey: NFKC, any case) or the
// start of their user ID as ferry members --json shows it.
func findMember(d *tandem.Device, l listInfo, ref string) (tandem.Member, error) {
	ms, err := d.Members(l.id)
	if err != nil {
		return tandem.Member{}, err
	}
	var hits []tandem.Member
	for _, m := range ms {
		id := strings.ReplaceAll(m.User.String(), " ", "")
		if nameKey(m.Name) == nameKey(ref) || len(ref) >= 4 && strings.HasPrefix(id, strings.ReplaceAll(strings.ToLower(ref), " ", "")) {
			hits = append(hits, m)
		}
	}
	switch len(hits) {
	case 1:
		if hits[0].User == d.UserID() {
			return tandem.Member{}, failf("invalid", "that is you: the owner's role can't change (ferry delete %s deletes the list)", short(l.ID))
		}
		return hits[0], nil
	case 0:
		return tandem.Member{}, failf("not_found", "%s has no member %q: ferry members %s shows them", l.Name, ref, short(l.ID))
	}
	return tandem.Member{}, failf("ambiguous", "%d members of %s are called %q: give the start of their user ID (ferry members --json)", len(hits), l.Name, ref)
}

// syncForSharing syncs before a sharing change, so that it reads the
// current roster; without a connection it says what §13.3 says.
func (a *app) syncForSharing(c *cobra.Command, s *session) error {
	if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil {
		if classify(err).Kind == "offline" {
			return failf("offline", "Changing who a list is shared with needs a connection.")
		}
		return err
	}
	return nil
}

// sharingChange runs one change of who a list is shared with, within the
// sync timeout, and records the sync's outcome.
func (a *app) sharingChange(c *cobra.Command, s *session, l listInfo, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(c.Context(), syncTimeout)
	defer cancel()
	err := a.withProgress(s, "Changing who the list is shared with", func() error { return fn(ctx) })
	s.saveState(err)
	if what, ok, _ := s.dev.ChangeInFlight(l.id); ok && tandem.CodeOf(err) == tandem.CodeInFlight {
		// §11.7: this device can finish or discard the other one's change.
		return failf("in_flight", "another of your devices started %s and didn't finish: ferry finish %s, or ferry discard %s, first", what, short(l.ID), short(l.ID))
	}
	return err
}

func (a *app) roleCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "role LIST MEMBER writer|reader",
		GroupID: groupShare,
		Short:   "Let a member edit a list, or make them read-only (its owner only; needs a connection)",
		Args:    args(3, 3, "role LIST MEMBER writer|reader"),
		RunE: func(c *cobra.Command, as []string) error {
			role := tandem.Role(strings.ToLower(as[2]))
			if role != tandem.RoleWriter && role != tandem.RoleReader {
				return usagef("a member is a writer or a reader, not %q", as[2])
			}
			s, l, m, err := a.openMember(c, as[0], as[1])
			if err != nil {
				return err
			}
			defer s.close()
			if m.Role == role {
				return failf("invalid", "%s is already a %s of %s", m.Name, role, l.Name)
			}
			if err := a.sharingChange(c, s, l, func(ctx context.Context) error { return s.dev.SetRole(ctx, l.id, m.User, role) }); err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), memberOut{Name: m.Name, User: m.User.String(), Role: string(role)})
			}
			fmt.Fprintf(c.OutOrStdout(), "%s is now a %s of %s.\n", disp(m.Name), role, disp(l.Name))
			return nil
		},
	}
	return a.flags(c, true)
}

// openMember opens the device, syncs (a sharing change is made on the
// current roster) and finds the list and the member a user named; the
// caller closes the session.
func (a *app) openMember(c *cobra.Command, list, member string) (*session, listInfo, tandem.Member, error) {
	s, err := a.open(c.Context())
	if err != nil {
		return nil, listInfo{}, tandem.Member{}, err
	}
	var l listInfo
	err = a.syncForSharing(c, s)
	if err == nil {
		l, err = findList(s.dev, list)
	}
	var m tandem.Member
	if err == nil {
		m, err = findMember(s.dev, l, member)
	}
	if err != nil {
		s.close()
		return nil, listInfo{}, tandem.Member{}, err
	}
	return s, l, m, nil
}

func (a *app) removeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "remove LIST MEMBER",
		GroupID: groupShare,
		Short:   "Remove someone from a list; the list gets a new key (its owner only; needs a connection)",
		Args:    args(2, 2, "remove LIST MEMBER"),
		RunE: func(c *cobra.Command, as []string) error {
			s, l, m, err := a.openMember(c, as[0], as[1])
			if err != nil {
				return err
			}
			defer s.close()
			if !a.confirm(c, fmt.Sprintf("Remove %s from %s?", disp(m.Name), disp(l.Name))) {
				return failf("declined", "%s stays in %s (answer y to remove)", m.Name, l.Name)
			}
			if err := a.sharingChange(c, s, l, func(ctx context.Context) error { return s.dev.RemoveMember(ctx, l.id, m.User) }); err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), memberOut{Name: m.Name, User: m.User.String(), Role: string(m.Role)})
			}
			fmt.Fprintf(c.OutOrStdout(), "Removed %s from %s; the list has a new key.\n", disp(m.Name), disp(l.Name))
			return nil
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}

func (a *app) deleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "delete LIST",
		GroupID: groupLists,
		Short:   "Delete a list for everyone it is shared with (its owner only; no undo)",
		Args:    args(1, 1, "delete LIST"),
		RunE: func(c *cobra.Command, as []string) error {
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			switch {
			case l.State == tandem.StateDeleted:
				return failf("not_writable", "%s is already deleted; it stays here read-only (ferry copy makes it a list again)", l.Name)
			case l.Role != tandem.RoleOwner:
				return failf("not_writable", "only the owner of %s can delete it; ferry leave %s takes it off your devices", l.Name, short(l.ID))
			}
			if !a.confirm(c, fmt.Sprintf("Delete %s for everyone? There is no undo.", disp(l.Name))) {
				return failf("declined", "%s is kept (answer y to delete it)", l.Name)
			}
			if err := a.sharingChange(c, s, l, func(ctx context.Context) error { return s.dev.DeleteCollection(ctx, l.id) }); err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), map[string]any{"list": l.ID, "name": l.Name, "deleted": true})
			}
			fmt.Fprintf(c.OutOrStdout(), "Deleted %s. Its members keep a read-only copy (ferry copy makes it a list again).\n", disp(l.Name))
			return nil
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}
