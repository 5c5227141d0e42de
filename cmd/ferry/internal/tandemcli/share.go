package tandemcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

const groupShare = "tandem-share"

// The range of an invite's lifetime (--expires).
const (
	minInviteLife = time.Second
	maxInviteLife = 30 * 24 * time.Hour
	maxInviteUses = 1000
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
	var link, reader, noName, noWait, closeAll bool
	var expires time.Duration
	var uses int
	c := &cobra.Command{
		Use:     "share LIST",
		GroupID: groupShare,
		Short:   "Invite someone to a list: a QR code to scan here and now, or --link to send",
		Long: `Invite someone to a list you own. Without --link: a QR code (and its
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
			if closeAll {
				for _, f := range []string{"link", "reader", "no-name", "no-wait", "uses", "expires"} {
					if c.Flags().Changed(f) {
						return usagef("--close closes the open invites; --%s is for making one", f)
					}
				}
				return a.closeInvites(c, as[0])
			}
			if c.Flags().Changed("expires") && (expires < minInviteLife || expires > maxInviteLife) {
				return usagef("--expires %s is out of range: give 1s to 30d", expires)
			}
			if c.Flags().Changed("uses") && (uses < 1 || uses > maxInviteUses) {
				return usagef("--uses %d is out of range: give 1 to %d", uses, maxInviteUses)
			}
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			if s.dev.Hub().IsZero() { // before the invite is made: a failed share changes nothing
				return failf("no_hub", "this device is not connected to a mail account yet: run ferry connect")
			}
			l, err := findList(s.dev, as[0])
			if err != nil {
				return err
			}
			opts := tandem.InviteOptions{Link: link, NoHint: noName, Role: tandem.RoleWriter, Expires: expires, MaxUses: uses}
			if reader {
				opts.Role = tandem.RoleReader
			}
			inv, err := s.dev.Invite(l.id, opts)
			if err != nil {
				return err
			}
			if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil {
				if classify(err).Kind != "offline" {
					return err
				}
				// An invite works offline (§11.1): this device watches for it at its next sync.
				fmt.Fprintln(c.ErrOrStderr(), "ferry: the account can't be reached now; the invite works once this device syncs again.")
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
			fmt.Fprintf(w, "Invite to %s as %s, until %s. Everyone you invite gets access to this account's mailbox.\n", disp(l.Name), opts.Role, inv.Expires.Local().Format("2006-01-02 15:04"))
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
	c.Flags().BoolVar(&closeAll, "close", false, "close the list's open invites instead: nobody can join with them any more")
	c.Flags().BoolVar(&link, "link", false, "make a link to send; you approve each person who uses it")
	c.Flags().BoolVar(&reader, "reader", false, "invite as a reader, who can't change the list")
	c.Flags().BoolVar(&noName, "no-name", false, "leave the list's name out of the invite (anyone who sees the link can read it)")
	c.Flags().BoolVar(&noWait, "no-wait", false, "do not wait for the person to join")
	c.Flags().IntVar(&uses, "uses", 0, "how many people may use the invite (1 to 1000; default 1 for a QR code, unlimited for a link)")
	c.Flags().Var(durationValue{&expires}, "expires", "how long the invite works, such as 30m, 2h or 7d (1s to 30d; default 10m for a QR code, 7d for a link)")
	return a.flags(c, true)
}

// closeInvites is share --close: every open invite of the list is closed,
// and the next sync tells the owner's other devices.
func (a *app) closeInvites(c *cobra.Command, list string) error {
	s, l, err := a.openList(c.Context(), list)
	if err != nil {
		return err
	}
	defer s.close()
	if l.Role != tandem.RoleOwner {
		return failf("not_writable", "only the owner of %s has invites to close", l.Name)
	}
	n, err := s.dev.CloseInvites(l.id)
	if err != nil {
		return err
	}
	if _, err := a.syncOnce(c.Context(), s, syncTimeout); err != nil && classify(err).Kind != "offline" && classify(err).Kind != "no_hub" {
		return err
	}
	if a.json {
		return emit(c.OutOrStdout(), map[string]any{"list": l.ID, "name": l.Name, "closed": n})
	}
	fmt.Fprintf(c.OutOrStdout(), "Closed %d open invite(s) to %s: nobody can join with them any more.\n", n, disp(l.Name))
	return nil
}

// waitMember keeps the device in sync until someone new is a member of l,
// the invite expires, or ctx ends. Another ferry command on the profile
// may ask for it meanwhile (yield.go): the device is closed while that
// command runs, then opened again, and the wait goes on.
func (a *app) waitMember(ctx context.Context, w io.Writer, s *session, l listInfo, until time.Time) error {
	before, _ := s.dev.Members(l.id)
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	if !a.json {
		fmt.Fprintln(w, "Waiting for them to join (Ctrl-C stops waiting)...")
	}
	for {
		joined, err := a.runUntilJoined(ctx, w, s, l, before)
		if joined || err != nil {
			return err
		}
		if ctx.Err() == nil { // another command asked for the profile
			s.dev.Close()
			s.dev = nil
			s.closeLog()
			waitYield(ctx, s.dir)
			if ctx.Err() == nil {
				if err := s.openDevice(ctx, nil); err != nil {
					return err
				}
				continue
			}
		}
		if parent.Err() != nil {
			if !a.json {
				fmt.Fprintf(w, "Stopped waiting. The invite works until %s; a ferry sync then lets them in.\n", until.Local().Format("15:04"))
			}
			return nil
		}
		return failf("expired", "nobody used the invite in time: ferry share %s makes a new one", short(l.ID))
	}
}

// runUntilJoined runs the device until someone not in before is a member
// of l (true), ctx ends or another command asks for the profile (false,
// nil), or Run fails.
func (a *app) runUntilJoined(ctx context.Context, w io.Writer, s *session, l listInfo, before []tandem.Member) (bool, error) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.dev.Run(runCtx) }()
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return false, err
		case <-tick.C:
			if yieldRequested(s.dir) {
				stop()
				return false, <-done
			}
		case <-s.dev.Changed():
			now, _ := s.dev.Members(l.id)
			for _, m := range now {
				if slices.ContainsFunc(before, func(b tandem.Member) bool { return b.User == m.User }) {
					continue
				}
				if a.json {
					emit(w, map[string]any{"joined": m.Name, "user": m.User.String(), "role": string(m.Role)})
				} else {
					fmt.Fprintf(w, "%s joined %s.\n", disp(m.Name), disp(l.Name))
				}
				stop()
				<-done
				s.saveState(nil)
				return true, nil
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
the invite's. A profile connected to another account than the invite's can
switch to it while it has no lists (ferry asks first); one with lists joins
from a new profile instead (ferry init --profile DIR, then ferry join
--profile DIR LINK). An invite by QR code lets you in as soon as the owner's device
syncs; a link waits for the owner to approve ("Waiting for Jesper to let you
in"). With --wait, ferry keeps syncing until you are in or declined.`,
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
			if err := a.takeInviteHub(c, s, info); err != nil {
				return err
			}
			id, err := s.dev.Join(c.Context(), text, s.prof.Name)
			if tandem.CodeOf(err) == tandem.CodeExpired { // tandem's words are for a pairing code
				return failf("expired", "this invite has expired: ask %s for a new one", disp(info.By.Name))
			}
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
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "switch a profile without lists to the invite's mail account without asking")
	return a.flags(c, true)
}

// waitJoined syncs until the membership is settled or ctx ends.
func (a *app) waitJoined(ctx context.Context, s *session, c tandem.CollectionID) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.dev.Run(ctx) }()
	for {
		// Until the request is written here the list is unknown: keep waiting.
		switch st, _ := s.dev.Membership(c); st {
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
	st, _ := d.Membership(id) // unknown until the request is written here: MembershipNone, waiting
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
		out.State, out.Message = "waiting", fmt.Sprintf("Waiting for %s to let you in.", disp(owner))
	case tandem.MembershipDeclined: // by the owner, or because the invite no longer admits anyone
		why, _ := d.WhyDeclined(id) // known: Membership just said declined
		out.Message = disp(why.Message(j.Owner, name))
	case tandem.MembershipActive:
		out.Message = fmt.Sprintf("You're in: %s is on this device.", disp(name))
	case tandem.MembershipLeft:
		out.Message = fmt.Sprintf("You left %s.", disp(name))
	}
	return out
}

func (a *app) printMembership(c *cobra.Command, s *session, j pendingJoin) error {
	m := membership(s.dev, j)
	if a.json {
		return emit(c.OutOrStdout(), m)
	}
	fmt.Fprintln(c.OutOrStdout(), m.Message)
	if m.State == "waiting" { // a QR code admits at once, a link after approval: the invite doesn't say which
		fmt.Fprintf(c.OutOrStdout(), "A QR code lets you in as soon as %s's device syncs; with a link, %s approves you first. ferry sync (or ferry join --wait) brings the list.\n", disp(m.Owner), disp(m.Owner))
	}
	return nil
}

// readJSON reads path into v; a missing file leaves v as it is.
func readJSON(path string, v any) {
	if b, err := os.ReadFile(path); err == nil {
		_ = jsonUnmarshal(b, v)
	}
}
