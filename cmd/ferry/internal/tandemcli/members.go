package tandemcli

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

type memberOut struct {
	Name string `json:"name"`
	User string `json:"user"`
	Role string `json:"role"`
	You  bool   `json:"you"`
	Left bool   `json:"left"`
}

type membersOut struct {
	List    listInfo     `json:"list"`
	Members []memberOut  `json:"members"`
	Invites []inviteOut  `json:"invites"`
	Waiting []requestOut `json:"requests"`
}

type inviteOut struct {
	Role        string    `json:"role"`
	AutoApprove bool      `json:"auto_approve"`
	MaxUses     int       `json:"max_uses"`
	Expires     time.Time `json:"expires"`
}

func (a *app) membersCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "members LIST",
		GroupID: groupShare,
		Short:   "Show who a list is shared with, their roles, and (for its owner) open invites and requests",
		Args:    args(1, 1, "members LIST"),
		RunE: func(c *cobra.Command, as []string) error {
			s, l, err := a.openList(c.Context(), as[0])
			if err != nil {
				return err
			}
			defer s.close()
			// Requests and leave notices arrive by sync (tandem keeps them in memory).
			if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil && classify(err).Kind != "offline" && classify(err).Kind != "no_hub" {
				return err
			}
			out, err := members(s.dev, l)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), out)
			}
			printMembers(c.OutOrStdout(), out)
			return nil
		},
	}
	return a.flags(c, true)
}

func members(d *tandem.Device, l listInfo) (membersOut, error) {
	out := membersOut{List: l, Members: []memberOut{}, Invites: []inviteOut{}, Waiting: []requestOut{}}
	ms, err := d.Members(l.id)
	if err != nil {
		return out, err
	}
	left, err := d.PendingLeaves(l.id)
	if err != nil {
		return out, err
	}
	invites, err := d.OpenInvites(l.id)
	if err != nil {
		return out, err
	}
	reqs, err := d.Requests(l.id)
	if err != nil {
		return out, err
	}
	for _, m := range ms {
		out.Members = append(out.Members, memberOut{Name: m.Name, User: m.User.String(), Role: string(m.Role), You: m.User == d.UserID(),
			Left: slices.ContainsFunc(left, func(x tandem.Member) bool { return x.User == m.User })})
	}
	for _, i := range invites {
		out.Invites = append(out.Invites, inviteOut{Role: string(i.Role), AutoApprove: i.AutoApprove, MaxUses: i.MaxUses, Expires: i.Expires.UTC()})
	}
	for _, r := range reqs {
		out.Waiting = append(out.Waiting, newRequestOut(r, l))
	}
	return out, nil
}

func printMembers(w io.Writer, o membersOut) {
	o.List = o.List.shown()
	fmt.Fprintf(w, "%s\n", o.List.Name)
	same := map[string]int{} // names that look the same are told apart by user ID
	for _, m := range o.Members {
		same[nameKey(m.Name)]++
	}
	for _, m := range o.Members {
		you := ""
		if m.You {
			you = " (you)"
		}
		if same[nameKey(m.Name)] > 1 {
			you += " (user " + short(strings.ReplaceAll(m.User, " ", "")) + ")"
		}
		fmt.Fprintf(w, "  %-20s %s%s\n", disp(m.Name), m.Role, you)
		if m.Left {
			fmt.Fprintf(w, "    %s left %s. (ferry remove %s %q confirms it)\n", disp(m.Name), o.List.Name, short(o.List.ID), m.Name)
		}
	}
	for _, i := range o.Invites {
		kind := "link (you approve each person)"
		if i.AutoApprove {
			kind = "QR code"
		}
		fmt.Fprintf(w, "  open invite: %s, as %s, until %s\n", kind, i.Role, i.Expires.Local().Format("2006-01-02 15:04"))
	}
	for _, r := range o.Waiting {
		fmt.Fprintf(w, "  %s wants to join (ferry approve %s)\n", disp(r.Name), short(r.ID))
	}
}

func (a *app) leaveCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "leave LIST",
		GroupID: groupShare,
		Short:   "Leave a list someone shared with you: gone from all your devices",
		Args:    args(1, 1, "leave LIST"),
		RunE: func(c *cobra.Command, as []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			l, err := findList(s.dev, as[0])
			if err != nil && classify(err).Kind == "not_found" {
				if j, ok := findJoin(s, as[0]); ok { // asked to join, not in yet
					return a.withdraw(c, s, j)
				}
			}
			if err != nil {
				return err
			}
			if !a.confirm(c, fmt.Sprintf("Leave %s? It goes from all your devices.", disp(l.Name))) {
				return failf("declined", "still in %s (answer y to leave)", l.Name)
			}
			if err := s.dev.Leave(l.id); err != nil {
				return err
			}
			_, serr := a.syncOnce(c.Context(), s, syncTimeout)
			if a.json {
				if err := emit(c.OutOrStdout(), map[string]any{"list": l.ID, "name": l.Name, "synced": serr == nil}); err != nil {
					return err
				}
				return serr
			}
			fmt.Fprintf(c.OutOrStdout(), "You left %s.\n", disp(l.Name))
			return serr
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}

// findJoin finds a list the user asked to join and is not in yet, by its
// name or the start of its ID.
func findJoin(s *session, ref string) (membershipOut, bool) {
	for _, j := range readJoins(s.dir) {
		m := membership(s.dev, j)
		if m.State != "waiting" && m.State != string(tandem.MembershipDeclined) {
			continue
		}
		if strings.EqualFold(m.Name, ref) || len(ref) >= 4 && strings.HasPrefix(m.List, strings.ToLower(ref)) {
			return m, true
		}
	}
	return membershipOut{}, false
}

// withdraw is leave of a list the user is still waiting to join: the
// request is withdrawn on this side (a later approval doesn't bring the
// list in), and the list leaves ferry's waiting lines.
func (a *app) withdraw(c *cobra.Command, s *session, m membershipOut) error {
	if !a.confirm(c, fmt.Sprintf("Stop waiting to join %s?", disp(m.Name))) {
		return failf("declined", "still waiting to join %s (answer y to stop)", m.Name)
	}
	id, err := tandem.ParseCollectionID(m.List)
	if err != nil {
		return err
	}
	if err := s.dev.Leave(id); err != nil {
		return err
	}
	joins := slices.DeleteFunc(readJoins(s.dir), func(p pendingJoin) bool { return p.List == m.List })
	if err := writeJSON(filepath.Join(s.dir, joinsFile), joins); err != nil {
		return err
	}
	if a.json {
		return emit(c.OutOrStdout(), map[string]any{"list": m.List, "name": m.Name, "withdrawn": true})
	}
	fmt.Fprintf(c.OutOrStdout(), "You no longer wait to join %s; if %s lets you in anyway, the list won't come.\n", disp(m.Name), disp(m.Owner))
	return nil
}
