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
		ls := listSnap{name: l.Name, items: map[string]itemOut{}}
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
	Item   string    `json:"item,omitempty"`
	ItemID string    `json:"item_id,omitempty"`
	What   string    `json:"what"` // new_list, renamed, added, changed, deleted
	Field  string    `json:"field,omitempty"`
	Value  string    `json:"value,omitempty"`
	By     string    `json:"by,omitempty"`
}

func (ch change) String() string {
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

// watch syncs every interval until ctx ends (Ctrl-C), printing what each
// sync brought. The device is open only while it syncs, so that other
// ferry commands can use the profile in between.
func (a *app) watch(c *cobra.Command, f syncFlags) error {
	ctx := c.Context()
	w := c.OutOrStdout()
	if !a.json {
		fmt.Fprintf(w, "Syncing every %s; Ctrl-C stops.\n", f.interval)
	}
	var lastErr string
	for {
		err := a.watchRound(ctx, w, f.timeout)
		switch {
		case ctx.Err() != nil:
			if !a.json {
				fmt.Fprintln(w, "Stopped.")
			}
			return nil
		case err != nil && !retryable(err):
			return err
		case err != nil:
			if msg := classify(err).Msg; msg != lastErr {
				a.watchNote(w, "error", classify(err))
				lastErr = msg
			}
		case lastErr != "":
			a.watchNote(w, "ok", &Error{Msg: "Back online: syncing again."})
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			if !a.json {
				fmt.Fprintln(w, "Stopped.")
			}
			return nil
		case <-time.After(f.interval):
		}
	}
}

// retryable reports whether sync --watch goes on after err: the hub may
// come back; a revoked credential or a broken profile needs the person.
func retryable(err error) bool {
	switch classify(err).Kind {
	case "offline", "locked":
		return true
	}
	return false
}

func (a *app) watchNote(w io.Writer, kind string, e *Error) {
	if a.json {
		emit(w, map[string]any{"time": time.Now().UTC(), "what": kind, "kind": e.Kind, "message": e.Msg})
		return
	}
	fmt.Fprintln(w, e.Msg)
}

// watchRound opens the device, syncs once and prints the changes.
func (a *app) watchRound(ctx context.Context, w io.Writer, timeout time.Duration) error {
	s, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	before, err := takeSnapshot(s.dev)
	if err != nil {
		return err
	}
	rep, err := a.syncOnce(ctx, s, timeout)
	if err != nil {
		return err
	}
	if rep.Applied == 0 {
		return nil
	}
	after, err := takeSnapshot(s.dev)
	if err != nil {
		return err
	}
	for _, ch := range diff(before, after, time.Now().UTC()) {
		if a.json {
			emit(w, ch)
		} else {
			fmt.Fprintln(w, ch)
		}
	}
	return nil
}
