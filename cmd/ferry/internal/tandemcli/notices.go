package tandemcli

import (
	"fmt"
	"io"
	"time"

	"github.com/ferry-sync/ferry/tandem"
)

// notices are the §13.2 messages the device's state calls for now, by a
// key that stays the same while the condition lasts: sync --watch prints
// each when it first appears.
func notices(d *tandem.Device, dir string) map[string]string {
	out := map[string]string{}
	lists, err := allLists(d)
	if err != nil {
		return out
	}
	for _, l := range lists {
		// A list deleted since allLists has nothing to say: its queries'
		// errors leave its notices out.
		reqs, _ := d.Requests(l.id)
		for _, r := range reqs {
			id := short(requestID(r))
			msg := fmt.Sprintf("%s wants to join %s (ferry approve %s, or ferry decline %s)", disp(r.Name), disp(l.Name), id, id)
			if r.PreviouslyRemoved {
				msg = fmt.Sprintf("%s was removed from %s. Add them again? (ferry approve %s)", disp(r.Name), disp(l.Name), id)
			}
			out["request "+r.ID] = msg
		}
		leaves, _ := d.PendingLeaves(l.id)
		for _, m := range leaves {
			out["left "+l.ID+" "+m.User.String()] = fmt.Sprintf("%s left %s. (ferry remove %s %q confirms it)", disp(m.Name), disp(l.Name), short(l.ID), m.Name)
		}
		if what, ok, _ := d.ChangeInFlight(l.id); ok {
			out["inflight "+l.ID+" "+what] = fmt.Sprintf("Another of your devices started %s and didn't finish: ferry finish %s, or ferry discard %s.", what, short(l.ID), short(l.ID))
		}
		switch {
		case l.Removed:
			out["removed "+l.ID] = fmt.Sprintf("%s is no longer shared with you.", disp(l.Name))
		case l.State == tandem.StateDead:
			out["dead "+l.ID] = fmt.Sprintf("%s can't sync any more. Copy it to a new list? (ferry copy %s)", disp(l.Name), short(l.ID))
		case l.State == tandem.StateDeleted && l.Role != tandem.RoleOwner: // the owner knows: one of their devices did it
			out["deleted "+l.ID] = fmt.Sprintf("%s was deleted by its owner; it stays here, read-only.", disp(l.Name))
		}
	}
	for _, j := range readJoins(dir) {
		m := membership(d, j)
		if m.State == string(tandem.MembershipActive) || m.State == string(tandem.MembershipDeclined) {
			out["join "+j.List+" "+m.State] = m.Message
		}
	}
	return out
}

// printNotices prints the notices in now that were not in seen, and
// records them.
func (a *app) printNotices(w io.Writer, seen, now map[string]string) {
	for _, k := range sortedKeys(now) {
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = now[k]
		if a.json {
			emit(w, map[string]any{"time": time.Now().UTC(), "what": "notice", "message": now[k]})
		} else {
			fmt.Fprintln(w, now[k])
		}
	}
	for k := range seen {
		if _, ok := now[k]; !ok {
			delete(seen, k) // the condition ended: say it again if it comes back
		}
	}
}
