package tandemcli

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

type requestOut struct {
	ID                string `json:"id"`
	List              string `json:"list"`
	ListName          string `json:"list_name"`
	Name              string `json:"name"`
	User              string `json:"user"`
	Role              string `json:"role"`
	PreviouslyRemoved bool   `json:"previously_removed"`
	hubID             string // tandem's ID of the request, for Approve and Decline
}

// requestID is the ID ferry shows for a join request: derived from the
// request itself (its list, its user and the message it came in), so it
// is the same on every sync and every device of the owner, and two
// requests differ in their first characters (docs/decisions/cli-request-ids.md).
func requestID(r tandem.JoinRequest) string {
	h := sha256.Sum256([]byte("ferry join request\x00" + r.Collection.String() + "\x00" + r.User.String() + "\x00" + r.ID))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:10]))
}

// newRequestOut is how ferry shows request r of list l.
func newRequestOut(r tandem.JoinRequest, l listInfo) requestOut {
	return requestOut{ID: requestID(r), List: l.ID, ListName: l.Name, Name: r.Name, User: r.User.String(), Role: string(r.Role), PreviouslyRemoved: r.PreviouslyRemoved, hubID: r.ID}
}

// allRequests lists the pending join requests of every list.
func allRequests(d *tandem.Device) ([]requestOut, error) {
	lists, err := allLists(d)
	if err != nil {
		return nil, err
	}
	out := []requestOut{}
	for _, l := range lists {
		reqs, err := d.Requests(l.id)
		if err != nil {
			return nil, err
		}
		for _, r := range reqs {
			out = append(out, newRequestOut(r, l))
		}
	}
	return out, nil
}

func (a *app) requestsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "requests",
		GroupID: groupShare,
		Short:   "Show who asks to join your lists (after syncing)",
		Args:    args(0, 0, "requests"),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil && classify(err).Kind != "offline" {
				return err
			}
			rs, err := allRequests(s.dev)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), rs)
			}
			w := c.OutOrStdout()
			if len(rs) == 0 {
				fmt.Fprintln(w, "Nobody is waiting to join your lists.")
			}
			for _, r := range rs {
				if r.PreviouslyRemoved {
					fmt.Fprintf(w, "%s  %s was removed from %s. Add them again? (ferry approve %s)\n", short(r.ID), disp(r.Name), disp(r.ListName), short(r.ID))
					continue
				}
				fmt.Fprintf(w, "%s  %s wants to join %s as %s (ferry approve %s, or decline)\n", short(r.ID), disp(r.Name), disp(r.ListName), r.Role, short(r.ID))
			}
			return nil
		},
	}
	return a.flags(c, true)
}

func (a *app) decideCmd(approve bool) *cobra.Command {
	use, short, done := "approve", "Let someone who asked to join a list in", "%s can now use %s."
	if !approve {
		use, short, done = "decline", "Refuse someone's request to join a list (they see that you did)", "Declined %s's request to join %s."
	}
	c := &cobra.Command{
		Use:     use + " REQUEST",
		GroupID: groupShare,
		Short:   short,
		Long:    short + ". REQUEST is what ferry requests shows: the start of its ID, or the person's name.",
		Args:    args(1, 1, use+" REQUEST"),
		RunE: func(c *cobra.Command, as []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			if err := a.syncForSharing(c, s); err != nil { // requests arrive by sync
				return err
			}
			rs, err := allRequests(s.dev)
			if err != nil {
				return err
			}
			r, err := findRequest(rs, as[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context(), syncTimeout)
			defer cancel()
			if approve {
				err = s.dev.Approve(ctx, r.hubID)
			} else {
				err = s.dev.Decline(ctx, r.hubID)
			}
			s.saveState(err)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), r)
			}
			fmt.Fprintf(c.OutOrStdout(), done+"\n", disp(r.Name), disp(r.ListName))
			return nil
		},
	}
	return a.flags(c, true)
}

func findRequest(rs []requestOut, ref string) (requestOut, error) {
	var hits []requestOut
	for _, r := range rs {
		if nameKey(r.Name) == nameKey(ref) || len(ref) >= 4 && strings.HasPrefix(r.ID, strings.ToLower(ref)) {
			hits = append(hits, r)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return requestOut{}, failf("not_found", "nobody with %q is waiting to join your lists: ferry requests shows who is", ref)
	}
	return requestOut{}, failf("ambiguous", "%q fits %d requests: give the ID that ferry requests shows", ref, len(hits))
}
