package tandemcli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// snapshot is what the device holds, to tell what a sync brought.
type snapshot map[string]listSnap

type listSnap struct {
	name  string
	role  tandem.Role // the user's, "" once removed
	items map[string]itemOut
}

func takeSnapshot(d *tandem.Device) (snapshot, error) {
	lists, err := allLists(d)
	if err != nil {
		return nil, err
	}
	out := snapshot{}
	for _, l := range lists {
		its, err := items(d, l, false)
		if err != nil {
			return nil, err
		}
		ls := listSnap{name: l.Name, role: l.Role, items: map[string]itemOut{}}
		for _, it := range its {
			ls.items[it.ID] = it
		}
		out[l.ID] = ls
	}
	return out, nil
}

// change is one thing a sync brought, as sync --watch prints it.
type change struct {
	Time   time.Time `json:"time"`
	List   string    `json:"list"`
	ListID string    `json:"list_id"`
	Item   string    `json:"item"`
	ItemID string    `json:"item_id"`
	What   string    `json:"what"` // new_list, renamed, role (Value: the user's new role), added, changed, deleted
	Field  string    `json:"field"`
	Value  string    `json:"value"`
	By     string    `json:"by"`
}

func (ch change) String() string {
	ch.List, ch.Item, ch.Field, ch.Value, ch.By = disp(ch.List), disp(ch.Item), disp(ch.Field), disp(ch.Value), disp(ch.By)
	by := ""
	if ch.By != "" {
		by = " (by " + ch.By + ")"
	}
	switch ch.What {
	case "new_list":
		return fmt.Sprintf("New list %q", ch.List)
	case "renamed":
		return fmt.Sprintf("%s: the list is now called %q", ch.ListID[:6], ch.List)
	case "added":
		return fmt.Sprintf("%s: + %s%s", ch.List, ch.Item, by)
	case "deleted":
		return fmt.Sprintf("%s: - %s", ch.List, ch.Item)
	case "role":
		if ch.Value == string(tandem.RoleReader) {
			return fmt.Sprintf("%s: you can read it but no longer change it (its owner made you a reader)", ch.List)
		}
		return fmt.Sprintf("%s: you can change it again (its owner made you a %s)", ch.List, ch.Value)
	}
	return fmt.Sprintf("%s: %s: %s %s%s", ch.List, ch.Item, ch.Field, ch.Value, by)
}

// diff lists what changed from before to after.
func diff(before, after snapshot, now time.Time) []change {
	var out []change
	for _, id := range sortedKeys(after) {
		al, bl := after[id], before[id]
		switch {
		case bl.items == nil:
			out = append(out, change{Time: now, List: al.name, ListID: id, What: "new_list"})
		case bl.name != al.name:
			out = append(out, change{Time: now, List: al.name, ListID: id, What: "renamed"})
		}
		if bl.items != nil && bl.role != al.role && bl.role != "" && al.role != "" && al.role != tandem.RoleOwner {
			out = append(out, change{Time: now, List: al.name, ListID: id, What: "role", Value: string(al.role)})
		}
		for _, iid := range sortedKeys(al.items) {
			ai := al.items[iid]
			bi, had := bl.items[iid]
			if !had {
				out = append(out, change{Time: now, List: al.name, ListID: id, Item: ai.Title, ItemID: iid, What: "added", By: firstAuthor(ai.Fields[fieldTitle])})
				continue
			}
			out = append(out, fieldChanges(now, al.name, id, bi, ai)...)
		}
		for _, iid := range sortedKeys(bl.items) {
			if _, ok := al.items[iid]; !ok {
				out = append(out, change{Time: now, List: al.name, ListID: id, Item: bl.items[iid].Title, ItemID: iid, What: "deleted"})
			}
		}
	}
	return out
}

func fieldChanges(now time.Time, list, listID string, b, a itemOut) []change {
	var out []change
	names := map[string]bool{}
	for n := range a.Fields {
		names[n] = true
	}
	for n := range b.Fields {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		fa, fb := a.Fields[n], b.Fields[n]
		if slices.Equal(fa.Values, fb.Values) && slices.Equal(fa.Elements, fb.Elements) {
			continue
		}
		v := strings.Join(fa.Elements, ", ")
		if len(fa.Values) > 0 {
			v = showField(fa)
		}
		out = append(out, change{Time: now, List: list, ListID: listID, Item: a.Title, ItemID: a.ID, What: "changed", Field: n, Value: v, By: firstAuthor(fa)})
	}
	return out
}

func firstAuthor(f fieldOut) string {
	if len(f.Values) == 1 {
		return f.Values[0].Author
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// watchTick is how often sync --watch looks at the device's status and
// at other commands' requests to use the profile.
const watchTick = 200 * time.Millisecond

// watch keeps the device in sync with tandem's Run until ctx ends
// (Ctrl-C), printing what arrives from elsewhere. While another ferry
// command wants the profile, it closes the device and waits.
func (a *app) watch(c *cobra.Command, f syncFlags) error {
	ctx := c.Context()
	w := c.OutOrStdout()
	if !a.json {
		fmt.Fprintln(w, "Watching for changes; Ctrl-C stops.")
	}
	st := &watchState{notices: map[string]string{}}
	for first := true; ; first = false {
		err := a.watchOpen(ctx, w, st)
		if ctx.Err() != nil {
			if !a.json {
				fmt.Fprintln(w, "Stopped.")
			}
			return nil
		}
		switch {
		case err != nil && !first && classify(err).Kind == "locked":
			// A command that waits (share, device add) has the profile: wait for it.
		case err != nil:
			return err
		}
		waitYield(ctx, st.dir)
	}
}

// waitYield waits while another command has asked for the profile.
func waitYield(ctx context.Context, dir string) {
	for yieldRequested(dir) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(watchTick):
		}
	}
}

// watchState is what sync --watch remembers across reopenings.
type watchState struct {
	dir      string
	notices  map[string]string // printed and still true
	online   bool
	lastNote string
	lastSync time.Time
	noticed  time.Time // the sync after which notices were last looked at
}

// watchOpen opens the device and runs it until ctx ends, Run stops, or
// another command asks for the profile (then it returns nil).
func (a *app) watchOpen(ctx context.Context, w io.Writer, st *watchState) error {
	s, err := a.openAs(ctx, true)
	if err != nil {
		return err
	}
	defer s.close()
	st.dir = s.dir
	if s.dev.Hub().IsZero() {
		return failf("no_hub", "this device is not connected to a mail account yet: run ferry connect")
	}
	before, err := takeSnapshot(s.dev)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.dev.Run(runCtx) }()
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				s.saveState(err)
			}
			return err
		case <-s.dev.Changed():
			after, err := takeSnapshot(s.dev)
			if err != nil {
				stop()
				<-done
				return err
			}
			chs := diff(before, after, time.Now().UTC())
			rememberChanges(s.dir, chs)
			a.printChanges(w, chs)
			a.printNotices(w, st.notices, notices(s.dev, s.dir))
			before = after
		case <-tick.C:
			a.watchStatus(w, s, st)
			if status := s.dev.Status(); status.LastSync.After(st.noticed) {
				st.noticed = status.LastSync // requests and leave notices arrive with a sync
				a.printNotices(w, st.notices, notices(s.dev, s.dir))
			}
			if yieldRequested(s.dir) {
				stop()
				<-done
				return nil
			}
		}
	}
}

func (a *app) printChanges(w io.Writer, chs []change) {
	for _, ch := range chs {
		if a.json {
			emit(w, ch)
		} else {
			fmt.Fprintln(w, ch)
		}
	}
}

// watchStatus prints going offline and coming back, and records syncs
// for ferry status.
func (a *app) watchStatus(w io.Writer, s *session, st *watchState) {
	status := s.dev.Status()
	if status.LastSync.After(st.lastSync) {
		st.lastSync = status.LastSync
		s.saveState(nil)
	}
	switch {
	case status.Online && !st.online:
		st.online = true
		a.note(w, st, "online", &Error{Kind: "online", Msg: "Connected: changes from elsewhere appear here as they arrive."})
	case !status.Online && status.Offline && (st.online || st.lastNote == ""): // gone, or never there
		st.online = false
		e := classify(status.Err)
		if status.Err == nil {
			e = &Error{Kind: "offline", Msg: "The sync hub can't be reached; everything keeps working here and syncs when it's back."}
		}
		s.saveState(e)
		a.note(w, st, "offline", e)
	}
}

func (a *app) note(w io.Writer, st *watchState, what string, e *Error) {
	if e.Msg == st.lastNote {
		return
	}
	st.lastNote = e.Msg
	if a.json {
		emit(w, map[string]any{"time": time.Now().UTC(), "what": what, "kind": e.Kind, "message": e.Msg})
		return
	}
	fmt.Fprintln(w, e.Msg)
}
