package tandemcli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

// takeInviteHub handles an invite for another mail account than the one
// the profile is connected to (docs/decisions/cli-join-other-account.md):
// a profile that would lose nothing (no lists, no joins waiting) is
// switched to the invite's account once the user agrees; any other is
// told to join from a new profile. Nothing changes unless the user agrees.
func (a *app) takeInviteHub(c *cobra.Command, s *session, info tandem.InviteInfo) error {
	cur := s.dev.Hub()
	if info.Hub.IsZero() || cur.IsZero() || cur.Same(info.Hub) {
		return nil
	}
	newProfile := "join it from a new profile: ferry init --profile DIR, then ferry join --profile DIR with the same invite"
	if !a.nothingToLose(s) {
		return failf("different_hub", "this invite is for a list on another mail account (%s) than this profile's (%s), which has lists of its own: %s", info.Hub, cur, newProfile)
	}
	q := fmt.Sprintf("This invite is for a list on another mail account (%s). This profile syncs through %s and has no lists yet. Switch it to the invite's account and join?", info.Hub, cur)
	if !a.confirm(c, q) {
		return failf("declined", "still connected to %s; answer y to switch this profile to the invite's account, or %s", cur, newProfile)
	}
	if err := s.dev.SetHub(c.Context(), info.Hub); err != nil {
		return err
	}
	if !a.json {
		fmt.Fprintf(c.ErrOrStderr(), "This profile now syncs through %s.\n", info.Hub)
	}
	return nil
}

// nothingToLose reports whether the profile has nothing tied to its
// current account: no lists, no joins waiting, no unsent changes.
func (a *app) nothingToLose(s *session) bool {
	return len(s.dev.Collections()) == 0 && len(readJoins(s.dir)) == 0 && s.dev.Status().Pending == 0
}
