package tandemcli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// Bounds of one sync, and of sync --watch's poll interval.
const (
	syncTimeout    = 2 * time.Minute
	minSyncTimeout = 5 * time.Second
	maxSyncTimeout = time.Hour
)

type reportOut struct {
	Published int `json:"published"`
	Fetched   int `json:"fetched"`
	Applied   int `json:"applied"`
	Rejected  int `json:"rejected"`
	Held      int `json:"held"`
	Refused   int `json:"refused,omitempty"` // your edits newly found not shared (refused.go)
}

func reportJSON(r tandem.SyncReport) reportOut {
	return reportOut{r.Published, r.Fetched, r.Applied, r.Rejected, r.Held, r.Refused}
}

func describeReport(r tandem.SyncReport) string {
	s := fmt.Sprintf("%d sent, %d received", r.Published, r.Applied)
	if r.Held > 0 {
		s += fmt.Sprintf(", %d waiting for their list's members", r.Held)
	}
	if r.Declined > 0 {
		s += fmt.Sprintf(", %d request(s) to join on an invite that was used up or ran out answered no", r.Declined)
	}
	if r.Rejected > 0 {
		s += fmt.Sprintf(", %d refused as not valid (the profile's ferry.log says why)", r.Rejected)
	}
	return s
}

// saveState records how a sync attempt ended, for ferry status.
func (s *session) saveState(err error) {
	st := stateJSON{LastAttempt: time.Now().UTC()}
	if err != nil {
		e := classify(err)
		st.Kind, st.Message = e.Kind, e.Msg
	}
	writeJSON(filepath.Join(s.dir, stateFile), st)
}

type syncFlags struct {
	watch   bool
	timeout time.Duration
}

func (a *app) syncCmd() *cobra.Command {
	var f syncFlags
	c := &cobra.Command{
		Use:     "sync",
		GroupID: groupSync,
		Short:   "Send this device's changes and get everyone else's",
		Long: `Sync with the mail account: send what this device wrote, and merge what
the other devices and the people you share with wrote. With --watch, ferry
stays connected (IMAP IDLE, JMAP push or polling), syncs as soon as anything
changes, reconnects when the account comes back, and prints the changes that
arrive from elsewhere, until Ctrl-C. Other ferry commands on the same profile
still work meanwhile: the watcher steps aside while they run. With --json,
--watch prints one JSON object a line.`,
		Args: args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			if f.timeout < minSyncTimeout || f.timeout > maxSyncTimeout {
				return usagef("--timeout %s is out of range: give 5s to 1h", f.timeout)
			}
			if c.Flags().Changed("timeout") && f.watch {
				return usagef("--timeout applies to one sync, not to --watch")
			}
			if f.watch { // what arrives is the output: -q doesn't leave it out
				c.SetOut(newSafeWriter(a.stdout))
				return a.watch(c, f)
			}
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			before, err := takeSnapshot(s.dev)
			if err != nil {
				return err
			}
			seen := notices(s.dev, s.dir) // removed, deleted, declined, ...: said when they arrive
			rep, err := a.syncOnce(c.Context(), s, f.timeout)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), reportJSON(rep))
			}
			if rep.Applied > 0 {
				if after, err := takeSnapshot(s.dev); err == nil {
					chs := diff(before, after, time.Now().UTC())
					rememberChanges(s.dir, chs)
					printArrived(c.OutOrStdout(), chs)
				}
			}
			a.printNotices(c.OutOrStdout(), seen, notices(s.dev, s.dir))
			if n := refusedCount(s.dev); n > 0 { // not "synced": some of the user's edits never went out
				fmt.Fprintf(c.OutOrStdout(), "Sync done (%s), but %s\n", describeReport(rep), refusedLine(n))
				return nil
			}
			fmt.Fprintf(c.OutOrStdout(), "Synced: %s.\n", describeReport(rep))
			return nil
		},
	}
	c.Flags().BoolVarP(&f.watch, "watch", "w", false, "keep syncing and print changes as they arrive, until Ctrl-C")
	c.Flags().DurationVar(&f.timeout, "timeout", syncTimeout, "give one sync this long (5s to 1h)")
	return a.flags(c, true)
}

// syncOnce syncs and records the outcome.
func (a *app) syncOnce(ctx context.Context, s *session, timeout time.Duration) (tandem.SyncReport, error) {
	if s.dev.Hub().IsZero() {
		return tandem.SyncReport{}, failf("no_hub", "this device is not connected to a mail account yet: run ferry connect")
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rep tandem.SyncReport
	start := time.Now()
	err := a.withProgress(s, "Syncing", func() (err error) {
		rep, err = s.dev.Sync(ctx)
		return err
	})
	switch {
	case err != nil && parent.Err() != nil: // Ctrl-C: not a sync failure
		return rep, failf("interrupted", "stopped; what was already sent stays sent, and the next ferry sync goes on from there")
	case err != nil && ctx.Err() != nil:
		err = failf("offline", "the sync did not finish within %s: try again, or give a longer --timeout", timeout)
	}
	logSync(s, rep, err, time.Since(start))
	s.saveState(err)
	return rep, err
}

type statusList struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Names    []string `json:"names"`
	State    string   `json:"state"`
	Items    int      `json:"items"`
	InFlight string   `json:"in_flight"`         // a sharing change another device left unfinished
	Refused  int      `json:"refused,omitempty"` // your edits that were not shared (refused.go)
}

type statusOut struct {
	Profile     string          `json:"profile"`
	Name        string          `json:"name"`
	Hub         string          `json:"hub"`
	Connection  string          `json:"connection"` // never, ok, offline, auth, error, no_hub
	Message     string          `json:"message,omitempty"`
	LastSync    *time.Time      `json:"last_sync"`
	LastAttempt *time.Time      `json:"last_attempt"`
	Pending     int             `json:"pending"`
	Refused     int             `json:"refused,omitempty"` // your edits that were not shared (refused.go)
	Held        int             `json:"held"`              // messages waiting for a roster statement or inventory (§8.3)
	Lists       []statusList    `json:"lists"`
	Joins       []membershipOut `json:"joins"` // lists asked to join and not in yet
}

func (a *app) statusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "status",
		GroupID: groupSync,
		Short:   "Show the account, the last sync, unsent changes, and each list's sync state",
		Long: `Show the sync state: the mail account, when the device last synced, how many
changes wait to be sent, and for each list one of: synced, behind (changes
not sent yet), offline, waiting (its members are not known yet), can't sync
(copy it to a new list), deleted, removed (no longer shared with you). Offline work is safe: it syncs later.`,
		Args: args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			out, err := status(s)
			if err != nil {
				return err
			}
			if a.json {
				return emit(c.OutOrStdout(), out)
			}
			printStatus(c, out)
			return nil
		},
	}
	return a.flags(c, true)
}

func status(s *session) (statusOut, error) {
	st := s.dev.Status()
	saved := readState(s.dir)
	out := statusOut{Profile: s.dir, Name: s.prof.Name, Hub: s.dev.Hub().String(), Pending: st.Pending, Refused: st.Refused, Held: st.Waiting, Lists: []statusList{}}
	switch {
	case s.dev.Hub().IsZero():
		out.Connection = "no_hub"
	case saved.LastAttempt.IsZero():
		out.Connection = "never"
	case saved.Kind == "":
		out.Connection = "ok"
	case saved.Kind == "offline" || saved.Kind == "auth":
		out.Connection, out.Message = saved.Kind, saved.Message
	default:
		out.Connection, out.Message = "error", saved.Message
	}
	if !st.LastSync.IsZero() {
		t := st.LastSync.UTC()
		out.LastSync = &t
	}
	if !saved.LastAttempt.IsZero() {
		out.LastAttempt = &saved.LastAttempt
	}
	out.Joins = []membershipOut{}
	for _, j := range readJoins(s.dir) { // only what is still open: a join you're in, or a list you left, is no news
		if m := membership(s.dev, j); m.State == "waiting" || m.State == string(tandem.MembershipDeclined) {
			out.Joins = append(out.Joins, m)
		}
	}
	lists, err := allLists(s.dev)
	if err != nil {
		return out, err
	}
	for _, l := range lists {
		state := listSyncState(l.State, out.Connection, st.Pending)
		if l.Removed {
			state = "removed"
		}
		what, _, _ := s.dev.ChangeInFlight(l.id)
		rs, _ := s.dev.Refused(l.id)
		if len(rs) > 0 && (state == "synced" || state == "behind") {
			state = "not shared"
		}
		out.Lists = append(out.Lists, statusList{ID: l.ID, Name: l.Name, Names: l.Names, State: state, Items: l.Items, InFlight: what, Refused: len(rs)})
	}
	return out, nil
}

// listSyncState is one list's state as ferry status shows it.
func listSyncState(st tandem.CollectionState, conn string, pending int) string {
	switch st {
	case tandem.StateDead, tandem.StateStalled:
		return "can't sync"
	case tandem.StateDeleted:
		return "deleted"
	case tandem.StateWaiting:
		return "waiting"
	}
	switch conn {
	case "offline", "no_hub", "never":
		return "offline"
	case "auth", "error":
		return "can't sync"
	}
	if pending > 0 {
		return "behind"
	}
	return "synced"
}

func printStatus(c *cobra.Command, o statusOut) {
	w := c.OutOrStdout()
	account := o.Hub
	if o.Connection == "no_hub" {
		account = "none yet"
	}
	fmt.Fprintf(w, "Profile   %s (%s)\nAccount   %s\n", o.Profile, o.Name, account)
	switch o.Connection {
	case "no_hub":
		fmt.Fprintln(w, "Sync      not connected: run ferry connect")
	case "never":
		fmt.Fprintln(w, "Sync      never synced: run ferry sync")
	case "ok":
		fmt.Fprintln(w, "Sync      ok")
	default:
		fmt.Fprintf(w, "Sync      %s\n", o.Message)
	}
	last := "never"
	if o.LastSync != nil {
		last = o.LastSync.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(w, "Last sync %s\nUnsent    %d change(s)\n", last, o.Pending)
	if o.Refused > 0 {
		fmt.Fprintf(w, "Not shared %s\n", refusedLine(o.Refused))
	}
	if o.Held > 0 {
		fmt.Fprintf(w, "Waiting   %d change(s) from others, until their list's members are known (a sync brings them)\n", o.Held)
	}
	for _, j := range o.Joins {
		fmt.Fprintf(w, "Joining   %s\n", j.Message)
	}
	if len(o.Lists) == 0 {
		fmt.Fprintln(w, "\nNo lists yet: ferry new NAME makes one.")
		return
	}
	fmt.Fprintln(w)
	for _, l := range o.Lists {
		fmt.Fprintf(w, "  %-24s %-11s %d item(s)  %s\n", disp(l.Name), l.State, l.Items, short(l.ID))
		if l.InFlight != "" {
			fmt.Fprintf(w, "    Another of your devices started %s and didn't finish: ferry finish %s, or ferry discard %s.\n", l.InFlight, short(l.ID), short(l.ID))
		}
		if l.State == "removed" {
			fmt.Fprintf(w, "    %s is no longer shared with you.\n", disp(l.Name))
		}
		if l.Refused > 0 {
			fmt.Fprintf(w, "    %d of your edit(s) were not shared: ferry refused %s\n", l.Refused, short(l.ID))
		}
		if l.State == "can't sync" && o.Connection == "ok" {
			fmt.Fprintf(w, "    %s can't sync any more. Copy it to a new list? (ferry copy %s)\n", disp(l.Name), short(l.ID))
		}
	}
}

// maxArrived bounds the changes a one-off sync lists.
const maxArrived = 20

// printArrived lists what a sync brought from elsewhere.
func printArrived(w io.Writer, chs []change) {
	for i, ch := range chs {
		if i == maxArrived {
			fmt.Fprintf(w, "... and %d more change(s): ferry show LIST has them all\n", len(chs)-maxArrived)
			return
		}
		fmt.Fprintln(w, ch)
	}
}

// logSync writes how a sync went into the profile's log (and, with -v, on
// stderr): the account, the counts and the time, or the error with its
// cause.
func logSync(s *session, rep tandem.SyncReport, err error, took time.Duration) {
	log := s.logger()
	if err != nil {
		e := classify(err)
		cause := ""
		if e.Err != nil {
			cause = e.Err.Error()
		}
		log.Warn("ferry: sync failed", "hub", s.dev.Hub().String(), "kind", e.Kind, "message", e.Msg, "cause", cause, "took", took.Round(time.Millisecond))
		return
	}
	log.Info("ferry: synced", "hub", s.dev.Hub().String(), "sent", rep.Published, "fetched", rep.Fetched, "applied", rep.Applied,
		"rejected", rep.Rejected, "held", rep.Held, "took", took.Round(time.Millisecond))
}
