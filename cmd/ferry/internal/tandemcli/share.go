package tandemcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

const groupShare = "tandem-share"

// The range of an invite's lifetime (--expires).
const (
	minInviteLife = time.Second
	maxInviteLife = 30 * 24 * time.Hour
)

// joinsFile lists the lists this profile asked to join, so that status
// can say "Waiting for Jesper to approve" before the list arrives.
const joinsFile = "joins.json"

type pendingJoin struct {
	List  string `json:"list"` // the collection ID
	Hint  string `json:"hint"` // its name, if the invite had it
	Owner string `json:"owner"`
}

func readJoins(dir string) []pendingJoin {
	var out []pendingJoin
	readJSON(filepath.Join(dir, joinsFile), &out)
	return out
}

func (a *app) shareCmd() *cobra.Command {
	var link, reader, noName, noWait bool
	var expires time.Duration
	c := &cobra.Command{
		Use:     "share LIST",
		GroupID: groupShare,
		Short:   "Invite someone to a list: a QR code to scan here and now, or --link to send",
		Long: `Invite someone to a list you own (§11.1). Without --link: a QR code (and its
text) that lets one person in at once, for 10 minutes; ferry keeps syncing
until they are in (Ctrl-C stops waiting; the invite stays open). With --link:
a link to send over a messenger, for 7 days; each person who uses it asks to
join, and you approve them (ferry requests, ferry approve). Everyone you
invite gets access to this account's mailbox.`,
		Args: args(1, 1, "share LIST"),
		RunE: func(c *cobra.Command, as []string) error {
			if noWait && link {
				return usagef("--no-wait applies to the QR form; a link never waits")
			}
			if c.Flags().Changed("expires") && (expires < minInviteLife || expires > maxInviteLife) {
				return usagef("--expires %s is out of range: give 1s to 720h (30 days)", expires)
			}
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			l, err := findList(s.dev, as[0])
			if err != nil {
				return err
			}
			opts := tandem.InviteOptions{Link: link, NoHint: noName, Role: tandem.RoleWriter, Expires: expires}
			if reader {
				opts.Role = tandem.RoleReader
			}
			inv, err := s.dev.Invite(l.id, opts)
			if err != nil {
				return err
			}
			if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil {
				return err
			}
			text := inv.Link // the text form of both: join takes it, and it survives a shell
			w := c.OutOrStdout()
			if a.json {
				if err := emit(w, map[string]any{"list": l.ID, "role": string(opts.Role), "link": inv.Link, "payload": inv.Payload, "expires": inv.Expires.UTC(), "approve": link}); err != nil || link || noWait {
					return err
				}
				return a.waitMember(c.Context(), w, s, l, inv.Expires)
			}
			if !link {
				printQR(w, inv.Payload)
			}
			fmt.Fprintf(w, "\n%s\n\n", text)
			fmt.Fprintf(w, "Invite to %s as %s, until %s. Everyone you invite gets access to this account's mailbox.\n", l.Name, opts.Role, inv.Expires.Local().Format("2006-01-02 15:04"))
			if link {
				fmt.Fprintln(w, "They run ferry join with this link; then ferry requests shows them and ferry approve lets them in.")
				return nil
			}
			fmt.Fprintln(w, "They scan the code, or run ferry join with the link; they are in at once.")
			if noWait {
				return nil
			}
			return a.waitMember(c.Context(), w, s, l, inv.Expires)
		},
	}
	c.Flags().BoolVar(&link, "link", false, "make a link to send; you approve each person who uses it")
	c.Flags().BoolVar(&reader, "reader", false, "invite as a reader, who can't change the list")
	c.Flags().BoolVar(&noName, "no-name", false, "leave the list's name out of the invite (anyone who sees the link can read it)")
	c.Flags().BoolVar(&noWait, "no-wait", false, "do not wait for the person to join")
	c.Flags().DurationVar(&expires, "expires", 0, "how long the invite works (1s to 720h; default 10m for a QR code, 7 days for a link)")
	return a.flags(c, true)
}

// waitMember keeps the device in sync until someone new is a member of l,
// the invite expires, or ctx ends.
func (a *app) waitMember(ctx context.Context, w io.Writer, s *session, l listInfo, until time.Time) error {
	before, _ := s.dev.Members(l.id)
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.dev.Run(ctx) }()
	if !a.json {
		fmt.Fprintln(w, "Waiting for them to join (Ctrl-C stops waiting)...")
	}
	for {
		select {
		case err := <-done:
			switch {
			case err != nil:
				return err
			case parent.Err() != nil:
				if !a.json {
					fmt.Fprintf(w, "Stopped waiting. The invite works until %s; a ferry sync then lets them in.\n", until.Local().Format("15:04"))
				}
				return nil
			}
			return failf("expired", "nobody used the invite in time: ferry share %s makes a new one", short(l.ID))
		case <-s.dev.Changed():
			now, _ := s.dev.Members(l.id)
			for _, m := range now {
				if !slices.ContainsFunc(before, func(b tandem.Member) bool { return b.User == m.User }) {
					if a.json {
						emit(w, map[string]any{"joined": m.Name, "user": m.User.String(), "role": string(m.Role)})
					} else {
						fmt.Fprintf(w, "%s joined %s.\n", m.Name, l.Name)
					}
					cancel()
					<-done
					s.saveState(nil)
					return nil
				}
			}
		}
	}
}

func (a *app) joinCmd() *cobra.Command {
	var wait bool
	c := &cobra.Command{
		Use:     "join INVITE",
		GroupID: groupShare,
		Short:   "Join a list with the link or text someone shared (- reads it from standard input)",
		Long: `Ask to join the list an invite names. A device without a mail account takes
the invite's. An invite by QR code lets you in as soon as the owner's device
syncs; a link waits for the owner to approve ("Waiting for Jesper to
approve"). With --wait, ferry keeps syncing until you are in or declined.`,
		Args: args(1, 1, "join INVITE"),
		RunE: func(c *cobra.Command, as []string) error {
			text := as[0]
			if text == "-" {
				text = readLine(c.InOrStdin(), maxDescriptor)
			}
			info, err := tandem.ParseInvite(text)
			if err != nil {
				return err
			}
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			id, err := s.dev.Join(c.Context(), text, s.prof.Name)
			if err != nil {
				return err
			}
			j := pendingJoin{List: id.String(), Hint: info.Hint, Owner: info.By.Name}
			joins := slices.DeleteFunc(readJoins(s.dir), func(p pendingJoin) bool { return p.List == j.List })
			if err := writeJSON(filepath.Join(s.dir, joinsFile), append(joins, j)); err != nil {
				return err
			}
			if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil {
				return err
			}
			if wait {
				if err := a.waitJoined(c.Context(), s, id); err != nil {
					return err
				}
			}
			return a.printMembership(c, s, j)
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "keep syncing until the owner lets you in or declines (Ctrl-C stops)")
	return a.flags(c, true)
}

// waitJoined syncs until the membership is settled or ctx ends.
func (a *app) waitJoined(ctx context.Context, s *session, c tandem.CollectionID) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.dev.Run(ctx) }()
	for {
		switch s.dev.Membership(c) {
		case tandem.MembershipActive, tandem.MembershipDeclined:
			cancel()
			<-done
			return nil
		}
		select {
		case err := <-done:
			return err
		case <-s.dev.Changed():
		case <-time.After(time.Second):
		}
	}
}

type membershipOut struct {
	List    string `json:"list"`
	Name    string `json:"name"`
	Owner   string `json:"owner"`
	State   string `json:"state"` // waiting, declined, active, left
	Message string `json:"message"`
}

func membership(d *tandem.Device, j pendingJoin) membershipOut {
	id, _ := tandem.ParseCollectionID(j.List)
	st := d.Membership(id)
	name := j.Hint
	if names, err := d.Name(id); err == nil && len(names) > 0 {
		name = names[0].String()
	}
	if name == "" {
		name = "the list"
	}
	owner := j.Owner
	if owner == "" {
		owner = "its owner"
	}
	out := membershipOut{List: j.List, Name: name, Owner: owner, State: string(st)}
	switch st {
	case tandem.MembershipWaiting, tandem.MembershipNone:
		out.State, out.Message = "waiting", fmt.Sprintf("Waiting for %s to approve.", owner)
	case tandem.MembershipDeclined:
		out.Message = fmt.Sprintf("%s declined your request to join %s.", owner, name)
	case tandem.MembershipActive:
		out.Message = fmt.Sprintf("You're in: %s is on this device.", name)
	case tandem.MembershipLeft:
		out.Message = fmt.Sprintf("You left %s.", name)
	}
	return out
}

func (a *app) printMembership(c *cobra.Command, s *session, j pendingJoin) error {
	m := membership(s.dev, j)
	if a.json {
		return emit(c.OutOrStdout(), m)
	}
	fmt.Fprintln(c.OutOrStdout(), m.Message)
	return nil
}

type requestOut struct {
	ID                string `json:"id"`
	List              string `json:"list"`
	ListName          string `json:"list_name"`
	Name              string `json:"name"`
	User              string `json:"user"`
	Role              string `json:"role"`
	PreviouslyRemoved bool   `json:"previously_removed"`
}

// allRequests lists the pending join requests of every list.
func allRequests(d *tandem.Device) ([]requestOut, error) {
	lists, err := allLists(d)
	if err != nil {
		return nil, err
	}
	out := []requestOut{}
	for _, l := range lists {
		for _, r := range d.Requests(l.id) {
			out = append(out, requestOut{ID: r.ID, List: l.ID, ListName: l.Name, Name: r.Name, User: r.User.String(), Role: string(r.Role), PreviouslyRemoved: r.PreviouslyRemoved})
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
					fmt.Fprintf(w, "%s  %s was removed from %s. Add them again? (ferry approve %s)\n", short(r.ID), r.Name, r.ListName, short(r.ID))
					continue
				}
				fmt.Fprintf(w, "%s  %s wants to join %s as %s (ferry approve %s, or decline)\n", short(r.ID), r.Name, r.ListName, r.Role, short(r.ID))
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
				err = s.dev.Approve(ctx, r.ID)
			} else {
				err = s.dev.Decline(ctx, r.ID)
			}
			s.saveState(err)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), r)
			}
			fmt.Fprintf(c.OutOrStdout(), done+"\n", r.Name, r.ListName)
			return nil
		},
	}
	return a.flags(c, true)
}

func findRequest(rs []requestOut, ref string) (requestOut, error) {
	var hits []requestOut
	for _, r := range rs {
		if strings.EqualFold(r.Name, ref) || len(ref) >= 4 && strings.HasPrefix(r.ID, ref) {
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
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			l, err := findList(s.dev, as[0])
			if err != nil {
				return err
			}
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
	left := d.PendingLeaves(l.id)
	for _, m := range ms {
		out.Members = append(out.Members, memberOut{Name: m.Name, User: m.User.String(), Role: string(m.Role), You: m.User == d.UserID(),
			Left: slices.ContainsFunc(left, func(x tandem.Member) bool { return x.User == m.User })})
	}
	for _, i := range d.OpenInvites(l.id) {
		out.Invites = append(out.Invites, inviteOut{Role: string(i.Role), AutoApprove: i.AutoApprove, MaxUses: i.MaxUses, Expires: i.Expires.UTC()})
	}
	for _, r := range d.Requests(l.id) {
		out.Waiting = append(out.Waiting, requestOut{ID: r.ID, List: l.ID, ListName: l.Name, Name: r.Name, User: r.User.String(), Role: string(r.Role), PreviouslyRemoved: r.PreviouslyRemoved})
	}
	return out, nil
}

func printMembers(w io.Writer, o membersOut) {
	fmt.Fprintf(w, "%s\n", o.List.Name)
	for _, m := range o.Members {
		you := ""
		if m.You {
			you = " (you)"
		}
		fmt.Fprintf(w, "  %-20s %s%s\n", m.Name, m.Role, you)
		if m.Left {
			fmt.Fprintf(w, "    %s left %s. (ferry remove %s %q confirms it)\n", m.Name, o.List.Name, short(o.List.ID), m.Name)
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
		fmt.Fprintf(w, "  %s wants to join (ferry approve %s)\n", r.Name, short(r.ID))
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
			if err != nil {
				return err
			}
			if !a.confirm(c, fmt.Sprintf("Leave %s? It goes from all your devices.", l.Name)) {
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
			fmt.Fprintf(c.OutOrStdout(), "You left %s.\n", l.Name)
			return serr
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "do not ask")
	return a.flags(c, true)
}

// readJSON reads path into v; a missing file leaves v as it is.
func readJSON(path string, v any) {
	if b, err := os.ReadFile(path); err == nil {
		_ = jsonUnmarshal(b, v)
	}
}
